package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/ckpt/ckpt/internal/demo"
	"github.com/ckpt/ckpt/internal/flush"
	"github.com/ckpt/ckpt/internal/jobenv"
	"github.com/ckpt/ckpt/internal/launch"
	"github.com/ckpt/ckpt/internal/policy"
)

// fakeDemo runs the demo's jobs as fakes: each takes the seconds given by
// its name, and all compute the same result unless told otherwise.
type fakeDemo struct {
	secs    map[string]float64
	results map[string]string // a job's result, if not "same"
	fail    string            // the job that fails
	ran     []string
	specs   map[string]runSpec
}

func (f *fakeDemo) jobs() demoJobs {
	f.specs = map[string]runSpec{}
	return demoJobs{
		spec: func(name, interval string, inject bool) (runSpec, func() string, error) {
			s, err := demoSpec("ckpt-test", []string{"example", "himeno", "--size", "s"}, interval, 2.5, 1, inject)
			s.cacheRoot = name
			return s, func() string { return "logs of " + name + "\n" }, err
		},
		run: func(_ context.Context, s runSpec) (runResult, float64, error) {
			name := s.cacheRoot
			if s.stagingServers > 0 {
				name = "nonblocking"
			} else if s.shared != "" {
				name = "blocking"
			}
			f.ran = append(f.ran, name)
			f.specs[name] = s
			if name == f.fail {
				return runResult{}, 1, errors.New("killed")
			}
			result := "same"
			if r, ok := f.results[name]; ok {
				result = r
			}
			secs := f.secs[name]
			out := launch.Outcome{Report: launch.Report{Result: result, Elapsed: time.Duration(secs * float64(time.Second))},
				Restarts: map[string]int{}, Policy: policy.State{Cost: 50 * time.Millisecond}}
			if s.inject != nil {
				out.Injected = 4
				out.Attempts = []launch.Attempt{{End: 3 * time.Second, RestoredAt: time.Second / 2, Restored: "none", Failure: "x"},
					{Start: 3 * time.Second, End: time.Duration(secs * float64(time.Second)), RestoredAt: 3*time.Second + time.Second/2}}
				out.Account = launch.Accounting{Failures: 1, BySource: map[string]int{"none": 1}, ScratchUnrecoverable: 1}
				// Steps of 4 ms timed in the run (1000 of them).
				out.Flush = jobenv.FlushStats{IdleSteps: 1000, IdleSeconds: 4}
			}
			return runResult{Outcome: out}, secs, nil
		},
	}
}

func demoCommand() (*cobra.Command, *bytes.Buffer, *bytes.Buffer) {
	var out, progress bytes.Buffer
	c := &cobra.Command{}
	c.SetOut(&out)
	c.SetErr(&progress)
	c.SetContext(context.Background())
	return c, &out, &progress
}

// The reference is the failure-free job, run before and after the runs
// with failures in both of the demo's modes, and the work the efficiency
// divides is their mean: before, --flush took the reference before its
// runs and the plain demo after its run, so a machine slower at one end
// (10 s here, 6 s at the other) moved every efficiency.
// demoCompare runs the demo's comparison of blocking and non-blocking
// flushes on f's jobs (1500 steps, a checkpoint a second, a flush every
// 2), and returns its JSON.
func demoCompare(t *testing.T, f *fakeDemo) map[string]any {
	t.Helper()
	c, out, progress := demoCommand()
	if err := demoFlush(c, []string{"blocking", "nonblocking"}, demo.Settings{Interval: 1, Every: 2, Bandwidth: 4e6, Busy: "skip", Steps: 1500},
		2.5, true, f.jobs()); err != nil {
		t.Fatalf("%v\n%s", err, progress)
	}
	return decodeOne(t, out.String())
}

