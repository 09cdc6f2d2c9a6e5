package demo

import (
	"math"
	"testing"

	"github.com/ckpt/ckpt/internal/flush"
	"github.com/ckpt/ckpt/internal/launch"
	"github.com/ckpt/ckpt/model"
)

// The work is the mean of the references at both ends of the runs: a
// reference taken at one end alone (the old demo's, before the runs in
// --flush, after the run in the plain demo) measures that end's machine.
func TestReferenceWork(t *testing.T) {
	r := Reference{Before: 10.4, After: 7.0}
	if got := r.Work(); math.Abs(got-8.7) > 1e-12 {
		t.Errorf("Work = %g, want the mean 8.7", got)
	}
	if got, before, after := Efficiency(r.Work(), 9.1), Efficiency(r.Before, 9.1), Efficiency(r.After, 9.1); !(got < before && got > after) {
		t.Errorf("a run of 9.1 s: efficiency %g, want between the ends' %g and %g", got, after, before)
	}
	for _, bad := range []Reference{{}, {Before: 7}, {After: 7}, {Before: math.NaN(), After: 7}} {
		if got := bad.Work(); !math.IsNaN(got) {
			t.Errorf("%+v: Work = %g, want NaN without both references", bad, got)
		}
	}
	if got := Efficiency(8, 0); !math.IsNaN(got) {
		t.Errorf("no run time: %g", got)
	}
	// One reference (--references 1): the work is the one before.
	if got := (Reference{Before: 10.4, After: math.NaN(), Once: true}).Work(); got != 10.4 {
		t.Errorf("once: Work = %g, want the reference before, 10.4", got)
	}
	for _, bad := range []Reference{{Once: true}, {After: 7, Once: true}, {Before: math.NaN(), Once: true}} {
		if got := bad.Work(); !math.IsNaN(got) {
			t.Errorf("%+v: Work = %g, want NaN without the reference before", bad, got)
		}
	}
}

func TestRelErr(t *testing.T) {
	if got := RelErr(0.6, 0.5); math.Abs(got-0.2) > 1e-12 {
		t.Errorf("RelErr(0.6, 0.5) = %g, want 0.2", got)
	}
	if got := RelErr(0.6, math.NaN()); !math.IsNaN(got) {
		t.Errorf("no model: %g", got)
	}
}

// Level 2 is what the caches did not survive: relaunches from the shared
// tier and from scratch after a checkpoint; relaunches from scratch before
// any checkpoint are level-1 failures (they lose the work since the start,
// a checkpoint of every level). The split keeps the applied rate.
func TestAppliedLevels(t *testing.T) {
	acc := launch.Accounting{Failures: 10, BySource: map[string]int{"rebuild": 4, "shared": 1, "none": 4},
		ScratchNoCheckpoint: 2, ScratchUnrecoverable: 2}
	if n := Level2Events(acc); n != 3 {
		t.Fatalf("Level2Events = %d, want 3 (1 from the shared tier, 2 unrecoverable)", n)
	}
	lv := AppliedLevels(20, 10, acc)
	if lv.Level2 != 3 || math.Abs(lv.Level1MTTI-20.0/7) > 1e-12 || math.Abs(lv.Level2MTTI-20.0/3) > 1e-12 {
		t.Errorf("20 s, 10 injected, 3 of level 2: %+v, want MTTIs 20/7 and 20/3 s", lv)
	}
	applied := AppliedFailures(20, 2.5, 10)
	if sum := 1/lv.Level1MTTI + 1/lv.Level2MTTI; math.Abs(sum-1/applied.MTTI) > 1e-12 {
		t.Errorf("λ1 + λ2 = %g, want the applied rate %g", sum, 1/applied.MTTI)
	}
	none := AppliedLevels(20, 0, launch.Accounting{BySource: map[string]int{}})
	if none.Level2 != 0 || !math.IsInf(none.Level1MTTI, 1) || !math.IsInf(none.Level2MTTI, 1) {
		t.Errorf("no failure: %+v, want infinite MTTIs", none)
	}
	// A level-2 event not matched by an injected failure (a crash of the
	// job's own) leaves level 1 empty rather than negative.
	odd := AppliedLevels(20, 0, launch.Accounting{BySource: map[string]int{"shared": 1}})
	if odd.Level2 != 1 || !math.IsInf(odd.Level1MTTI, 1) || odd.Level2MTTI != 20 {
		t.Errorf("a level-2 event without an injected failure: %+v", odd)
	}
}

