package sim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ckpt/ckpt/model"
)

// zMax is how many standard errors a simulated mean may lie from the exact
// value it estimates. The seeds are fixed, so a test passes or fails the
// same way every time; 4 standard errors keep a correct simulator far from
// the edge while a wrong rule (a missing e^{R/M}, say) is off by tens.
const zMax = 4

// se is the standard error behind a 95% half-width.
func se(e Estimate, n int) float64 { return e.CI95 / TQuantile975(n-1) }

// checkZ fails when the simulated mean is more than zMax standard errors
// from want, and returns z.
func checkZ(t *testing.T, name string, got Estimate, n int, want float64) float64 {
	t.Helper()
	z := (got.Mean - want) / se(got, n)
	if math.IsNaN(z) || math.Abs(z) > zMax {
		t.Errorf("%s: simulated %.7g ± %.2g (95%%), exact %.7g: z = %.2f, beyond %d standard errors", name, got.Mean, got.CI95, want, z, zMax)
	}
	return z
}

func run(t testing.TB, cfg Config, opts ...Option) Result {
	t.Helper()
	r, err := Run(context.Background(), cfg, opts...)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return r
}

// workedExample is SPEC-markov §7.
func workedExample() Config {
	return Config{
		Work:     600 * 5 * 200,
		Levels:   model.Levels{Rates: []float64{2e-4, 5e-5}, Cost: []float64{30, 400}, Restart: []float64{40, 500}},
		Schedule: model.Schedule{Interval: 600, Counts: []int{4}},
	}
}

func TestDeterministicWhateverTheWorkers(t *testing.T) {
	for _, cfg := range []Config{workedExample(), nonBlockingExample(), uncoordinatedExample(t)} {
		a := run(t, cfg, Replications(37), Seed(7), Workers(1))
		b := run(t, cfg, Replications(37), Seed(7), Workers(3))
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%v: 1 worker %+v\n3 workers %+v", cfg.Strategy, a, b)
		}
		c := run(t, cfg, Replications(37), Seed(8), Workers(2))
		if c.Seconds == a.Seconds {
			t.Errorf("%v: seeds 7 and 8 give the same run time %v", cfg.Strategy, a.Seconds)
		}
	}
}

// A replication's result depends on its index only, not on how many
// replications run: the first 16 of 32 are the 16 of a 16-replication run.
func TestReplicationStreamsIndependentOfCount(t *testing.T) {
	cfg := workedExample()
	w := &worker{cfg: &cfg, co: newCoordinated(&cfg)}
	var stop atomic.Bool
	first, _ := w.replicate(3, 5, &stop, 1e9)
	again, _ := w.replicate(3, 5, &stop, 1e9)
	other, _ := w.replicate(3, 6, &stop, 1e9)
	if first != again {
		t.Errorf("replication 5 twice: %+v then %+v", first, again)
	}
	if first.seconds == other.seconds {
		t.Errorf("replications 5 and 6 have the same run time %g", first.seconds)
	}
}

