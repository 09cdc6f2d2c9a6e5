package demo

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/ckpt/ckpt/internal/flush"
	"github.com/ckpt/ckpt/internal/launch"
	"github.com/ckpt/ckpt/model"
)

func TestJobOf(t *testing.T) {
	job, ok := JobOf(1500, InRun{Start: 0.4, StepSeconds: 0.0048, Work: 7.6})
	if !ok || math.Abs(job.Work-7.2) > 1e-12 || job.Lead != 0.4 {
		t.Errorf("JobOf = %+v, %v; want 7.2 s of computation after a lead of 0.4 s", job, ok)
	}
	for _, w := range []InRun{{Start: math.NaN(), StepSeconds: 0.005}, {Start: 0.4, StepSeconds: math.NaN()}, {Start: 0.4}, {Start: math.Inf(1), StepSeconds: 0.005}} {
		if _, ok := JobOf(1500, w); ok {
			t.Errorf("JobOf(%+v) ok without a start and a step time", w)
		}
	}
	if _, ok := JobOf(0, InRun{Start: 0.4, StepSeconds: 0.005}); ok {
		t.Error("JobOf ok without steps")
	}
}

// A flushing run without a failure: the finite model is the job's work
// plus the checkpoints and flushes it takes, where the steady-state model
// charges work/(K t) whole periods. This is the end effect the blocking
// runs showed (docs/PERFORMANCE.md).
func TestFiniteMarkovNoFailure(t *testing.T) {
	s := Settings{Interval: 1, Every: 2}
	f := flush.Stats{Mode: "blocking", Started: 3, Seconds: 1.14, Level1: 7, Level1Seconds: 0.7}
	job := model.Job{Work: 7.2, Lead: 0.3}
	ap := CompareMarkovApplied(false, s, AppliedFailures(10, 6, 0), f, nil, attempts())
	lv := CompareMarkovLevels(false, s, AppliedLevels(10, 0, launch.Accounting{BySource: map[string]int{}}), f, nil, attempts())
	got := FiniteMarkov(s, ap, lv, job)
	// c1 = 0.1 s, a flush 0.38 s: 7 checkpoints, 3 flushed.
	want := 7.5 / (7.5 + 7*0.1 + 3*0.38)
	if math.Abs(got.Efficiency-want) > 1e-12 || math.Abs(got.Multilevel-want) > 1e-12 || got.Checkpoints != 7 || got.Flushes != 3 {
		t.Errorf("blocking, no failure: %+v, want efficiency %g, 7 checkpoints, 3 flushes", got, want)
	}
	if steady := 2 / (2 + 0.1 + 0.48); !(got.Efficiency > steady) {
		t.Errorf("finite %g not above the steady state's %g", got.Efficiency, steady)
	}
	// Nothing measured: NaN.
	none := CompareMarkovApplied(false, s, AppliedFailures(10, 6, 0), flush.Stats{}, nil, attempts())
	if got := FiniteMarkov(s, none, none, job); !math.IsNaN(got.Efficiency) || !math.IsNaN(got.Multilevel) || got.Checkpoints != 7 || got.Flushes != 3 {
		t.Errorf("nothing measured: %+v, want NaN models and the job's 7 checkpoints, 3 flushes", got)
	}
}

// With failures, the finite model of a long job tends to the steady-state
// model the demo already reports, at the same inputs: FiniteJob evaluates
// the same model.
func TestFiniteMarkovLongJobIsSteadyState(t *testing.T) {
	s := Settings{Interval: 1, Every: 3}
	f := flush.Stats{Mode: "blocking", Started: 2, Seconds: 0.6, Level1: 4, Level1Seconds: 0.2,
		BusySteps: 10, BusySeconds: 1.1, IdleSteps: 10, IdleSeconds: 1}
	for _, nonblocking := range []bool{false, true} {
		var staged []launch.StageEvent
		if nonblocking {
			f.Mode, staged = "nonblocking", []launch.StageEvent{{State: "durable", Seconds: 1}}
		}
		ap := CompareMarkovApplied(nonblocking, s, AppliedFailures(20, 6, 4), f, staged, attempts())
		if math.IsNaN(ap.Efficiency) {
			t.Fatalf("nonblocking %v: %s", nonblocking, ap.Why)
		}
		long := ap.FiniteJob(s, model.Job{Work: 3e5})
		if math.Abs(long.Efficiency/ap.Efficiency-1) > 1e-4 {
			t.Errorf("nonblocking %v: finite %g over 300 000 s, steady state %g", nonblocking, long.Efficiency, ap.Efficiency)
		}
		short := ap.FiniteJob(s, model.Job{Work: 7.2})
		if !(short.Efficiency > 0) || short.Checkpoints != 7 || short.Flushes != 2 {
			t.Errorf("nonblocking %v: 7.2 s: %+v", nonblocking, short)
		}
	}
}

