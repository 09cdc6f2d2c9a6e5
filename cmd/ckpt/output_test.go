package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ckpt/ckpt"
	"github.com/ckpt/ckpt/internal/launch"
)

// TestOrdinal: English ordinals, teens included.
func TestOrdinal(t *testing.T) {
	for n, want := range map[int]string{1: "1st", 2: "2nd", 3: "3rd", 4: "4th", 10: "10th", 11: "11th", 12: "12th", 13: "13th",
		21: "21st", 22: "22nd", 23: "23rd", 101: "101st", 111: "111th", 112: "112th", 113: "113th", 1002: "1002nd"} {
		if got := ordinal(n); got != want {
			t.Errorf("ordinal(%d) = %q, want %q", n, got, want)
		}
	}
	for k, want := range map[int]string{1: "every checkpoint", 2: "every 2nd checkpoint", 3: "every 3rd checkpoint", 11: "every 11th checkpoint"} {
		if got := everyNth(k); got != want {
			t.Errorf("everyNth(%d) = %q, want %q", k, got, want)
		}
	}
}

// TestPrintRunOrdinal: ckpt run's summary says "every 2nd checkpoint",
// never "every 2-th".
func TestPrintRunOrdinal(t *testing.T) {
	for _, mode := range []string{"blocking", "nonblocking"} {
		r := runResult{Outcome: launch.Outcome{Report: launch.Report{Attempts: []launch.Attempt{{}}, Result: "ok"},
			Restarts: map[string]int{}, Flush: ckpt.FlushStats{Mode: mode, K: 2, Due: 3, Started: 3, Durable: 3}}}
		var b bytes.Buffer
		if err := printRun(&b, r, predict(0, 0, 0, r), false); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), "every 2nd checkpoint") || strings.Contains(b.String(), "-th") {
			t.Errorf("%s flushes every 2nd checkpoint, summary:\n%s", mode, b.String())
		}
	}
}
