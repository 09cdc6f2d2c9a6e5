package demo

import (
	"github.com/ckpt/ckpt/internal/flush"
	"math"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/launch"
	"github.com/ckpt/ckpt/internal/policy"
	"github.com/ckpt/ckpt/model"
)

func attempts() []launch.Attempt {
	s := time.Second
	return []launch.Attempt{
		{End: 3 * s, RestoredAt: s / 2, Failure: "x"},
		{Start: 3 * s, End: 7 * s, RestoredAt: 3*s + 400*time.Millisecond, Failure: "x"},
		{Start: 7 * s, End: 9 * s, RestoredAt: 7*s + 600*time.Millisecond},
	}
}

func TestMeanRestart(t *testing.T) {
	if got := MeanRestart(attempts()); math.Abs(got-0.5) > 1e-12 {
		t.Errorf("MeanRestart = %g, want 0.5 (0.4 and 0.6 after the failures)", got)
	}
	if got := MeanRestart(attempts()[:1]); got != 0.5 {
		t.Errorf("no restart: %g, want the first launch's start-up 0.5", got)
	}
	if got := MeanRestart(nil); got != 0 {
		t.Errorf("no attempt: %g", got)
	}
}

// CompareDaly is Daly's run time at Daly's interval, as the demo printed it.
func TestCompareDaly(t *testing.T) {
	const cost, mtti = 0.05, 2.5
	d := CompareDaly(10, 12, mtti, cost, attempts())
	tau := model.Daly(cost, mtti)
	_, eff := model.DalyRuntime(model.RuntimeInput{Work: 1, Interval: tau, Cost: cost, MTTI: mtti, Restart: 0.5})
	if d.Interval != tau || d.Efficiency != eff || d.Err != (10.0/12-eff)/eff {
		t.Errorf("CompareDaly = %+v; want τ %g, efficiency %g", d, tau, eff)
	}
	if d := CompareDaly(10, 12, mtti, 0, attempts()); !math.IsNaN(d.Efficiency) || d.Restart != 0.5 {
		t.Errorf("no cost measured: %+v", d)
	}
}

// CompareMarkov builds the levels as the demo always did: node failures
// at level 1 only, c2 = c1 + the blocking flush, both restarts measured.
func TestCompareMarkov(t *testing.T) {
	s := Settings{Interval: 1, Every: 3}
	const mtti = 2.5
	f := flush.Stats{Mode: "blocking", Started: 2, Seconds: 0.6, Level1: 4, Level1Seconds: 0.2,
		BusySteps: 10, BusySeconds: 1.1, IdleSteps: 10, IdleSeconds: 1}
	sched := model.Schedule{Interval: 1, Counts: []int{2}}
	b := CompareMarkov(false, s, mtti, f, nil, attempts())
	want, err := model.Blocking(model.Levels{Rates: []float64{1 / mtti, 0}, Cost: []float64{0.05, 0.05 + 0.3}, Restart: []float64{0.5, 0.5}}, sched, model.BlockingOptions{})
	if err != nil || b.Efficiency != want.Efficiency || b.C1 != 0.05 || b.C2 != 0.35 || !math.IsNaN(b.ModelAlpha) {
		t.Errorf("blocking: %+v, want efficiency %g (%v)", b, want.Efficiency, err)
	}

	f.Mode = "nonblocking"
	staged := []launch.StageEvent{{State: "durable", Seconds: 0.8}, {State: "committed", Seconds: 1.2}, {State: "failed", Seconds: 9}}
	nb := CompareMarkov(true, s, mtti, f, staged, attempts())
	lv := model.Levels{Rates: []float64{1 / mtti, 0}, Cost: []float64{0.05, 0.05}, Restart: []float64{0.5, 0.5}}
	want, err = model.NonBlocking{Levels: lv, FlushLatency: 1, Alpha: f.Alpha()}.Evaluate(sched)
	if err != nil || nb.Efficiency != want.Efficiency || nb.Latency != 1 || nb.ModelAlpha != f.Alpha() {
		t.Errorf("non-blocking: %+v, want efficiency %g (%v)", nb, want.Efficiency, err)
	}

	// α not measured: the model takes 0, and says so.
	f.BusySteps = 0
	nb = CompareMarkov(true, s, mtti, f, staged, attempts())
	if !math.IsNaN(nb.Alpha) || nb.ModelAlpha != 0 || math.IsNaN(nb.Efficiency) {
		t.Errorf("α not measured: %+v", nb)
	}
	if r := CompareMarkov(true, s, mtti, f, nil, attempts()); !math.IsNaN(r.Efficiency) || r.Why != "no non-blocking flush finished" {
		t.Errorf("no flush finished: %+v", r)
	}
	if r := CompareMarkov(false, s, mtti, flush.Stats{}, nil, attempts()); !math.IsNaN(r.Efficiency) || r.Why != "the run measured no checkpoint or restart" {
		t.Errorf("nothing measured: %+v", r)
	}
}