func TestDemoReferenceAtBothEnds(t *testing.T) {
	secs := map[string]float64{"reference-before": 10, "reference-after": 6, "run": 12, "blocking": 12, "nonblocking": 9}
	checkRefs := func(t *testing.T, f *fakeDemo, runs ...string) {
		t.Helper()
		want := append(append([]string{"reference-before"}, runs...), "reference-after")
		if !slices.Equal(f.ran, want) {
			t.Fatalf("ran %v, want %v", f.ran, want)
		}
		// The reference pays no checkpoint, flush, staging server or
		// failure, and is the same job.
		for _, name := range []string{"reference-before", "reference-after"} {
			r := f.specs[name]
			if r.interval.Kind != policy.None || r.inject != nil || r.shared != "" || r.stagingServers != 0 || r.flushEvery.K != 0 {
				t.Errorf("%s: interval %v, inject %v, shared %q, %d staging servers, flush every %d: want none of them",
					name, r.interval, r.inject, r.shared, r.stagingServers, r.flushEvery.K)
			}
			run := f.specs[runs[0]]
			if r.ranks != run.ranks || r.nodes != run.nodes || r.redundancy != run.redundancy || !slices.Equal(r.args, run.args) {
				t.Errorf("%s is another job than %s: %+v", name, runs[0], r)
			}
		}
	}

	t.Run("plain", func(t *testing.T) {
		f := &fakeDemo{secs: secs}
		c, out, progress := demoCommand()
		if err := demoPlain(c, "s", 1500, 2.5, 1, true, f.jobs()); err != nil {
			t.Fatalf("%v\n%s", err, progress)
		}
		checkRefs(t, f, "run")
		obj := decodeOne(t, out.String())
		for k, want := range map[string]float64{"reference_seconds": 8, "reference_seconds_before": 10,
			"reference_seconds_after": 6, "efficiency": 8.0 / 12, "run_seconds": 12, "level2_failures": 1,
			"level1_mtti_applied_seconds": 4, "level2_mtti_applied_seconds": 12} {
			if got := getNum(t, obj, k); math.Abs(got-want) > 1e-12 {
				t.Errorf("%s = %v, want %v", k, got, want)
			}
		}
		// The models divide the same work.
		ml, me := getNum(t, obj, "multilevel_efficiency_applied"), getNum(t, obj, "multilevel_error_applied")
		if math.Abs(me-(8.0/12/ml-1)) > 1e-12 {
			t.Errorf("multilevel_error_applied %v, want %v for the model's %v", me, 8.0/12/ml-1, ml)
		}
		if e := getNum(t, obj, "model_error"); math.Abs(e-(8.0/12/getNum(t, obj, "model_efficiency")-1)) > 1e-12 {
			t.Errorf("model_error %v against the work of 8 s", e)
		}
		// What one run errs by chance at the run's parameters.
		want := demo.ErrorByChance(8, getNum(t, obj, "interval_seconds"), getNum(t, obj, "checkpoint_seconds"),
			getNum(t, obj, "recovery_seconds"), 2.5)
		if got := getNum(t, obj, "model_error_applied_chance"); got != want.MeanAbs || !(got > 0) {
			t.Errorf("model_error_applied_chance %v, want %v", got, want.MeanAbs)
		}
		if got := getNum(t, obj, "model_error_applied_chance_bias"); got != want.Mean {
			t.Errorf("model_error_applied_chance_bias %v, want %v", got, want.Mean)
		}
		// Every run, against the model at the predicted level-2 rate.
		wantP := demo.ErrorByChancePredicted(8, getNum(t, obj, "interval_seconds"), getNum(t, obj, "checkpoint_seconds"),
			getNum(t, obj, "recovery_seconds"), 2.5, 4, 4)
		if got := getNum(t, obj, "multilevel_error_predicted_chance"); got != wantP.MeanAbs || !(got > want.MeanAbs) {
			t.Errorf("multilevel_error_predicted_chance %v, want %v, more than the single level's %v", got, wantP.MeanAbs, want.MeanAbs)
		}
		if got := getNum(t, obj, "multilevel_error_predicted_chance_bias"); got != wantP.Mean {
			t.Errorf("multilevel_error_predicted_chance_bias %v, want %v", got, wantP.Mean)
		}
		// The run met a level-2 event: what such a run shows by chance.
		levels := demo.AppliedLevels(12, 4, launch.Accounting{ScratchUnrecoverable: 1})
		wantL := demo.ErrorByChanceLevels(8, getNum(t, obj, "interval_seconds"), getNum(t, obj, "checkpoint_seconds"),
			getNum(t, obj, "recovery_seconds"), levels)
		if got := getNum(t, obj, "multilevel_error_applied_chance"); got != wantL.MeanAbs || !(got > 0) {
			t.Errorf("multilevel_error_applied_chance %v, want %v", got, wantL.MeanAbs)
		}
		// The work measured in the run: 0.5 s to start, then 1500 steps
		// (the demo's iterations) of 4 ms.
		checkInRun(t, obj, 0.5+1500*0.004, 12, "model_error_applied_in_run", getNum(t, obj, "model_efficiency_applied"))
	})

	t.Run("compare", func(t *testing.T) {
		f := &fakeDemo{secs: secs}
		obj := demoCompare(t, f)
		checkRefs(t, f, "blocking", "nonblocking")
		for k, want := range map[string]float64{"reference_seconds": 8, "reference_seconds_before": 10, "reference_seconds_after": 6,
			"nonblocking_gain": 8.0/9 - 8.0/12} {
			if got := getNum(t, obj, k); math.Abs(got-want) > 1e-12 {
				t.Errorf("%s = %v, want %v", k, got, want)
			}
		}
		for mode, s := range map[string]float64{"blocking": 12, "nonblocking": 9} {
			run := getObj(t, obj, mode)
			if got := getNum(t, run, "efficiency"); math.Abs(got-8/s) > 1e-12 {
				t.Errorf("%s: efficiency %v, want %v", mode, got, 8/s)
			}
			if got := getNum(t, run, "level2_failures"); got != 1 {
				t.Errorf("%s: level2_failures %v, want 1", mode, got)
			}
			if _, ok := run["multilevel_efficiency_applied"]; !ok {
				t.Errorf("%s: no multilevel_efficiency_applied", mode)
			}
			work := 0.5 + 1500*0.004
			for k, want := range map[string]float64{"step_seconds": 0.004, "work_in_run_seconds": work, "efficiency_in_run": work / s} {
				if got := getNum(t, run, k); math.Abs(got-want) > 1e-9 {
					t.Errorf("%s: %s = %v, want %v", mode, k, got, want)
				}
			}
			for _, k := range []string{"markov_error_applied_chance", "markov_error_applied_chance_bias"} {
				if _, ok := run[k]; !ok {
					t.Errorf("%s: no %s", mode, k)
				}
			}
			if _, ok := run["markov_error_applied_in_run"]; !ok {
				t.Errorf("%s: no markov_error_applied_in_run", mode)
			}
			if _, ok := run["model_error_applied_in_run"]; ok {
				t.Errorf("%s: model_error_applied_in_run is the plain demo's", mode)
			}
			// The finite job: 6 s of computation at t = 1 s, K = 2.
			for k, want := range map[string]float64{"finite_checkpoints": 5, "finite_flushes": 2} {
				if got := getNum(t, run, k); got != want {
					t.Errorf("%s: %s = %v, want %v", mode, k, got, want)
				}
			}
			for _, k := range []string{"markov_finite_efficiency", "markov_finite_error_in_run", "multilevel_finite_efficiency", "multilevel_finite_error_in_run"} {
				if _, ok := run[k]; !ok {
					t.Errorf("%s: no %s", mode, k)
				}
			}
		}
	})

	t.Run("text", func(t *testing.T) {
		f := &fakeDemo{secs: secs}
		c, out, progress := demoCommand()
		if err := demoPlain(c, "s", 1500, 2.5, 1, false, f.jobs()); err != nil {
			t.Fatalf("%v\n%s", err, progress)
		}
		for _, want := range []string{"12.00 s with failures, 8.00 s without", "before the runs with failures, 10.00 s", "after them, 6.00 s",
			"multi-level Markov model at the failures met by level", "1 level-2 failures"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("no %q in\n%s", want, out)
			}
		}
	})
}

