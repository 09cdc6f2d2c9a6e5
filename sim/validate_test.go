package sim

import (
	"fmt"
	"math"
	"testing"

	"github.com/ckpt/ckpt/model"
)

// The validation tests of issue 6: every model against the simulator, with
// tolerances from the simulation's own confidence intervals (zMax standard
// errors). Each logs a table (go test -v) that docs/MODELS.md quotes.

const day = 86400.0

// dalyExact is the exact expectation behind Daly's eq. 1 for a job of k
// intervals whose last has work last: each interval of length x (work plus
// checkpoint) takes e^{R/M}(e^{x/M} − 1)M in expectation. Eq. 1 itself
// counts T_s/τ intervals of full length, fractional ones included.
func dalyExact(in model.RuntimeInput, k int64, last float64) float64 {
	M := in.MTTI
	e := func(x float64) float64 { return M * math.Exp(in.Restart/M) * math.Expm1(x/M) }
	return float64(k-1)*e(in.Interval+in.Cost) + e(last+in.Cost)
}

// 003 §4.1: a 500-day application, MTTI 24 h and 6 h, checkpoint and
// restart 5 minutes, no detection latency, at Daly's interval as 003
// Table 1 prints it (first order: 115 and 55 min), and at half and twice
// that. Daly's eq. 1 is exact for what the simulator does (failures strike
// computation, checkpoints and restarts alike; a failure during a restart
// starts it again; every interval ends with a checkpoint), so it must agree
// within noise. 003 also compares the other models' overhead predictions:
// Young's is more than 15% off at 6 h.
func TestDalyEq1AgainstSimulation(t *testing.T) {
	const reps = 1000
	for _, M := range []float64{24 * 3600, 6 * 3600} {
		opt := model.DalyFirstOrder(300, M)
		for _, tau := range []float64{opt, opt / 2, 2 * opt} {
			in := model.RuntimeInput{Work: 500 * day, Interval: tau, Cost: 300, MTTI: M, Restart: 300}
			cfg := Config{Work: in.Work, Levels: model.Levels{Rates: []float64{1 / M}, Cost: []float64{300}, Restart: []float64{300}},
				Schedule: model.Schedule{Interval: tau}}
			r := run(t, cfg, Replications(reps), Seed(2024))
			k, last := cfg.intervals()
			exact := dalyExact(in, k, last)
			eq1, _ := model.DalyRuntime(in)
			z := checkZ(t, fmt.Sprintf("MTTI %gh, τ %g min", M/3600, tau/60), r.Seconds, reps, exact)
			// Eq. 1's fractional last interval differs from the exact
			// expectation by far less than the noise.
			if d := math.Abs(eq1 - exact); d > se(r.Seconds, reps) {
				t.Errorf("eq. 1 %g vs exact %g: %g apart, more than a standard error", eq1, exact, d)
			}
			over := r.Seconds.Mean - in.Work
			rel := func(model float64) float64 { return (model-in.Work)/over - 1 }
			young, gropp, fialho := model.YoungRuntime(in), model.GroppLuskRuntime(in), model.FialhoRuntime(in, 0)
			t.Logf("MTTI %2gh τ %6.2f min: simulated %.6g s ± %.2g, eq. 1 %.6g (z %+.2f, efficiency %.5f vs %.5f); overhead error: Daly %+.2f%%, Fialho %+.2f%%, Gropp %+.2f%%, Young %+.2f%%",
				M/3600, tau/60, r.Seconds.Mean, r.Seconds.CI95, eq1, z, r.Efficiency.Mean, in.Work/eq1,
				100*rel(eq1), 100*rel(fialho), 100*rel(gropp), 100*rel(young))
			if M == 6*3600 && tau == opt && rel(young) > -0.15 {
				t.Errorf("003 §4.1: Young's overhead is more than 15%% off at MTTI 6 h; here %+.1f%%", 100*rel(young))
			}
		}
	}
}

// markovCase is one row of SPEC-markov §9: a schedule, what SPEC's
// analytic column prints (0 when SPEC gives no parameters for the row and
// we chose our own), and the simulation.
type markovCase struct {
	name     string
	cfg      Config
	analytic float64
}

// sato returns the TSUBAME2.0 levels of SPEC §8 scaled by F (rates) and C
// (level-2 costs), blocking or non-blocking.
func sato(F, C float64, nonblocking bool) Config {
	lv := model.Levels{Rates: []float64{1.757e-5 * F, 1.3774e-6 * F}, Cost: []float64{72.5, 5104 * C}, Restart: []float64{72.5, 5104 * C}}
	cfg := Config{Levels: lv}
	if nonblocking {
		cfg.Strategy = NonBlocking
		cfg.Cost = []float64{72.5, 72.5}
		cfg.FlushLatency, cfg.Alpha = 6380*C, 0.00184
	}
	return cfg
}