// AppliedFailures sets the failures a run met beside those its MTTI
// expects on the injector's clock.
func TestAppliedFailures(t *testing.T) {
	a := AppliedFailures(10, 2.5, 5)
	if a.Expected != 4 || a.Injected != 5 || a.MTTI != 2 {
		t.Errorf("10 s, MTTI 2.5 s, 5 failures: %+v, want 4 expected, applied MTTI 2 s", a)
	}
	if a := AppliedFailures(10, 2.5, 0); !math.IsInf(a.MTTI, 1) || a.Expected != 4 {
		t.Errorf("no failure: %+v, want an infinite applied MTTI", a)
	}
	if a := AppliedFailures(10, 0, 0); !math.IsNaN(a.Expected) {
		t.Errorf("no injector: %+v, want nothing expected (NaN)", a)
	}
}

// DalyEfficiency is eq. 1's efficiency, and without failures its limit
// τ/(τ + δ), which eq. 1 approaches as M grows.
func TestDalyEfficiency(t *testing.T) {
	const tau, cost, r = 0.9, 0.1, 0.5
	_, want := model.DalyRuntime(model.RuntimeInput{Work: 1, Interval: tau, Cost: cost, MTTI: 3, Restart: r})
	if got := DalyEfficiency(tau, cost, r, 3); got != want {
		t.Errorf("M = 3 s: %g, want eq. 1's %g", got, want)
	}
	limit := DalyEfficiency(tau, cost, r, math.Inf(1))
	if limit != tau/(tau+cost) {
		t.Errorf("M = ∞: %g, want τ/(τ+δ) = %g", limit, tau/(tau+cost))
	}
	if near := DalyEfficiency(tau, cost, r, 1e9); math.Abs(near-limit) > 1e-8 {
		t.Errorf("M = 1e9 s: %g, not near the limit %g", near, limit)
	}
	if got := DalyEfficiency(tau, 0, r, 3); !math.IsNaN(got) {
		t.Errorf("no cost: %g, want NaN", got)
	}
}

// AtApplied evaluates eq. 1 at the run's own interval and the MTTI it met:
// more failures than expected lower the model's efficiency below the one
// at the configured MTTI, fewer raise it.
func TestAtApplied(t *testing.T) {
	const cost, mtti = 0.05, 2.5
	d := CompareDaly(10, 12, mtti, cost, attempts())
	same, errSame := d.AtApplied(AppliedFailures(10, mtti, 4), 10, 12, cost, d.Restart)
	if math.Abs(same-d.Efficiency) > 1e-12 || math.Abs(errSame-d.Err) > 1e-9 {
		t.Errorf("the expected count met: %g (error %g), want the configured model's %g (%g)", same, errSame, d.Efficiency, d.Err)
	}
	more, _ := d.AtApplied(AppliedFailures(10, mtti, 8), 10, 12, cost, d.Restart)
	fewer, _ := d.AtApplied(AppliedFailures(10, mtti, 1), 10, 12, cost, d.Restart)
	if !(more < d.Efficiency && d.Efficiency < fewer) {
		t.Errorf("8, 4, 1 failures in 10 s: efficiencies %g, %g, %g, want increasing", more, d.Efficiency, fewer)
	}
	if _, e := d.AtApplied(AppliedFailures(10, mtti, 4), 0, 12, cost, d.Restart); !math.IsNaN(e) {
		t.Errorf("no reference: error %g, want NaN", e)
	}
}

// The Markov model at the MTTI a run without failures met (+Inf) is the
// model without failures: a rate of 0, checkpoints and flushes only.
func TestCompareMarkovNoFailure(t *testing.T) {
	s := Settings{Interval: 1, Every: 3}
	f := flush.Stats{Mode: "blocking", Started: 2, Seconds: 0.6, Level1: 4, Level1Seconds: 0.2}
	r := CompareMarkov(false, s, math.Inf(1), f, nil, attempts())
	// Three checkpoints of 1 s each: two of level 1 (0.05 s), one flushed (0.35 s).
	want := 3 / (3 + 2*0.05 + 0.35)
	if math.Abs(r.Efficiency-want) > 1e-9 {
		t.Errorf("no failure: efficiency %g (%s), want %g", r.Efficiency, r.Why, want)
	}
}