// Without failures the run time is the failure-free schedule exactly.
func TestNoFailures(t *testing.T) {
	cfg := Config{
		Work:     1000*7 + 250, // 8 intervals, the last of 250 s
		Levels:   model.Levels{Rates: []float64{1e-300, 1e-300, 1e-300}, Cost: []float64{1, 10, 100}, Restart: []float64{1, 1, 1}},
		Schedule: model.Schedule{Interval: 1000, Counts: []int{1, 1}},
	}
	// Levels of the checkpoints after intervals 1..8: 1 2 1 3 1 2 1 3.
	want := cfg.Work + 4*1 + 2*10 + 2*100
	r := run(t, cfg, Replications(4))
	if r.Seconds.Mean != want || r.Seconds.CI95 != 0 || r.Lost.Mean != 0 || r.Restart.Mean != 0 {
		t.Errorf("run time %+v lost %+v restart %+v, want %g exactly", r.Seconds, r.Lost, r.Restart, want)
	}
	if r.Checkpoint.Mean != want-cfg.Work {
		t.Errorf("checkpoint time %g, want %g", r.Checkpoint.Mean, want-cfg.Work)
	}
	if r.Events != 4*8 {
		t.Errorf("events %d, want 32 (8 intervals × 4 replications)", r.Events)
	}

	nb := nonBlockingExample()
	nb.Rates = []float64{1e-300, 1e-300}
	nb.Work = 600 * 5 * 3
	r = run(t, nb, Replications(2))
	// Periods 2 and 3 run their first m = 3 segments slowed by 1.05.
	want = nb.Work + 15*30 + 2*3*600*0.05
	if math.Abs(r.Seconds.Mean-want) > 1e-9*want {
		t.Errorf("non-blocking without failures: %g, want %g", r.Seconds.Mean, want)
	}

	u := uncoordinatedExample(t)
	u.Rates = []float64{1e-300}
	r = run(t, u, Replications(2))
	k, last := u.intervals()
	want = float64(k-1)*(u.Interval*(1+u.LogOverhead)+u.Cost[0]) + last*(1+u.LogOverhead) + u.Cost[0]
	if math.Abs(r.Seconds.Mean-want) > 1e-9*want || math.Abs(r.ProcessSeconds.Mean-want) > 1e-9*want {
		t.Errorf("uncoordinated without failures: job %g, process %g, want %g", r.Seconds.Mean, r.ProcessSeconds.Mean, want)
	}
}

// For blocking checkpointing the checkpoints that survive are those of the
// failure-free schedule, so Checkpoint (= Seconds − Work − Lost − Restart)
// is the same in every replication: a check of the Lost and Restart
// accounting under heavy failures and escalations.
func TestCoordinatedAccounting(t *testing.T) {
	cfg := Config{
		Work:     600 * 24 * 20,
		Levels:   model.Levels{Rates: []float64{1e-3, 3e-4, 1e-4}, Cost: []float64{30, 200, 900}, Restart: []float64{60, 400, 1500}},
		Schedule: model.Schedule{Interval: 600, Counts: []int{3, 2}},
	}
	// 480 intervals: every 4th ends at level ≥ 2, every 12th at level 3.
	want := 480*30.0 + 120*(200-30) + 40*(900-200)
	r := run(t, cfg, Replications(64))
	if math.Abs(r.Checkpoint.Mean-want) > 1e-6*want || r.Checkpoint.CI95 > 1e-6*want {
		t.Errorf("surviving checkpoint time %+v, want %g in every replication", r.Checkpoint, want)
	}
	for l, f := range r.Failures {
		if f.Mean == 0 || r.Restarts[l].Mean == 0 {
			t.Errorf("level %d: failures %v restarts %v; the test wants every level exercised", l+1, f, r.Restarts[l])
		}
	}
}

// Restarts: every failure of a job ends in exactly one completed recovery
// or in a failed recovery attempt, so failures = restarts + failed attempts
// ≥ restarts; with a single level and no failure during restarts possible
// (restart 0), failures equal restarts.
func TestRestartCounts(t *testing.T) {
	cfg := Config{Work: 1e6, Levels: model.Levels{Rates: []float64{1e-4}, Cost: []float64{60}, Restart: []float64{0}}, Schedule: model.Schedule{Interval: 1000}}
	r := run(t, cfg, Replications(16))
	if r.Failures[0] != r.Restarts[0] {
		t.Errorf("restart 0: failures %v, restarts %v", r.Failures[0], r.Restarts[0])
	}
}

