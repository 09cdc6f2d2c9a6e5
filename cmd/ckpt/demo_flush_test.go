package main

import (
	"bytes"
	"math"
	"testing"

	"github.com/ckpt/ckpt/internal/demo"
	"github.com/ckpt/ckpt/internal/launch"
)

// A flushing run's report sets the failures it met beside those expected,
// and the Markov model at the MTTI it met beside the one at the injector's.
func TestFlushRunReportApplied(t *testing.T) {
	r := flushRun{mode: "blocking", secs: 12, eff: 0.6,
		res:     runResult{Outcome: launch.Outcome{Report: launch.Report{Injected: 6}, Restarts: map[string]int{}}},
		Markov:  demo.Markov{Efficiency: 0.5},
		applied: demo.AppliedFailures(12, 2.5, 6), appliedEff: 0.55, recovery: 0.4}
	var b bytes.Buffer
	if err := writeJSON(&b, flushRunReport(r, "")); err != nil {
		t.Fatal(err)
	}
	obj := decodeOne(t, b.String())
	for k, want := range map[string]float64{"failures_injected": 6, "failures_expected": 4.8, "mtti_applied_seconds": 2,
		"markov_efficiency": 0.5, "markov_error": 0.2, "markov_efficiency_applied": 0.55, "markov_error_applied": 0.6/0.55 - 1,
		"recovery_seconds": 0.4} {
		if got := getNum(t, obj, k); math.Abs(got-want) > 1e-12 {
			t.Errorf("%s = %v, want %v", k, got, want)
		}
	}
	// Without a failure the applied MTTI is infinite: null.
	r.applied = demo.AppliedFailures(12, 2.5, 0)
	b.Reset()
	if err := writeJSON(&b, flushRunReport(r, "")); err != nil {
		t.Fatal(err)
	}
	if obj := decodeOne(t, b.String()); obj["mtti_applied_seconds"] != nil {
		t.Errorf("no failure: mtti_applied_seconds = %v, want null", obj["mtti_applied_seconds"])
	}
}