// One interval's job: both levels go back to the start, so the model is
// one segment of t + δ exposed to λ1 + λ2 with a restart R exposed too,
// whose expected time is e^{λR}(e^{λ(t+δ)} − 1)/λ (SPEC-markov §2, a
// segment wrapped by its restart).
func TestMultilevelPlainOneInterval(t *testing.T) {
	const tau, cost, r = 0.5, 0.05, 0.3
	lv := Levels{Level2: 1, Level1MTTI: 4, Level2MTTI: 12}
	lambda := 1.0/4 + 1.0/12
	want := tau / (math.Exp(lambda*r) * math.Expm1(lambda*(tau+cost)) / lambda)
	got := MultilevelPlain(tau, cost, r, 0.6, lv) // 0.6 s of work: n = 1
	if math.Abs(got-want) > 1e-12*want {
		t.Errorf("one interval: %.15g, want %.15g", got, want)
	}
}

// A longer job is one period of n = round(work/τ) intervals: level-1
// failures go back one interval, level-2 ones to the start.
func TestMultilevelPlain(t *testing.T) {
	const tau, cost, r, work = 0.5, 0.05, 0.3, 10.1
	lv := Levels{Level2: 2, Level1MTTI: 3, Level2MTTI: 10}
	want, err := model.Blocking(model.Levels{Rates: []float64{1.0 / 3, 1.0 / 10}, Cost: []float64{cost, cost}, Restart: []float64{r, r}},
		model.Schedule{Interval: tau, Counts: []int{19}}, model.BlockingOptions{RetryRecovery: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := MultilevelPlain(tau, cost, r, work, lv); got != want.Efficiency {
		t.Errorf("10.1 s of work at τ = 0.5 s: %g, want the 20-interval period's %g", got, want.Efficiency)
	}
	// The same failures all of level 1 cost less: a level-2 one loses
	// everything since the start.
	total := 1/lv.Level1MTTI + 1/lv.Level2MTTI
	allL1 := MultilevelPlain(tau, cost, r, work, Levels{Level1MTTI: 1 / total, Level2MTTI: math.Inf(1)})
	if !(allL1 > want.Efficiency) {
		t.Errorf("all of level 1: %g, want above %g", allL1, want.Efficiency)
	}
	// λ2 = 0 is the Markov model of one level, where the period's length
	// does not matter: every segment is alike.
	oneLevel, err := model.Blocking(model.Levels{Rates: []float64{total}, Cost: []float64{cost}, Restart: []float64{r}},
		model.Schedule{Interval: tau}, model.BlockingOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(allL1-oneLevel.Efficiency) > 1e-9 {
		t.Errorf("λ2 = 0: %g, want the one-level model's %g", allL1, oneLevel.Efficiency)
	}
	// ... which is Daly's eq. 1 evaluated exactly (SPEC-markov §4.5): with
	// no level-2 event the multi-level model agrees with the Daly
	// comparison at the same MTTI.
	if daly := DalyEfficiency(tau, cost, r, 1/total); math.Abs(allL1-daly) > 1e-9*daly {
		t.Errorf("λ2 = 0: %.12g, want eq. 1's %.12g", allL1, daly)
	}
	// The more work, the more a level-2 failure loses.
	if long := MultilevelPlain(tau, cost, r, 2*work, lv); !(long < want.Efficiency) {
		t.Errorf("twice the work: %g, want below %g", long, want.Efficiency)
	}
	if got := MultilevelPlain(tau, cost, r, work, Levels{Level1MTTI: math.Inf(1), Level2MTTI: math.Inf(1)}); got != tau/(tau+cost) {
		t.Errorf("no failure: %g, want τ/(τ+δ) = %g", got, tau/(tau+cost))
	}
	for name, got := range map[string]float64{
		"no interval":  MultilevelPlain(math.NaN(), cost, r, work, lv),
		"no cost":      MultilevelPlain(tau, 0, r, work, lv),
		"no work":      MultilevelPlain(tau, cost, r, math.NaN(), lv),
		"no recovery":  MultilevelPlain(tau, cost, math.NaN(), work, lv),
		"negative one": MultilevelPlain(tau, cost, -1, work, lv),
	} {
		if !math.IsNaN(got) {
			t.Errorf("%s: %g, want NaN", name, got)
		}
	}
}

// The flushing runs' model by level: level 2 at its applied rate, and a
// failure during a level-1 restart retries it (the run's level-2 events
// are those that did not). Without a level-2 event it is above the model
// at the applied MTTI, whose escalation sends some failures back to the
// shared tier.
func TestCompareMarkovLevels(t *testing.T) {
	s := Settings{Interval: 1, Every: 3}
	f := flush.Stats{Mode: "blocking", Started: 2, Seconds: 0.6, Level1: 4, Level1Seconds: 0.2}
	at := attempts()
	sched := model.Schedule{Interval: 1, Counts: []int{2}}
	retry := model.BlockingOptions{RetryRecovery: true}
	noL2 := AppliedLevels(12, 6, launch.Accounting{BySource: map[string]int{"rebuild": 6}})
	got := CompareMarkovLevels(false, s, noL2, f, nil, at)
	m, err := model.Blocking(model.Levels{Rates: []float64{6.0 / 12, 0}, Cost: []float64{0.05, 0.35}, Restart: []float64{0.5, 0.5}}, sched, retry)
	if err != nil || math.Abs(got.Efficiency-m.Efficiency) > 1e-12 {
		t.Errorf("no level-2 event: %g, want %g (%v)", got.Efficiency, m.Efficiency, err)
	}
	escalating := CompareMarkovApplied(false, s, AppliedFailures(12, 2.5, 6), f, nil, at)
	if !(got.Efficiency > escalating.Efficiency) {
		t.Errorf("no level-2 event: %g, want above the escalating model's %g", got.Efficiency, escalating.Efficiency)
	}
	l2 := AppliedLevels(12, 6, launch.Accounting{BySource: map[string]int{"rebuild": 4, "shared": 2}})
	withL2 := CompareMarkovLevels(false, s, l2, f, nil, at)
	m, err = model.Blocking(model.Levels{Rates: []float64{4.0 / 12, 2.0 / 12}, Cost: []float64{0.05, 0.35}, Restart: []float64{0.5, 0.5}}, sched, retry)
	if err != nil || math.Abs(withL2.Efficiency-m.Efficiency) > 1e-12 {
		t.Errorf("2 of 6 of level 2: %g, want %g (%v)", withL2.Efficiency, m.Efficiency, err)
	}
	if !(withL2.Efficiency < got.Efficiency) {
		t.Errorf("level-2 failures: %g, want below the all-level-1 %g", withL2.Efficiency, got.Efficiency)
	}
	// Non-blocking: the same levels, through the non-blocking model.
	f.Mode = "nonblocking"
	staged := []launch.StageEvent{{State: "durable", Seconds: 0.8}}
	nb := CompareMarkovLevels(true, s, l2, f, staged, at)
	want, err := model.NonBlocking{Levels: model.Levels{Rates: []float64{4.0 / 12, 2.0 / 12}, Cost: []float64{0.05, 0.05}, Restart: []float64{0.5, 0.5}},
		FlushLatency: 0.8, RetryRecovery: true}.Evaluate(sched)
	if err != nil || math.Abs(nb.Efficiency-want.Efficiency) > 1e-12 {
		t.Errorf("non-blocking, 2 of 6 of level 2: %g, want %g (%v)", nb.Efficiency, want.Efficiency, err)
	}
}