// --references 1 runs the reference before the runs with failures only,
// and the work is that reference (a campaign whose figures of record are
// the in-run ones saves a run a seed); every run's result is still
// checked against it, bit for bit. Any other count is refused.
func TestDemoOneReference(t *testing.T) {
	secs := map[string]float64{"reference-before": 10, "reference-after": 6, "run": 12, "blocking": 12, "nonblocking": 9}
	once := func(f *fakeDemo) demoJobs {
		j := f.jobs()
		j.once = true
		return j
	}
	t.Run("plain", func(t *testing.T) {
		f := &fakeDemo{secs: secs}
		c, out, progress := demoCommand()
		if err := demoPlain(c, "s", 1500, 2.5, 1, true, once(f)); err != nil {
			t.Fatalf("%v\n%s", err, progress)
		}
		if want := []string{"reference-before", "run"}; !slices.Equal(f.ran, want) {
			t.Fatalf("ran %v, want %v", f.ran, want)
		}
		obj := decodeOne(t, out.String())
		for k, want := range map[string]float64{"reference_seconds": 10, "reference_seconds_before": 10, "efficiency": 10.0 / 12} {
			if got := getNum(t, obj, k); math.Abs(got-want) > 1e-12 {
				t.Errorf("%s = %v, want %v", k, got, want)
			}
		}
		if v, ok := obj["reference_seconds_after"]; !ok || v != nil {
			t.Errorf("reference_seconds_after = %v (present %v), want null", v, ok)
		}
		if obj["result_matches_reference"] != true {
			t.Errorf("result_matches_reference = %v", obj["result_matches_reference"])
		}
		// The in-run figures do not depend on the reference.
		checkInRun(t, obj, 0.5+1500*0.004, 12, "model_error_applied_in_run", getNum(t, obj, "model_efficiency_applied"))
	})
	t.Run("compare", func(t *testing.T) {
		f := &fakeDemo{secs: secs}
		c, out, progress := demoCommand()
		if err := demoFlush(c, []string{"blocking", "nonblocking"}, demo.Settings{Interval: 1, Every: 2, Bandwidth: 4e6, Busy: "skip", Steps: 1500},
			2.5, true, once(f)); err != nil {
			t.Fatalf("%v\n%s", err, progress)
		}
		if want := []string{"reference-before", "blocking", "nonblocking"}; !slices.Equal(f.ran, want) {
			t.Fatalf("ran %v, want %v", f.ran, want)
		}
		obj := decodeOne(t, out.String())
		if got := getNum(t, obj, "reference_seconds"); got != 10 {
			t.Errorf("reference_seconds = %v, want 10", got)
		}
		if got := getNum(t, getObj(t, obj, "nonblocking"), "efficiency"); math.Abs(got-10.0/9) > 1e-12 {
			t.Errorf("nonblocking efficiency %v, want %v", got, 10.0/9)
		}
	})
	t.Run("text", func(t *testing.T) {
		f := &fakeDemo{secs: secs}
		c, out, progress := demoCommand()
		if err := demoPlain(c, "s", 1500, 2.5, 1, false, once(f)); err != nil {
			t.Fatalf("%v\n%s", err, progress)
		}
		for _, want := range []string{"12.00 s with failures, 10.00 s without", "none after them: --references 1"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("no %q in\n%s", want, out)
			}
		}
	})
	t.Run("results still checked", func(t *testing.T) {
		f := &fakeDemo{secs: secs, results: map[string]string{"run": "other"}}
		c, _, _ := demoCommand()
		if err := demoPlain(c, "s", 1500, 2.5, 1, true, once(f)); !errors.Is(err, errNotRecoverable) {
			t.Errorf("a run that differs from the one reference: %v, want errNotRecoverable", err)
		}
		f = &fakeDemo{secs: secs, results: map[string]string{"nonblocking": "other"}}
		c, _, _ = demoCommand()
		if err := demoFlush(c, []string{"blocking", "nonblocking"}, demo.Settings{Interval: 1, Every: 2}, 2.5, true, once(f)); !errors.Is(err, errFlushVariant) {
			t.Errorf("--flush, a run that differs from the one reference: %v, want errFlushVariant", err)
		}
	})
	t.Run("flag", func(t *testing.T) {
		checkBadInput(t, []string{"--references 3"}, "demo", "--references", "3")
		checkBadInput(t, []string{"--references 0"}, "demo", "--references", "0")
		checkBadInput(t, []string{"--references", "--transparent"}, "demo", "--transparent", "--references", "1")
	})
}