// With φ = 1 (every process waits for every failed one) and no logging
// cost, uncoordinated checkpointing is a coordinated job whose restart is
// t_d + t_l + Δ_lr, except for one thing: a process that waits keeps the
// part of a checkpoint it was writing, where a coordinated job loses it.
// With a negligible checkpoint cost Daly's eq. 1 must hold exactly, for one
// process always; with a real one the waiting processes save time, so the
// processes drift out of step and run faster than eq. 1 says.
func TestUncoordinatedAllDependIsDaly(t *testing.T) {
	for _, c := range []struct {
		n  int
		tc float64
	}{{1, 1.6}, {4, 0.01}, {4, 1.6}} {
		p := make([]int, c.n)
		for i := range p {
			p[i] = c.n
		}
		deps, err := DependentsFromP(p)
		if err != nil {
			t.Fatal(err)
		}
		cfg := Config{Strategy: Uncoordinated, Work: 2e5, Levels: model.Levels{Rates: []float64{1e-2}, Cost: []float64{c.tc}, Restart: []float64{1.6}},
			Schedule: model.Schedule{Interval: 16}, Detect: 0.5, LogReplay: 0.3, Dependents: deps}
		r := run(t, cfg, Replications(200))
		// Work 2e5 is 12500 whole intervals of 16 s.
		want, _ := model.DalyRuntime(model.RuntimeInput{Work: cfg.Work, Interval: 16, Cost: c.tc, MTTI: 100, Restart: 0.5 + 1.6 + 0.3})
		if c.n == 1 || c.tc < 0.1 {
			checkZ(t, fmt.Sprintf("uncoordinated, N = %d, φ = 1, t_c = %g", c.n, c.tc), r.ProcessSeconds, r.Replications, want)
			continue
		}
		if z := (r.ProcessSeconds.Mean - want) / se(r.ProcessSeconds, r.Replications); z > -zMax {
			t.Errorf("N = %d, φ = 1, t_c = %g: processes %.7g ± %.2g, Daly %.7g (z = %.1f): want them faster", c.n, c.tc, r.ProcessSeconds.Mean, r.ProcessSeconds.CI95, want, z)
		}
		if r.Seconds.Mean <= r.ProcessSeconds.Mean {
			t.Errorf("N = %d: job %g ≤ process mean %g, want the processes out of step", c.n, r.Seconds.Mean, r.ProcessSeconds.Mean)
		}
	}
}

func nonBlockingExample() Config {
	cfg := workedExample()
	cfg.Strategy = NonBlocking
	cfg.Cost = []float64{30, 30}
	cfg.FlushLatency, cfg.Alpha = 1500, 0.05
	return cfg
}

func uncoordinatedExample(t testing.TB) Config {
	p, err := UniformP(0.3125, 16)
	if err != nil {
		t.Fatal(err)
	}
	deps, err := DependentsFromP(p)
	if err != nil {
		t.Fatal(err)
	}
	return Config{Strategy: Uncoordinated, Work: 2e4, Levels: model.Levels{Rates: []float64{1e-2}, Cost: []float64{1.7}, Restart: []float64{1.6}},
		Schedule: model.Schedule{Interval: 31}, Detect: 0.5, Dependents: deps, LogOverhead: 0.03}
}

func TestValidate(t *testing.T) {
	base := workedExample
	cases := []struct {
		param string
		edit  func(*Config)
	}{
		{"work", func(c *Config) { c.Work = 0 }},
		{"work", func(c *Config) { c.Work = math.Inf(1) }},
		{"work", func(c *Config) { c.Work = 1e300 }},
		{"interval", func(c *Config) { c.Interval = -1 }},
		{"counts", func(c *Config) { c.Counts = nil }},
		{"counts", func(c *Config) { c.Counts = []int{-1} }},
		{"rates", func(c *Config) { c.Rates = []float64{0, 0} }},
		{"cost", func(c *Config) { c.Cost = []float64{30} }},
		{"restart", func(c *Config) { c.Restart = []float64{40, -1} }},
		{"detect", func(c *Config) { c.Detect = math.NaN() }},
		{"dist", func(c *Config) { c.Dist.Shape = -0.5 }},
		{"dist", func(c *Config) { c.Dist.Shape = 0.001 }},
		{"variant", func(c *Config) { c.L1ProtectedFirst = true; c.Strategy = NonBlocking }},
		{"flush-latency", func(c *Config) { c.FlushLatency = 10 }},
		{"alpha", func(c *Config) { c.Strategy = NonBlocking; c.Alpha = -1 }},
		{"rates", func(c *Config) { c.Strategy = Uncoordinated }},
		{"deps", func(c *Config) {
			c.Strategy, c.Rates, c.Cost, c.Restart, c.Counts = Uncoordinated, []float64{1e-3}, []float64{1}, []float64{1}, nil
		}},
		{"deps", func(c *Config) {
			c.Strategy, c.Rates, c.Cost, c.Restart, c.Counts = Uncoordinated, []float64{1e-3}, []float64{1}, []float64{1}, nil
			c.Dependents = [][]int{{1}, {1}}
		}},
		{"log-overhead", func(c *Config) { c.LogOverhead = -0.1 }},
		{"strategy", func(c *Config) { c.Strategy = 9 }},
	}
	for _, tc := range cases {
		cfg := base()
		tc.edit(&cfg)
		err := cfg.Validate()
		var pe *model.ParamError
		if !errors.As(err, &pe) || pe.Param != tc.param {
			t.Errorf("want a ParamError for %q, got %v", tc.param, err)
		}
	}
	cfg := nonBlockingExample()
	cfg.FlushLatency = 1e5
	if err := cfg.Validate(); !errors.Is(err, model.ErrInfeasible) {
		t.Errorf("a copy longer than the period: %v, want ErrInfeasible", err)
	}
	if _, err := Run(context.Background(), base(), Replications(1)); err == nil || !strings.Contains(err.Error(), "replications") {
		t.Errorf("one replication: %v", err)
	}
}

