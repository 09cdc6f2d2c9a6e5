package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt/ckpt"
	"github.com/ckpt/ckpt/internal/launch"
)

var updateFlushGolden = flag.Bool("update-flush-golden", false, "rewrite testdata/flush-report.golden")

// The "flush" object of ckpt run's and ckpt demo's JSON stays byte for
// byte what scripts read: testdata/flush-report.golden was written by the
// hand-built object the typed report replaced.
func TestFlushReportGolden(t *testing.T) {
	runs := []runResult{
		{}, // no shared tier: mode none, the means of nothing null
		{Outcome: launch.Outcome{Flush: ckpt.FlushStats{Mode: "blocking", K: 3, Due: 4, Started: 4, Seconds: 2.5, Level1: 12, Level1Seconds: 1.2,
			Spans: 11, SpanSeconds: 30, BusySteps: 0, IdleSteps: 100, IdleSeconds: 10}}},
		{Outcome: launch.Outcome{Flush: ckpt.FlushStats{Mode: "nonblocking", K: 2, Due: 6, Started: 5, Skipped: 1, Waited: 0.125, Durable: 4, Failed: 1,
			Latency: 7.5, LastFailure: `pull of rank 3: "node1" <lost> & gone — é`, KError: "no cost measured yet",
			Level1: 12, Level1Seconds: 1.2, Spans: 11, SpanSeconds: 30, BusySteps: 40, BusySeconds: 4.4, IdleSteps: 60, IdleSeconds: 6},
			StagingRestarts: 2}},
		{Outcome: launch.Outcome{Flush: ckpt.FlushStats{Mode: "nonblocking", K: 1, Due: 1, Started: 1, Durable: 1, Latency: 1e-7,
			BusySteps: 3, BusySeconds: 1e21, IdleSteps: 3, IdleSeconds: 3}}},
	}
	var b bytes.Buffer
	for _, r := range runs {
		if err := writeJSON(&b, flushJSON(r)); err != nil {
			t.Fatal(err)
		}
	}
	golden := filepath.Join("testdata", "flush-report.golden")
	if *updateFlushGolden {
		if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b.Bytes(), want) {
		t.Errorf("the flush report changed:\n%s\nwant (%s):\n%s", b.Bytes(), golden, want)
	}
}