// The reference after the runs must compute what the one before did, and
// a reference that fails ends the demo with its logs.
func TestDemoReferenceFailures(t *testing.T) {
	secs := map[string]float64{"reference-before": 7, "reference-after": 7, "run": 9, "blocking": 9, "nonblocking": 8}
	f := &fakeDemo{secs: secs, results: map[string]string{"reference-after": "other"}}
	c, _, _ := demoCommand()
	if err := demoPlain(c, "s", 1500, 2.5, 1, true, f.jobs()); !errors.Is(err, errNotRecoverable) {
		t.Errorf("references that differ: %v, want errNotRecoverable", err)
	}
	f = &fakeDemo{secs: secs, results: map[string]string{"reference-after": "other"}}
	c, _, _ = demoCommand()
	if err := demoFlush(c, []string{"blocking"}, demo.Settings{Interval: 1, Every: 2}, 2.5, true, f.jobs()); !errors.Is(err, errFlushVariant) {
		t.Errorf("--flush, references that differ: %v, want errFlushVariant", err)
	}
	for _, mode := range []string{"plain", "compare"} {
		f = &fakeDemo{secs: secs, fail: "reference-after"}
		c, _, progress := demoCommand()
		var err error
		if mode == "plain" {
			err = demoPlain(c, "s", 1500, 2.5, 1, true, f.jobs())
		} else {
			err = demoFlush(c, []string{"blocking", "nonblocking"}, demo.Settings{Interval: 1, Every: 2}, 2.5, true, f.jobs())
		}
		if err == nil || !strings.Contains(err.Error(), "reference run after") || !strings.Contains(progress.String(), "logs of reference-after") {
			t.Errorf("%s, the second reference failed: %v\n%s", mode, err, progress)
		}
	}
}