// MeanRecovery starts each restart at the injected failure, not at the end
// of the attempt it killed.
func TestMeanRecovery(t *testing.T) {
	at := attempts()
	at[0].Injected, at[0].InjectedAt = true, 2800*time.Millisecond
	// The second attempt's failure was not injected: MeanRecovery leaves
	// its restart out.
	if got := MeanRecovery(at); math.Abs(got-0.6) > 1e-12 {
		t.Errorf("MeanRecovery = %g, want 0.6 (from the failure at 2.8 s to the restore at 3.4 s)", got)
	}
	at[1].Injected, at[1].InjectedAt = true, 6900*time.Millisecond
	if got := MeanRecovery(at); math.Abs(got-0.65) > 1e-12 {
		t.Errorf("MeanRecovery = %g, want 0.65 (0.6 and 0.7)", got)
	}
	if got, want := MeanRecovery(attempts()), MeanRestart(attempts()); got != want {
		t.Errorf("no injected failure: %g, want MeanRestart's %g", got, want)
	}
}

func TestErrorByChance(t *testing.T) {
	c := ErrorByChance(7.7, 0.75, 0.15, 0.5, 2.5)
	if again := ErrorByChance(7.7, 0.75, 0.15, 0.5, 2.5); again != c {
		t.Errorf("the same arguments gave %+v then %+v", c, again)
	}
	if !(c.MeanAbs > 0.03 && c.MeanAbs < 0.1) || !(math.Abs(c.Mean) < c.MeanAbs) {
		t.Errorf("demo's parameters: %+v, want a mean |error| of a few percent and a smaller bias", c)
	}
	// Failures 3 times rarer: fewer in a run, each a smaller share of it.
	if rare := ErrorByChance(7.7, 0.75, 0.15, 0.5, 7.5); !(rare.MeanAbs < c.MeanAbs) {
		t.Errorf("M = 7.5 s: %+v, want below M = 2.5 s's %+v", rare, c)
	}
	for _, bad := range [][5]float64{{0, 1, 1, 1, 1}, {1, 0, 1, 1, 1}, {1, 1, 0, 1, 1}, {1, 1, 1, math.NaN(), 1}, {1, 1, 1, 1, math.Inf(1)}} {
		if c := ErrorByChance(bad[0], bad[1], bad[2], bad[3], bad[4]); !math.IsNaN(c.Mean) || !math.IsNaN(c.MeanAbs) {
			t.Errorf("ErrorByChance%v = %+v, want NaN", bad, c)
		}
	}
}

func TestWorkInRun(t *testing.T) {
	// The first launch died before it computed; the second started from
	// scratch 0.4 s after its launch; the third restored a checkpoint.
	atts := []launch.Attempt{{End: time.Second / 10}, {Start: time.Second, RestoredAt: 1400 * time.Millisecond, Restored: "none"},
		{Start: 3 * time.Second, RestoredAt: 4 * time.Second, Restored: "rebuild"}}
	w := WorkInRun(1500, atts, 0.005)
	if math.Abs(w.Start-0.4) > 1e-9 || math.Abs(w.Work-(0.4+7.5)) > 1e-9 || w.StepSeconds != 0.005 {
		t.Errorf("WorkInRun = %+v, want start 0.4 s and work 7.9 s", w)
	}
	for _, c := range []struct {
		steps int
		atts  []launch.Attempt
		step  float64
	}{{0, atts, 0.005}, {1500, nil, 0.005}, {1500, atts[2:], 0.005}, {1500, atts, math.NaN()}, {1500, atts, 0}} {
		if w := WorkInRun(c.steps, c.atts, c.step); !math.IsNaN(w.Work) {
			t.Errorf("WorkInRun(%d, %v, %v) = %+v, want no work", c.steps, c.atts, c.step, w)
		}
	}
}

func TestErrorByChanceLevels(t *testing.T) {
	// Seed 19 of the demo's evening runs: 20.8 s, 8 failures, 3 of level 2.
	lv := AppliedLevels(20.8, 8, launch.Accounting{ScratchUnrecoverable: 3})
	c := ErrorByChanceLevels(8.2, 0.75, 0.15, 0.5, lv)
	if again := ErrorByChanceLevels(8.2, 0.75, 0.15, 0.5, lv); again != c {
		t.Errorf("the same arguments gave %+v then %+v", c, again)
	}
	single := ErrorByChance(8.2, 0.75, 0.15, 0.5, 20.8/8)
	if !(c.MeanAbs > 2*single.MeanAbs) || !(c.MeanAbs < 1) {
		t.Errorf("with level-2 events %+v, without %+v: want several times more by chance", c, single)
	}
	if none := ErrorByChanceLevels(8.2, 0.75, 0.15, 0.5, AppliedLevels(20.8, 8, launch.Accounting{})); !math.IsNaN(none.MeanAbs) {
		t.Errorf("no level-2 event: %+v, want NaN (ErrorByChance covers it)", none)
	}
}

