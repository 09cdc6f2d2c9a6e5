package flushstats

import (
	"math"
	"testing"
)

// The one wire form: what ranks publish under jobenv.KeyFlush and the
// launcher hands back in CKPT_FLUSH_PRIOR, byte for byte as it has always
// been (`ckpt status --json` shows it as is).
func TestStatsWireForm(t *testing.T) {
	f := Stats{Mode: ModeNonBlocking, K: 3, Due: 4, Started: 3, Skipped: 1, Waited: 0.5, Seconds: 0.25,
		Durable: 2, Failed: 1, Latency: 1.5, LastFailure: "disk full", KError: "x", Level1: 4, Level1Seconds: 0.1,
		Spans: 3, SpanSeconds: 6, BusySteps: 5, BusySeconds: 2.5, IdleSteps: 7, IdleSeconds: 3.5}
	const want = `{"mode":"nonblocking","k":3,"due":4,"started":3,"skipped":1,"waited_seconds":0.5,"seconds":0.25,` +
		`"durable":2,"failed":1,"latency_seconds":1.5,"last_failure":"disk full","k_error":"x","level1":4,` +
		`"level1_seconds":0.1,"spans":3,"span_seconds":6,"busy_steps":5,"busy_seconds":2.5,"idle_steps":7,"idle_seconds":3.5}`
	b, err := f.Encode()
	if err != nil || string(b) != want {
		t.Fatalf("encoded %s (%v), want %s", b, err, want)
	}
	if got, err := Decode(b); err != nil || got != f {
		t.Errorf("decoded %+v (%v)", got, err)
	}
	if b, _ := (Stats{}).Encode(); string(b) != `{"mode":"","k":0,"due":0,"started":0,"skipped":0,"waited_seconds":0,"seconds":0,"durable":0,"failed":0,"latency_seconds":0,"level1":0,"level1_seconds":0,"spans":0,"span_seconds":0,"busy_steps":0,"busy_seconds":0,"idle_steps":0,"idle_seconds":0}` {
		t.Errorf("zero stats encode as %s", b)
	}
	if _, err := (Stats{Waited: math.NaN()}).Encode(); err == nil {
		t.Error("a NaN time encoded")
	}
	if _, err := Decode([]byte("[")); err == nil {
		t.Error("decoded garbage")
	}
}

// Derived quantities are NaN until measured.
func TestStatsDerived(t *testing.T) {
	var z Stats
	for name, v := range map[string]float64{"spacing": z.Spacing(), "alpha": z.Alpha(), "c1": z.Level1Cost(),
		"mean flush": z.MeanSeconds(), "latency": z.MeanLatency()} {
		if !math.IsNaN(v) {
			t.Errorf("%s of nothing measured = %v", name, v)
		}
	}
	f := Stats{Mode: ModeBlocking, Started: 2, Seconds: 3, Durable: 4, Latency: 2}
	if f.MeanSeconds() != 1.5 || f.MeanLatency() != 0.5 {
		t.Errorf("means %v, %v", f.MeanSeconds(), f.MeanLatency())
	}
	if (Stats{Mode: ModeNonBlocking, Started: 2, Seconds: 3}).MeanSeconds() == 1.5 {
		t.Error("a non-blocking flush's mean blocking time")
	}
	sum := Stats{Mode: ModeBlocking, K: 2, Due: 1, LastFailure: "x"}.Add(Stats{Due: 2, KError: "e"})
	if sum != (Stats{Mode: ModeBlocking, K: 2, Due: 3, LastFailure: "x", KError: "e"}) {
		t.Errorf("sum %+v", sum)
	}
}