func optimum(t *testing.T, cfg Config) Config {
	t.Helper()
	cfg.Schedule = model.Schedule{}
	cfg, _, err := Predict(cfg, 0)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func markovCases(t *testing.T) []markovCase {
	one := func(rate, interval, cost, restart float64) Config {
		return Config{Levels: model.Levels{Rates: []float64{rate}, Cost: []float64{cost}, Restart: []float64{restart}}, Schedule: model.Schedule{Interval: interval}}
	}
	we := workedExample()
	protected := workedExample()
	protected.L1ProtectedFirst = true
	// Three levels: SPEC §9 does not give its parameters; ours.
	three := func(v ...int) Config {
		return Config{Levels: model.Levels{Rates: []float64{2e-4, 5e-5, 5e-6}, Cost: []float64{30, 200, 1000}, Restart: []float64{40, 300, 1500}},
			Schedule: model.Schedule{Interval: 600, Counts: v}}
	}
	nb := func(flush float64) Config {
		c := nonBlockingExample()
		c.FlushLatency = flush
		return c
	}
	sato34 := sato(1, 1, true)
	sato34.Schedule = model.Schedule{Interval: 3500, Counts: []int{4}}
	return []markovCase{
		{"single level t=1000,c=60,r=120,λ=1e-4", one(1e-4, 1000, 60, 120), 0.883612},
		{"single level stress (λr = 0.2)", one(1e-3, 300, 50, 200), 0.586109},
		{"2-level blocking, worked example", we, 0.680047},
		{"same, L1-protected variant", protected, 0.692323},
		{"Sato blocking F=1,C=1 optimum", optimum(t, sato(1, 1, false)), 0.827314},
		{"Sato blocking F=10,C=1 optimum", optimum(t, sato(10, 1, false)), 0.393967},
		{"Sato blocking F=2,C=2 optimum", optimum(t, sato(2, 2, false)), 0.668382},
		{"3-level blocking V=[3,2] (our parameters)", three(3, 2), 0},
		{"3-level blocking V=[0,3] (our parameters)", three(0, 3), 0},
		{"3-level blocking V=[2,0] (our parameters)", three(2, 0), 0},
		{"non-blocking worked example (m=3<n)", nb(1500), 0.689474},
		{"non-blocking m = n", nb(3000), 0.629477},
		{"non-blocking m = 0", nb(0), 0.790938},
		{"Sato non-blocking F=1,C=1 optimum", optimum(t, sato(1, 1, true)), 0.927347},
		{"Sato non-blocking F=2,C=2 optimum", optimum(t, sato(2, 2, true)), 0.845391},
		{"Sato non-blocking F=10,C=1 optimum", optimum(t, sato(10, 1, true)), 0.622798},
		{"Sato non-blocking F=1,C=1, t=3500, v=4 (m=2<n)", sato34, 0.918759},
	}
}

// expectedJob is the models' exact expectation of a job of k whole
// periods: k·E_period for the blocking model (every period starts at a
// top-level checkpoint), E_R + (k−1)·E_N for the non-blocking one (the
// first period has no copy in flight, SPEC §5.4). It also returns the
// model's efficiency.
func expectedJob(t *testing.T, cfg Config, k int) (float64, float64) {
	t.Helper()
	_, n, err := Predict(cfg, 0)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Strategy != NonBlocking {
		return float64(k) * n.PeriodSeconds, n.Efficiency
	}
	first := cfg
	first.FlushLatency = 0
	_, r, err := Predict(first, 0)
	if err != nil {
		t.Fatal(err)
	}
	return r.PeriodSeconds + float64(k-1)*n.PeriodSeconds, n.Efficiency
}

// The Markov models (SPEC-markov §4, §5) against the simulation of their
// operational rules (§4.3, §5.3), on the rows of SPEC §9. Jobs are whole
// periods, long enough for about 2000 failures each.
func TestMarkovAgainstSimulation(t *testing.T) {
	const reps, failures = 400, 2000
	for _, c := range markovCases(t) {
		cfg := c.cfg
		period, eff := expectedJob(t, cfg, 1)
		if cfg.Strategy == NonBlocking {
			_, eff = expectedJob(t, cfg, 2)
		}
		if c.analytic != 0 && math.Abs(eff-c.analytic) > 1e-6 {
			t.Errorf("%s: model efficiency %.7f, SPEC §9 prints %.6f: wrong parameters?", c.name, eff, c.analytic)
		}
		total := 0.0
		for _, r := range cfg.Rates {
			total += r
		}
		k := int(math.Ceil(failures / (total * period)))
		cfg.Work = float64(k*cfg.Segments()) * cfg.Interval
		want, _ := expectedJob(t, cfg, k)
		r := run(t, cfg, Replications(reps), Seed(9))
		z := checkZ(t, c.name, r.Seconds, reps, want)
		// Reported like SPEC §9: efficiency, z = (MC − analytic)/s.e.
		simEff := r.Efficiency.Mean
		t.Logf("%-48s analytic %.6f  MC %.6f  s.e. %.1e  rel %+.1e  z %+.2f  (%d periods × %d replications)",
			c.name, eff, simEff, se(r.Efficiency, reps), simEff/eff-1, -z, k, reps)
	}
}

// Exponential versus Weibull failures. The models assume a Poisson process;
// with Weibull times between failures of shape 0.7 (the same mean; failures
// cluster, 1.46 times the exponential's spread) a failure often strikes soon
// after the previous one, near the checkpoint just restored, and loses
// little work: Daly's eq. 1 then overestimates the run time. The test
// asserts that direction for 003 §4.1's setting and logs the size; it also
// asserts it for the multi-level worked examples, blocking and
// non-blocking, where clustered failures also strike recoveries more often
// (escalations to level 2), which pulls the other way but less.
func TestWeibullAgainstExponentialModels(t *testing.T) {
	const reps = 300
	for _, M := range []float64{24 * 3600, 6 * 3600} {
		tau := model.DalyFirstOrder(300, M)
		in := model.RuntimeInput{Work: 500 * day, Interval: tau, Cost: 300, MTTI: M, Restart: 300}
		_, modelEff := model.DalyRuntime(in)
		for _, shape := range []float64{0.7, 0.5, 1.5} {
			cfg := Config{Work: in.Work, Levels: model.Levels{Rates: []float64{1 / M}, Cost: []float64{300}, Restart: []float64{300}},
				Schedule: model.Schedule{Interval: tau}, Dist: Dist{Shape: shape}}
			r := run(t, cfg, Replications(reps), Seed(77))
			z := (r.Efficiency.Mean - modelEff) / se(r.Efficiency, reps)
			t.Logf("MTTI %2gh τ %g min, Weibull %.1f: simulated efficiency %.5f ± %.5f, eq. 1 (exponential) %.5f: the model is off by %+.2f%% of efficiency (z %+.1f)",
				M/3600, tau/60, shape, r.Efficiency.Mean, r.Efficiency.CI95, modelEff, 100*(modelEff/r.Efficiency.Mean-1), z)
			if shape < 1 && z < zMax {
				t.Errorf("Weibull %g, MTTI %gh: simulated efficiency %.5f ± %.5f is not above eq. 1's %.5f beyond %d standard errors", shape, M/3600, r.Efficiency.Mean, r.Efficiency.CI95, modelEff, zMax)
			}
			if shape > 1 && z > -zMax {
				// Wear-out (k > 1) spaces failures out: the opposite.
				t.Errorf("Weibull %g, MTTI %gh: simulated efficiency %.5f ± %.5f is not below eq. 1's %.5f beyond %d standard errors", shape, M/3600, r.Efficiency.Mean, r.Efficiency.CI95, modelEff, zMax)
			}
		}
	}
	for _, c := range []markovCase{{"2-level worked example", workedExample(), 0}, {"non-blocking worked example", nonBlockingExample(), 0}} {
		_, modelEff := expectedJob(t, c.cfg, 2)
		cfg := c.cfg
		cfg.Work = 600 * 5 * 400
		cfg.Dist.Shape = 0.7
		r := run(t, cfg, Replications(reps), Seed(78))
		z := (r.Efficiency.Mean - modelEff) / se(r.Efficiency, reps)
		if z < zMax {
			t.Errorf("%s, Weibull 0.7: simulated efficiency %.5f ± %.5f is not above the model's %.5f beyond %d standard errors", c.name, r.Efficiency.Mean, r.Efficiency.CI95, modelEff, zMax)
		}
		t.Logf("%s, Weibull 0.7: simulated efficiency %.5f ± %.5f, Markov model (exponential) %.5f: off by %+.2f%% (z %+.1f)",
			c.name, r.Efficiency.Mean, r.Efficiency.CI95, modelEff, 100*(modelEff/r.Efficiency.Mean-1), z)
	}
}

// fialhoRow is a row of 003 Table 2 (α = 100 s, t_d = 0.5 s, Δ_lr = 0):
// N processes, each depending on itself and 4 neighbours (φ = 5/N, capped
// at 1, which is what the table's φ column is), or 003 Table 3's LU.
type fialhoRow struct {
	name           string
	procs, p       int
	tc, tl, lp, lr float64
}

var fialhoRows = []fialhoRow{
	{"Table 2, 4 processes", 4, 4, 1.630, 1.643, 2.771, 0},
	{"Table 2, 9 processes", 9, 5, 1.622, 1.596, 2.763, 0},
	{"Table 2, 16 processes", 16, 5, 1.691, 1.610, 2.765, 0},
	{"Table 2, 25 processes", 25, 5, 1.650, 1.634, 2.779, 0},
	{"Table 2, 16 (4×4)", 16, 5, 4.954, 5.131, 4.188, 0},
	{"Table 2, 36 (4×9)", 36, 5, 5.032, 5.199, 4.160, 0},
	{"Table 2, 64 (4×16)", 64, 5, 4.981, 5.287, 4.399, 0},
	{"Table 2, 100 (4×25)", 100, 5, 5.284, 5.330, 4.328, 0},
}

// Fialho's parallel model (003 eq. 10) against the uncoordinated
// simulation, at its own optimum (eq. 11), for 003 Table 2's processes.
//
// They disagree beyond noise, more as φ falls: eq. 10 counts the
// checkpoints of every process in α − T_r per window (eq. 4), as if every
// process spent T_r recovering, while only the failed process and the
// fraction φ that waits for it do; the others keep computing and
// checkpointing through the whole window. Counting them in α − φT_r
//
//	Overhead' = φT_r + (α − φT_r)·t_c/(σ + t_c) + Δ_lp
//
// removes most of the gap. The test asserts that finding: eq. 10
// underestimates the simulated overhead for φ < 1, and Overhead' is closer
// in every row. The job (its last process) ends later than the average
// process, which is what the model describes; that is logged too.
func TestFialhoParallelAgainstSimulation(t *testing.T) {
	const reps, alpha, detect, work = 200, 100.0, 0.5, 2e5
	for _, row := range fialhoRows {
		p, err := UniformP(float64(row.p)/float64(row.procs), row.procs)
		if err != nil {
			t.Fatal(err)
		}
		deps, _ := DependentsFromP(p)
		// At eq. 11's interval, with Δ_lp as κ: what ckpt simulate runs.
		cfg, pred, err := Predict(Config{Strategy: Uncoordinated, Work: work, Levels: model.Levels{Rates: []float64{1 / alpha}, Cost: []float64{row.tc}, Restart: []float64{row.tl}},
			Detect: detect, Dependents: deps, LogReplay: row.lr}, row.lp)
		if err != nil {
			t.Fatal(err)
		}
		phi, sigma, in := pred.Phi, cfg.Interval, ProcessInput(cfg, pred.Phi, row.lp)
		r := run(t, cfg, Replications(reps), Seed(3))

		// Overhead per MTTI window, from T = T_s α/(α − Overhead).
		T := r.ProcessSeconds
		simO := alpha * (1 - work/T.Mean)
		simSE := alpha * work * se(T, reps) / (T.Mean * T.Mean)
		eq10 := model.FialhoParallelOverhead(sigma, in)
		tr := detect + row.tl + sigma/2 + row.lr
		fixed := phi*tr + (alpha-phi*tr)*row.tc/(sigma+row.tc) + row.lp
		zEq10 := (eq10 - simO) / simSE
		t.Logf("%-22s φ %.4f σ %6.2f: overhead/window simulated %.3f ± %.3f, eq. 10 %.3f (%+.1f%%, z %+.0f), α − φT_r accounting %.3f (%+.1f%%); job ends %.2f%% after the mean process",
			row.name, phi, sigma, simO, 1.96*simSE, eq10, 100*(eq10/simO-1), zEq10, fixed, 100*(fixed/simO-1), 100*(r.Seconds.Mean/T.Mean-1))
		if phi < 1 {
			if zEq10 > -zMax {
				t.Errorf("%s: eq. 10 gives %.3f, simulated %.3f ± %.3f: expected an underestimate beyond noise", row.name, eq10, simO, 1.96*simSE)
			}
			if math.Abs(fixed-simO) >= math.Abs(eq10-simO) {
				t.Errorf("%s: counting checkpoints in α − φT_r (%.3f) is not closer to the simulation (%.3f) than eq. 10 (%.3f)", row.name, fixed, simO, eq10)
			}
		}
	}
}