// The plain demo: Daly's model per segment, and the multi-level one with
// the job's start its only level-2 checkpoint. With no level-2 event the
// two are the same model (a failure during a level-1 restart retries it).
func TestFinitePlain(t *testing.T) {
	const tau, cost, r = 0.75, 0.14, 0.5
	job := model.Job{Work: 7.7, Lead: 0.3}
	// No failure: the work and its 10 checkpoints.
	none := FinitePlain(tau, cost, r, math.Inf(1), Levels{Level1MTTI: math.Inf(1), Level2MTTI: math.Inf(1)}, job)
	want := 8.0 / (8 + 10*cost)
	if math.Abs(none.Efficiency-want) > 1e-12 || math.Abs(none.Multilevel-want) > 1e-12 || none.Checkpoints != 10 {
		t.Errorf("no failure: %+v, want %g and 10 checkpoints", none, want)
	}
	// Failures of level 1 only.
	one := FinitePlain(tau, cost, r, 2.5, Levels{Level1MTTI: 2.5, Level2MTTI: math.Inf(1)}, job)
	var seconds float64
	for j := 0; j < 11; j++ {
		T := tau + cost
		if j == 0 {
			T += job.Lead
		}
		if j == 10 {
			T = 7.7 - 10*tau
		}
		seconds += math.Exp(r/2.5) * math.Expm1(T/2.5) * 2.5
	}
	if math.Abs(one.Efficiency-8/seconds) > 1e-12 || math.Abs(one.Multilevel/one.Efficiency-1) > 1e-12 {
		t.Errorf("level 1 only: %+v, want both %g", one, 8/seconds)
	}
	// A level-2 event costs the work since the start: lower.
	two := FinitePlain(tau, cost, r, 2.5, Levels{Level2: 1, Level1MTTI: 10.0 / 3, Level2MTTI: 10}, job)
	if !(two.Multilevel < one.Multilevel) {
		t.Errorf("with level-2 failures the multi-level model %g should be below %g", two.Multilevel, one.Multilevel)
	}
	if bad := FinitePlain(0, cost, r, 2.5, Levels{}, job); !math.IsNaN(bad.Efficiency) {
		t.Errorf("no interval: %+v", bad)
	}
}

// WithFinite adds the finite-job keys beside the in-run ones: markov_…
// for a flushing run, model_… for the plain demo, and leaves the others
// as they were.
func TestWithFiniteKeys(t *testing.T) {
	w := InRun{Start: 0.3, StepSeconds: 0.005, Work: 7.8}
	f := Finite{Efficiency: 0.75, Multilevel: 0.7, Checkpoints: 7, Flushes: 3}
	for _, flushing := range []bool{true, false} {
		base := NewInRunReport(w, 10, 0.72, flushing, 0.7)
		b, err := json.Marshal(base.WithFinite(f))
		if err != nil {
			t.Fatal(err)
		}
		var obj map[string]any
		if err := json.Unmarshal(b, &obj); err != nil {
			t.Fatal(err)
		}
		prefix, other := "model", "markov"
		if flushing {
			prefix, other = "markov", "model"
		}
		for k, want := range map[string]float64{prefix + "_finite_efficiency": 0.75, prefix + "_finite_error_in_run": 0.78/0.75 - 1,
			"multilevel_finite_efficiency": 0.7, "multilevel_finite_error_in_run": 0.78/0.7 - 1, "finite_checkpoints": 7,
			"efficiency_in_run": 0.78} {
			if got, ok := obj[k].(float64); !ok || math.Abs(got-want) > 1e-12 {
				t.Errorf("flushing %v: %s = %v, want %g", flushing, k, obj[k], want)
			}
		}
		for _, k := range []string{other + "_finite_efficiency", other + "_finite_error_in_run"} {
			if _, ok := obj[k]; ok {
				t.Errorf("flushing %v: %s present", flushing, k)
			}
		}
		if got, ok := obj["finite_flushes"]; ok != flushing || (flushing && got.(float64) != 3) {
			t.Errorf("flushing %v: finite_flushes = %v", flushing, got)
		}
	}
	// A model that could not be evaluated is null.
	b, _ := json.Marshal(NewInRunReport(w, 10, 0.72, true, 0.7).WithFinite(NoFinite()))
	var obj map[string]any
	if err := json.Unmarshal(b, &obj); err != nil || obj["markov_finite_efficiency"] != nil {
		t.Errorf("no model: %s", b)
	}
}