// Over every run, the comparison with the multi-level model at the
// predicted λ2 strays further than the single-level one by chance: the
// few runs that meet a level-2 failure lose all the work since the
// start. Without a level-2 rate (no rebuild window) it is the
// single-level comparison.
func TestErrorByChancePredicted(t *testing.T) {
	// A run of the campaign of 2026-11-27: 22 s of work, τ = 3.3 s,
	// δ = 0.3 s, R = 0.9 s, M = 20 s.
	c := ErrorByChancePredicted(22, 3.3, 0.3, 0.9, 20, 4, 4)
	if again := ErrorByChancePredicted(22, 3.3, 0.3, 0.9, 20, 4, 4); again != c {
		t.Errorf("the same arguments gave %+v then %+v", c, again)
	}
	single := ErrorByChance(22, 3.3, 0.3, 0.9, 20)
	if !(c.MeanAbs > 1.3*single.MeanAbs) || !(c.MeanAbs < 0.5) {
		t.Errorf("predicted λ2: %+v; single level: %+v: want more spread with level-2 failures", c, single)
	}
	// More level-2 failures (a longer rebuild), more spread.
	if long := ErrorByChancePredicted(22, 3.3, 0.3, 3, 20, 4, 4); !(long.MeanAbs > c.MeanAbs) {
		t.Errorf("R = 3 s: %+v, R = 0.9 s: %+v: want more spread", long, c)
	}
	// No window, no level 2: eq. 1's comparison (another simulation of
	// the same process, so within its noise).
	zero := ErrorByChancePredicted(22, 3.3, 0.3, 0, 20, 4, 4)
	if one := ErrorByChance(22, 3.3, 0.3, 0, 20); math.Abs(zero.MeanAbs-one.MeanAbs) > 0.01 || math.Abs(zero.Mean-one.Mean) > 0.01 {
		t.Errorf("R = 0: %+v, single level: %+v: want the same within the simulations' noise", zero, one)
	}
	for _, bad := range [][5]float64{{0, 3.3, 0.3, 0.9, 20}, {22, 0, 0.3, 0.9, 20}, {22, 3.3, 0, 0.9, 20}, {22, 3.3, 0.3, -1, 20}, {22, 3.3, 0.3, 0.9, math.Inf(1)}} {
		if c := ErrorByChancePredicted(bad[0], bad[1], bad[2], bad[3], bad[4], 4, 4); !math.IsNaN(c.MeanAbs) {
			t.Errorf("ErrorByChancePredicted%v = %+v, want NaN", bad, c)
		}
	}
	if c := ErrorByChancePredicted(22, 3.3, 0.3, 0.9, 20, 1, 4); !math.IsNaN(c.MeanAbs) {
		t.Errorf("an XOR set of one node: %+v, want NaN", c)
	}
}

func TestErrorByChanceMarkov(t *testing.T) {
	s := Settings{Interval: 1, Every: 2}
	blocking := policy.Measured{Interval: 1, Level1Cost: 0.2, FlushCost: 0.4, Restart: 0.6, Level1MTTI: 2.5}
	c := ErrorByChanceMarkov(s, 8, blocking)
	if again := ErrorByChanceMarkov(s, 8, blocking); again != c {
		t.Errorf("the same arguments gave %+v then %+v", c, again)
	}
	if !(c.MeanAbs > 0.02 && c.MeanAbs < 0.3) || !(math.Abs(c.Mean) < c.MeanAbs) {
		t.Errorf("blocking: %+v, want a mean |error| of some percent and a smaller bias", c)
	}
	nb := blocking
	nb.NonBlocking, nb.Alpha = true, 0.2
	if c := ErrorByChanceMarkov(s, 8, nb); !(c.MeanAbs > 0.02 && c.MeanAbs < 0.3) {
		t.Errorf("non-blocking: %+v", c)
	}
	// Ten times the work: many more failures in a run, less chance.
	if long := ErrorByChanceMarkov(s, 80, blocking); !(long.MeanAbs < c.MeanAbs/2) {
		t.Errorf("80 s of work: %+v against 8 s: %+v, want much less", long, c)
	}
	if none := ErrorByChanceMarkov(s, 8, policy.Measured{}); !math.IsNaN(none.MeanAbs) {
		t.Errorf("no model evaluated: %+v, want NaN", none)
	}
}