// checkInRun checks a run's work measured in the run itself, the
// efficiency against it (a run of run seconds) and the errors of the
// model named key (efficiency model) and of the multi-level model.
func checkInRun(t *testing.T, obj map[string]any, work, run float64, key string, model float64) {
	t.Helper()
	eff := work / run
	for k, want := range map[string]float64{"step_seconds": 0.004, "work_in_run_seconds": work, "efficiency_in_run": eff,
		key: eff/model - 1, "multilevel_error_applied_in_run": eff/getNum(t, obj, "multilevel_efficiency_applied") - 1} {
		if got := getNum(t, obj, k); math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %v, want %v", k, got, want)
		}
	}
}

// Both modes set every run beside the multi-level model at the level-2
// rate its node failures imply (one XOR set of the demo's 4 nodes, the
// run's recovery as the rebuild window), not at the run's own level-2
// events: the fake run met 4 failures in 12 s, each recovered in 0.5 s.
func TestDemoPredictedLevel2(t *testing.T) {
	secs := map[string]float64{"reference-before": 10, "reference-after": 6, "run": 12, "blocking": 12, "nonblocking": 9}
	check := func(t *testing.T, run map[string]any, elapsed float64) demo.Predicted {
		t.Helper()
		p := demo.PredictLevels(elapsed, 4, 0.5, 4, 4)
		if !(p.Probability > 0) {
			t.Fatalf("p = %g", p.Probability)
		}
		for k, want := range map[string]float64{"level2_probability": p.Probability, "level2_failures_predicted": 4 * p.Probability,
			"level1_mtti_predicted_seconds": p.Levels.Level1MTTI, "level2_mtti_predicted_seconds": p.Levels.Level2MTTI} {
			if got := getNum(t, run, k); math.Abs(got-want) > 1e-9*want {
				t.Errorf("%s = %v, want %v", k, got, want)
			}
		}
		if _, ok := run["multilevel_efficiency_predicted"]; !ok || run["multilevel_efficiency_predicted"] == nil && run["multilevel_efficiency_applied"] != nil {
			t.Errorf("multilevel_efficiency_predicted = %v, multilevel_efficiency_applied = %v: want the first wherever the second is",
				run["multilevel_efficiency_predicted"], run["multilevel_efficiency_applied"])
		}
		if run["multilevel_efficiency_predicted"] == nil {
			return p // the fake flushing runs measure no c1: no Markov model
		}
		ml := getNum(t, run, "multilevel_efficiency_predicted")
		if e := getNum(t, run, "multilevel_error_predicted"); math.Abs(e-(getNum(t, run, "efficiency")/ml-1)) > 1e-12 {
			t.Errorf("multilevel_error_predicted %v against the model's %v", e, ml)
		}
		if e := getNum(t, run, "multilevel_error_predicted_in_run"); math.Abs(e-(getNum(t, run, "efficiency_in_run")/ml-1)) > 1e-12 {
			t.Errorf("multilevel_error_predicted_in_run %v against the model's %v", e, ml)
		}
		// Over the finite job (6.5 s of work measured in the run).
		fin := getNum(t, run, "multilevel_finite_efficiency_predicted")
		if e := getNum(t, run, "multilevel_finite_error_predicted_in_run"); math.Abs(e-(getNum(t, run, "efficiency_in_run")/fin-1)) > 1e-12 {
			t.Errorf("multilevel_finite_error_predicted_in_run %v against the model's %v", e, fin)
		}
		if met := getNum(t, run, "multilevel_finite_efficiency"); fin == met {
			t.Errorf("the finite model at the predicted levels is the one at the levels met, %v", met)
		}
		return p
	}
	// predicted checks that run's model at the predicted levels is want,
	// and that it is not the model at the levels met.
	predicted := func(t *testing.T, run map[string]any, want float64) {
		t.Helper()
		if got := getNum(t, run, "multilevel_efficiency_predicted"); math.Abs(got-want) > 1e-12 {
			t.Errorf("multilevel_efficiency_predicted %v, want %v", got, want)
		}
		if got := getNum(t, run, "multilevel_efficiency_applied"); got == want {
			t.Errorf("the predicted model is the applied one, %v", got)
		}
	}

	t.Run("plain", func(t *testing.T) {
		f := &fakeDemo{secs: secs}
		c, out, progress := demoCommand()
		if err := demoPlain(c, "s", 1500, 2.5, 1, true, f.jobs()); err != nil {
			t.Fatalf("%v\n%s", err, progress)
		}
		obj := decodeOne(t, out.String())
		p := check(t, obj, 12)
		want := demo.MultilevelPlain(getNum(t, obj, "interval_seconds"), getNum(t, obj, "checkpoint_seconds"), 0.5, 8, p.Levels)
		predicted(t, obj, want) // not the model at the run's own level-2 event (1 in 12 s)
		job, ok := demo.JobOf(1500, demo.InRun{Work: 0.5 + 1500*0.004, Start: 0.5, StepSeconds: 0.004})
		if !ok {
			t.Fatal("no job")
		}
		wantF := demo.FinitePlain(getNum(t, obj, "interval_seconds"), getNum(t, obj, "checkpoint_seconds"), 0.5, 3, p.Levels, job).Multilevel
		if got := getNum(t, obj, "multilevel_finite_efficiency_predicted"); math.Abs(got-wantF) > 1e-12 {
			t.Errorf("multilevel_finite_efficiency_predicted %v, want %v", got, wantF)
		}
	})

	t.Run("compare", func(t *testing.T) {
		f := &fakeDemo{secs: secs}
		obj := demoCompare(t, f)
		for mode, s := range map[string]float64{"blocking": 12, "nonblocking": 9} {
			t.Run(mode, func(t *testing.T) { check(t, getObj(t, obj, mode), s) })
		}
	})

	// A blocking run that measured its costs: the Markov model at the
	// predicted levels, with the same inputs as the model at the levels met.
	t.Run("blocking with costs", func(t *testing.T) {
		f := &fakeDemo{secs: secs}
		jobs := f.jobs()
		var res runResult
		run := jobs.run
		jobs.run = func(ctx context.Context, s runSpec) (runResult, float64, error) {
			r, secs, err := run(ctx, s)
			if s.shared != "" {
				// 5 checkpoints of 0.1 s, 2 flushes of 0.4 s.
				r.Flush.Mode, r.Flush.K, r.Flush.Level1, r.Flush.Level1Seconds = "blocking", 2, 5, 0.5
				r.Flush.Due, r.Flush.Started, r.Flush.Seconds = 2, 2, 0.8
				res = r
			}
			return r, secs, err
		}
		d := demo.Settings{Interval: 1, Every: 2, Bandwidth: 4e6, Busy: "skip", Steps: 1500}
		c, out, progress := demoCommand()
		if err := demoFlush(c, []string{"blocking"}, d, 2.5, true, jobs); err != nil {
			t.Fatalf("%v\n%s", err, progress)
		}
		run2 := getObj(t, decodeOne(t, out.String()), "blocking")
		p := check(t, run2, 12)
		want := demo.CompareMarkovLevels(false, d, p.Levels, flush.Stats(res.Flush), res.Staged, res.Attempts).Efficiency
		if !(want > 0) {
			t.Errorf("the Markov model at the predicted levels is %v", want)
		}
		predicted(t, run2, want)
	})

	t.Run("text", func(t *testing.T) {
		f := &fakeDemo{secs: secs}
		c, out, progress := demoCommand()
		if err := demoPlain(c, "s", 1500, 2.5, 1, false, f.jobs()); err != nil {
			t.Fatalf("%v\n%s", err, progress)
		}
		p := demo.PredictLevels(12, 4, 0.5, 4, 4)
		for _, want := range []string{"at the level-2 rate the node failures imply",
			fmt.Sprintf("%.2f level-2 failures predicted, 1 met", p.Level2Expected)} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("no %q in\n%s", want, out)
			}
		}
	})
}