func TestCancelAndBudget(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Run(ctx, workedExample(), Replications(100)); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	// Failures every 10 s on average against 1000 s intervals: the job
	// practically never ends.
	cfg := Config{Work: 1e5, Levels: model.Levels{Rates: []float64{0.1}, Cost: []float64{1}, Restart: []float64{1}}, Schedule: model.Schedule{Interval: 1000}}
	if _, err := Run(context.Background(), cfg, Replications(4), MaxEvents(1e5)); !errors.Is(err, ErrTooLong) {
		t.Errorf("runaway job: %v, want ErrTooLong", err)
	}
	for _, strat := range []Config{nonBlockingExample(), uncoordinatedExample(t)} {
		strat.Rates = []float64{1, 1}[:strat.L()]
		if _, err := Run(context.Background(), strat, Replications(2), MaxEvents(1e4)); !errors.Is(err, ErrTooLong) {
			t.Errorf("%v runaway: %v, want ErrTooLong", strat.Strategy, err)
		}
	}
}

func TestProgress(t *testing.T) {
	var calls []int
	run(t, workedExample(), Replications(20), Workers(2), Progress(func(done, total int) {
		if total != 20 {
			t.Errorf("total %d", total)
		}
		calls = append(calls, done)
	}))
	if len(calls) != 3 || calls[len(calls)-1] != 20 {
		t.Errorf("progress calls %v, want 3 batches ending at 20", calls)
	}
	for i := 1; i < len(calls); i++ {
		if calls[i] <= calls[i-1] {
			t.Errorf("progress not increasing: %v", calls)
		}
	}
}

// The failure clock: means 1/rate for both families, Weibull shape 1 is the
// exponential draw for draw, shape 0.7 has the coefficient of variation
// √(Γ(1+2/k)/Γ(1+1/k)² − 1) ≈ 1.46.
func TestClockDraws(t *testing.T) {
	cfg := Config{Levels: model.Levels{Rates: []float64{1e-3}}}
	const n = 200000
	moments := func(shape float64) (mean, cv float64, xs []float64) {
		cfg.Dist.Shape = shape
		var c clock
		c.reset(&cfg, 11, 0)
		var s, s2 float64
		for range n {
			x := c.draw(0)
			xs = append(xs, x)
			s += x
			s2 += x * x
		}
		mean = s / n
		return mean, math.Sqrt(s2/n-mean*mean) / mean, xs
	}
	for _, k := range []float64{0, 0.7, 1.5} {
		mean, cv, _ := moments(k)
		wantCV := 1.0
		if k != 0 {
			g1, g2 := math.Gamma(1+1/k), math.Gamma(1+2/k)
			wantCV = math.Sqrt(g2/(g1*g1) - 1)
		}
		// The standard error of the mean is cv·1000/√n.
		if z := (mean - 1000) / (wantCV * 1000 / math.Sqrt(n)); math.Abs(z) > zMax {
			t.Errorf("shape %g: mean %g, want 1000 (z = %.2f)", k, mean, z)
		}
		if math.Abs(cv-wantCV) > 0.05*wantCV {
			t.Errorf("shape %g: coefficient of variation %.3f, want %.3f", k, cv, wantCV)
		}
	}
	_, _, e := moments(0)
	_, _, w := moments(1)
	if !reflect.DeepEqual(e, w) {
		t.Error("Weibull shape 1 differs from the exponential")
	}
}

func TestTQuantile(t *testing.T) {
	for _, c := range []struct {
		nu   int
		want float64
	}{{1, 12.7062}, {4, 2.7764}, {5, 2.5706}, {10, 2.2281}, {30, 2.0423}, {100, 1.9840}, {1000000, 1.9600}} {
		if got := TQuantile975(c.nu); math.Abs(got-c.want) > 2e-4*c.want {
			t.Errorf("t(0.975, %d) = %.5f, want %.4f", c.nu, got, c.want)
		}
	}
}

func TestDependencyStructures(t *testing.T) {
	deps, err := DependentsFromP([]int{3, 1, 2})
	if err != nil || !reflect.DeepEqual(deps, [][]int{{1, 2}, {}, {0}}) {
		t.Errorf("DependentsFromP = %v, %v", deps, err)
	}
	if _, err := DependentsFromP([]int{4, 1}); err == nil {
		t.Error("P(n) > N accepted")
	}
	g, err := model.ParseDependencyGraph(strings.NewReader("master: w1 w2\nw1: master\nw2: master master\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := DependentsFromGraph(g); !reflect.DeepEqual(got, [][]int{{1, 2}, {0}, {0}}) {
		t.Errorf("DependentsFromGraph = %v", got)
	}
	for _, c := range []struct {
		phi float64
		n   int
	}{{0.34375, 8}, {0.05, 100}, {1, 4}, {0.01, 10}, {0.5556, 9}} {
		p, err := UniformP(c.phi, c.n)
		if err != nil {
			t.Fatal(err)
		}
		got, err := model.Phi(p)
		if err != nil || math.Abs(got-c.phi) > 0.5/float64(c.n*c.n)+1e-12 && got != 1/float64(c.n) {
			t.Errorf("UniformP(%g, %d) = %v: φ = %g, %v", c.phi, c.n, p, got, err)
		}
	}
	if _, err := UniformP(0, 4); err == nil {
		t.Error("φ = 0 accepted")
	}
}

func TestLogOverheadFor(t *testing.T) {
	in := model.IntervalInput{Cost: 1.63, MTTI: 100, Restart: 1.643, Detect: 0.5, Phi: 1, LogProtect: 2.771}
	sigma := 16.3
	k, err := LogOverheadFor(in, sigma)
	if err != nil {
		t.Fatal(err)
	}
	useful := 100 - model.FialhoParallelOverhead(sigma, in)
	if math.Abs(k*useful-2.771) > 1e-12 {
		t.Errorf("κ = %g: κ·(α − overhead) = %g, want Δ_lp = 2.771", k, k*useful)
	}
	in.LogProtect = 200
	if _, err := LogOverheadFor(in, sigma); err == nil {
		t.Error("an overhead filling the window accepted")
	}
}

// The job is ⌈Work/Interval⌉ intervals, without a sliver of one at the end
// when Work is a multiple of Interval up to rounding.
func TestIntervals(t *testing.T) {
	for _, c := range []struct {
		work, interval float64
		k              int64
		last           float64
	}{
		{0.3, 0.1, 3, 0.1}, {0.1 * 6, 0.1, 6, 0.1}, {0.65, 0.1, 7, 0.05}, {5, 10, 1, 5}, {1e15, 1, 1e15, 1}, {1e15 + 0.5, 1, 1e15 + 1, 0.5},
	} {
		cfg := Config{Work: c.work, Schedule: model.Schedule{Interval: c.interval}}
		k, last := cfg.intervals()
		if k != c.k || math.Abs(last-c.last) > 1e-9*c.interval {
			t.Errorf("work %g, interval %g: %d intervals, the last of %g; want %d and %g", c.work, c.interval, k, last, c.k, c.last)
		}
	}
}

// One run against Daly's model at the failure rate it met (what ckpt demo
// reports): each replication's error is recomputed here from its own run
// time and failures, the statistics exist for one level only, and the
// error by chance shrinks as the job grows (about as 1/√(failures)).
func TestAppliedError(t *testing.T) {
	cfg := Config{Work: 7.7, Levels: model.Levels{Rates: []float64{1 / 2.5}, Cost: []float64{0.15}, Restart: []float64{0.5}},
		Schedule: model.Schedule{Interval: 0.75}}
	w := &worker{cfg: &cfg, co: newCoordinated(&cfg)}
	var stop atomic.Bool
	var sum, sumAbs float64
	const n = 400
	for r := range n {
		s, ok := w.replicate(1, r, &stop, 1e9)
		if !ok {
			t.Fatal("replication ran out of events")
		}
		eff := 0.75 / (0.75 + 0.15)
		if f := s.failures[0]; f > 0 {
			m := s.seconds / f
			eff = 0.75 / (m * math.Exp(0.5/m) * math.Expm1(0.9/m)) // eq. 1 per unit of work
		}
		want := 7.7/s.seconds/eff - 1
		if math.Abs(s.appliedErr-want) > 1e-12 || s.appliedAbsErr != math.Abs(s.appliedErr) {
			t.Fatalf("replication %d (%.4g s, %g failures): error %g, abs %g, want %g", r, s.seconds, s.failures[0], s.appliedErr, s.appliedAbsErr, want)
		}
		sum, sumAbs = sum+want, sumAbs+math.Abs(want)
	}
	res := run(t, cfg, Replications(n), Seed(1), Workers(2))
	if math.Abs(res.AppliedError.Mean-sum/n) > 1e-12 || math.Abs(res.AppliedAbsError.Mean-sumAbs/n) > 1e-12 {
		t.Errorf("Run: error %v abs %v, want the replications' means %g and %g", res.AppliedError, res.AppliedAbsError, sum/n, sumAbs/n)
	}
	if !(res.AppliedAbsError.Mean > 0.03 && res.AppliedAbsError.Mean < 0.1) {
		t.Errorf("mean |error| by chance %v at 7.7 s of work and M = 2.5 s, want a few percent", res.AppliedAbsError)
	}
	long := cfg
	long.Work = 100 * cfg.Work
	lr := run(t, long, Replications(n), Seed(1))
	if ratio := lr.AppliedAbsError.Mean / res.AppliedAbsError.Mean; !(ratio > 0.05 && ratio < 0.2) {
		t.Errorf("mean |error| by chance: %v at 100× the work against %v, ratio %.3g, want about 1/10", lr.AppliedAbsError, res.AppliedAbsError, ratio)
	}
	if two := run(t, workedExample(), Replications(8)); two.AppliedError != (Estimate{}) || two.AppliedAbsError != (Estimate{}) {
		t.Errorf("two levels: %v %v, want none", two.AppliedError, two.AppliedAbsError)
	}
}

// Observe sees every replication once, with the run time and failures the
// averages are made of.
func TestObserve(t *testing.T) {
	cfg := workedExample()
	const n = 40
	seen := make([]Sample, n)
	count := 0
	res := run(t, cfg, Replications(n), Seed(3), Workers(3), Observe(func(r int, s Sample) {
		count++
		if seen[r].Failures != nil {
			t.Errorf("replication %d observed twice", r)
		}
		seen[r] = s
	}))
	if count != n {
		t.Fatalf("observed %d replications, want %d", count, n)
	}
	var secs, f2 float64
	for _, s := range seen {
		secs += s.Seconds
		f2 += float64(s.Failures[1])
	}
	if math.Abs(secs/n-res.Seconds.Mean) > 1e-9*res.Seconds.Mean || math.Abs(f2/n-res.Failures[1].Mean) > 1e-12 {
		t.Errorf("observed means %g s, %g level-2 failures; Run's %v, %v", secs/n, f2/n, res.Seconds, res.Failures[1])
	}
}
