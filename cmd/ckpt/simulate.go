package main

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ckpt/ckpt/internal/report"
	"github.com/ckpt/ckpt/internal/units"
	"github.com/ckpt/ckpt/sim"
)

func newSimulateCmd() *cobra.Command {
	c := leaf("simulate --work D (--rates λ1[,λ2,…] | --mtti D) --cost c1[,…] --restart r1[,…] [flags]", "Discrete-event simulation of a job under failures, to check the models", simulateLong, simulateExample)
	f := addSimulateFlags(c)
	c.RunE = func(c *cobra.Command, _ []string) error {
		spec := f.spec()
		var run simRun
		var err error
		if run.cfg, run.pred, err = spec.Resolve(); err != nil {
			return simErr(err)
		}
		nw := *f.workers
		if nw == 0 {
			nw = runtime.GOMAXPROCS(0)
		}
		stderr := c.ErrOrStderr()
		start := time.Now()
		last := start
		progress := func(done, total int) {
			if now := time.Now(); now.Sub(last) >= simulateProgressEvery {
				last = now
				fmt.Fprintf(stderr, "ckpt simulate: %d/%d replications, %.0fs\n", done, total, now.Sub(start).Seconds())
			}
		}
		res, err := sim.Run(c.Context(), run.cfg, sim.Replications(*f.reps), sim.Seed(*f.seed), sim.Workers(nw), sim.Progress(progress))
		if err != nil {
			return simErr(spec.Explain(err))
		}
		elapsed := time.Since(start).Seconds()
		return printSimulation(c, run, res, *f.reps, *f.seed, nw, elapsed, *f.asJSON)
	}
	return c
}

const simulateLong = `Simulates a job of --work seconds of computation under random failures, in
many independent replications run in parallel, and reports its expected run
time, efficiency, lost work and restarts per level with 95% confidence
intervals, beside what the model of the same schedule predicts. It takes the
flags and units of 'ckpt model multilevel'. docs/MODELS.md ("Simulation")
states every rule the simulator follows.

Failures: each level i fails at rate λ_i (--rates; or --mtti M for one level,
λ = 1/M), on the job's wall clock, during computation, checkpoints and
recoveries alike. The times between two failures of a level are exponential
(--dist exp, the models' assumption) or Weibull of shape K with the same mean
(--dist weibull:0.7: failures cluster; shape 1 is the exponential).

Strategies:
  one rate               single level, Daly's setting (Oldfield et al. 2007, eq. 1): every
                         interval ends with a checkpoint; a failure rolls back
                         to the last one and restarts (--restart); a failure
                         during a restart starts it again.
  several rates          blocking multi-level (Moody et al.; docs/MODELS.md):
                         a level-i failure rolls back to the most recent
                         checkpoint of level ≥ i and recovers at that
                         checkpoint's restart cost; --counts v1,… places the
                         levels; --variant l1-protected as in 'model multilevel'.
  --nonblocking          two levels, the top one flushed in the background
                         for --flush-latency, slowing computation by
                         (1 + --alpha) meanwhile; rollbacks after Sato et al. 2012, §V.C.
  --strategy uncoordinated
                         uncoordinated checkpointing with pessimistic
                         receiver-based message logging (Fialho et al. 2011, §3.2): --rates
                         (or --mtti) is the failure rate of the whole
                         application, each failure strikes one process at
                         random; only it rolls back (detect, --restart, replay
                         --log-replay, re-execute its lost work), and the
                         processes that depend on it wait until it has caught
                         up. The dependencies come from --graph FILE (the
                         format of 'ckpt model phi'), --deps P1,P2,… (P(n) of
                         Fialho et al. 2011, eq. 12) or --phi F with --procs N. --log-protect
                         is Fialho et al.'s Δ_lp, the logging time per MTTI window.

--interval is the compute time between checkpoints. Omit it (and --counts)
to simulate the schedule the model finds optimal: the Markov optimiser, or
Fialho et al. 2011, eq. 11 for uncoordinated checkpointing. --detect adds a failure
detection latency to every recovery.

Results depend only on the flags, --seed included (not on --workers).
Efficiency is --work over the expected run time, as the models define it.
Runs that take more than a few seconds print their progress on stderr.`

const simulateExample = `  # Fialho et al. 2011, §4.1: 500 days, MTTI 6 h, checkpoint and restart 5 min, Daly's interval
  ckpt simulate --work 500d --mtti 6h --cost 5m --restart 5m --interval 55m
  # the same with clustered failures
  ckpt simulate --work 500d --mtti 6h --cost 5m --restart 5m --interval 55m --dist weibull:0.7
  # a worked example of the Markov models, blocking then non-blocking
  ckpt simulate --work 1000h --rates 2e-4,5e-5 --cost 30,400 --restart 40,500 --interval 600 --counts 4 --json
  ckpt simulate --work 1000h --rates 2e-4,5e-5 --cost 30,30 --restart 40,500 --interval 600 --counts 4 \
      --nonblocking --flush-latency 1500 --alpha 0.05
  # Fialho et al. 2011, Table 2, 16 processes (each waited for by 4 others), at eq. 11's interval
  ckpt simulate --strategy uncoordinated --work 2e5 --mtti 100 --cost 1.691 --restart 1.61 \
      --detect 0.5 --phi 0.3125 --procs 16 --log-protect 2.765`

// simulateFlags are the flags of ckpt simulate.
type simulateFlags struct {
	fs                                                     *pflag.FlagSet
	work, mtti, interval, flushLatency, alpha, detect, phi *quantity
	logProtect, logReplay                                  *quantity
	rates, cost, restart                                   *list
	counts                                                 intList
	variant, dist, strategy, deps, graph                   *string
	nonblocking, asJSON                                    *bool
	procs, reps, workers                                   *int
	seed                                                   *uint64
}

func addSimulateFlags(c *cobra.Command) *simulateFlags {
	fs := c.Flags()
	f := &simulateFlags{fs: fs}
	f.work = durationFlag(fs, "work", "failure-free compute time of the job T_s (required, > 0)")
	f.rates = listFlag(fs, "rates", "rates", units.ParseRate, "failure rate of each level, per second (or --mtti)")
	f.mtti = durationFlag(fs, "mtti", "mean time to interrupt, for one level: --rates 1/MTTI")
	f.cost = listFlag(fs, "cost", "durations", units.ParseDuration, "checkpoint cost of each level (required, > 0)")
	f.restart = listFlag(fs, "restart", "durations", units.ParseDuration, "restart cost of each level (required, ≥ 0; t_l when uncoordinated)")
	f.interval = durationFlag(fs, "interval", "compute time between checkpoints (omit to use the model's optimum)")
	fs.Var(&f.counts, "counts", "level-i checkpoints between level-(i+1) checkpoints, one per level below the top")
	f.variant = fs.String("variant", "moody", "blocking: moody, or l1-protected (two levels)")
	f.nonblocking = fs.Bool("nonblocking", false, "two-level non-blocking checkpointing: flush in the background")
	f.flushLatency = durationFlag(fs, "flush-latency", "duration of the background copy ℓ_2 (with --nonblocking)")
	f.alpha = numberFlag(fs, "alpha", "slowdown of computation while a copy runs α (with --nonblocking, ≥ 0, default 0)")
	f.detect = durationFlag(fs, "detect", "failure detection latency t_d, added to every recovery (≥ 0, default 0)")
	f.dist = fs.String("dist", "exp", "times between failures: exp, or weibull:SHAPE with the same mean")
	f.strategy = fs.String("strategy", "coordinated", "coordinated (one or more levels, blocking or --nonblocking) or uncoordinated")
	f.phi = numberFlag(fs, "phi", "dependency factor φ in (0, 1] (uncoordinated, with --procs; see 'ckpt model phi')")
	f.procs = fs.Int("procs", 0, "number of processes (uncoordinated, with --phi)")
	f.deps = fs.String("deps", "", "P(n) of each process, comma-separated (uncoordinated)")
	f.graph = fs.String("graph", "", "file of who waits for whom (uncoordinated; format of 'ckpt model phi')")
	f.logProtect = durationFlag(fs, "log-protect", "message-logging time per MTTI window Δ_lp (uncoordinated, ≥ 0)")
	f.logReplay = durationFlag(fs, "log-replay", "log replay time after a failure Δ_lr (uncoordinated, ≥ 0)")
	f.reps = fs.Int("replications", 1000, "independent replications (≥ 2)")
	f.seed = fs.Uint64("seed", 1, "seed of the failures")
	f.workers = fs.Int("workers", 0, "goroutines running replications (default: every core); the results do not depend on it")
	f.asJSON = jsonFlag(c)
	return f
}

// simulateProgressEvery is how often a run reports its progress on stderr;
// runs shorter than that print nothing there.
var simulateProgressEvery = 2 * time.Second

// simRun is a validated simulation and what its model predicts.
type simRun struct {
	cfg  sim.Config
	pred sim.Prediction
}

// spec is the simulation the flags describe, for sim.Spec.Resolve.
func (f *simulateFlags) spec() sim.Spec {
	g := func(q *quantity) sim.Given { return sim.Given{V: q.v, Set: q.set} }
	gl := func(l *list) sim.GivenList { return sim.GivenList{V: l.v, Set: l.set} }
	return sim.Spec{Work: g(f.work), MTTI: g(f.mtti), Interval: g(f.interval), FlushLatency: g(f.flushLatency),
		Alpha: g(f.alpha), Detect: g(f.detect), Phi: g(f.phi), LogProtect: g(f.logProtect), LogReplay: g(f.logReplay),
		Rates: gl(f.rates), Cost: gl(f.cost), Restart: gl(f.restart), Counts: sim.GivenInts{V: f.counts.v, Set: f.counts.set},
		Variant: *f.variant, Dist: *f.dist, Strategy: *f.strategy, NonBlocking: *f.nonblocking,
		Procs: *f.procs, ProcsSet: f.fs.Changed("procs"), Deps: *f.deps, DepsSet: f.fs.Changed("deps"),
		Graph: *f.graph, GraphSet: f.fs.Changed("graph"), ReadGraph: readGraph, Replications: *f.reps, Workers: *f.workers}
}

// simErr turns an error of sim.Spec into a usage error naming the flag;
// a replication over its event budget (sim.ErrTooLong) stays a failure.
func simErr(err error) error {
	var se *sim.SpecError
	if errors.As(err, &se) {
		return usageError{err}
	}
	return modelErr(err)
}

func printSimulation(c *cobra.Command, run simRun, res sim.Result, reps int, seed uint64, workers int, elapsed float64, asJSON bool) error {
	cfg := run.cfg
	L := cfg.L()
	eventRate := float64(res.Events) / elapsed
	w := c.OutOrStdout()
	if asJSON {
		return writeJSON(w, newSimulateReport(run, res, reps, seed, workers, eventRate))
	}

	t := newTable(w)
	pm := func(e sim.Estimate, f func(float64) string) string {
		ci := e.CI95
		if ci < 1e-9*math.Abs(e.Mean) {
			ci = 0 // the same in every replication, up to rounding
		}
		return fmt.Sprintf("%s ± %s", f(e.Mean), f(ci))
	}
	dur := func(x float64) string { return units.FormatDuration(x) }
	desc := fmt.Sprintf("%s, %d levels", run.pred.Kind, L)
	if L == 1 {
		desc = run.pred.Kind
	}
	if cfg.Strategy == sim.Uncoordinated {
		desc = fmt.Sprintf("uncoordinated, %d processes, φ = %.4g", len(cfg.Dependents), run.pred.Phi)
	}
	t.row("simulated", fmt.Sprintf("%s; failures %s; %d replications, seed %d", desc, cfg.Dist, reps, seed))
	sched := fmt.Sprintf("interval %s (%s)", dur(cfg.Interval), sec(cfg.Interval))
	if len(cfg.Counts) > 0 {
		sched += fmt.Sprintf(", counts %v", cfg.Counts)
	}
	if run.pred.Optimized {
		sched += ", the model's optimum"
	}
	if cfg.Strategy == sim.NonBlocking {
		sched += fmt.Sprintf(", the copy spans %d segments", run.pred.Incomplete)
	}
	t.row("schedule", sched)
	t.row("run time", fmt.Sprintf("%s (95%% interval), for %s of work", pm(res.Seconds, dur), dur(cfg.Work)))
	t.row("efficiency", fmt.Sprintf("%.6f ± %.6f", res.Efficiency.Mean, res.Efficiency.CI95))
	if cfg.Strategy == sim.Uncoordinated {
		t.row("per process", fmt.Sprintf("run time %s, efficiency %.6f ± %.6f, waiting %s", pm(res.ProcessSeconds, dur), res.ProcessEfficiency.Mean, res.ProcessEfficiency.CI95, pm(res.Wait, dur)))
	}
	t.row("lost work", pm(res.Lost, dur))
	t.row("recovering", pm(res.Restart, dur))
	t.row("checkpointing", pm(res.Checkpoint, dur))
	for l := 0; l < L; l++ {
		t.row(fmt.Sprintf("level %d", l+1), fmt.Sprintf("%.1f ± %.1f failures, %.1f ± %.1f restarts", res.Failures[l].Mean, res.Failures[l].CI95, res.Restarts[l].Mean, res.Restarts[l].CI95))
	}
	off, inside := sim.Agreement(cfg, run.pred, res)
	verdict := fmt.Sprintf("off by %+.2f%% of the simulated efficiency", 100*off)
	if inside {
		verdict = "inside the simulation's 95% interval"
	}
	assumes := ""
	if cfg.Dist.Weibull() {
		assumes = "; the model assumes exponential failures"
	}
	t.row("model", fmt.Sprintf("%s: efficiency %.6f, %s%s", run.pred.Model, run.pred.Efficiency, verdict, assumes))
	if single(cfg) {
		t.row("one run", fmt.Sprintf("against the model at the failure rate it met: error %+.2f%% on average, %.2f%% in absolute value (chance alone)",
			100*res.AppliedError.Mean, 100*res.AppliedAbsError.Mean))
	}
	t.row("speed", fmt.Sprintf("%.3g events in %.2fs on %d workers (%.3g events/s)", float64(res.Events), elapsed, workers, eventRate))
	return t.flush()
}

// simulateReport is ckpt simulate --json.
type simulateReport struct {
	Strategy              string         `json:"strategy"`
	Dist                  string         `json:"dist"`
	Levels                int            `json:"levels"`
	WorkSeconds           report.Float   `json:"work_seconds"`
	IntervalSeconds       report.Float   `json:"interval_seconds"`
	Counts                []int          `json:"counts"`
	Optimized             bool           `json:"optimized"`
	Replications          int            `json:"replications"`
	Seed                  uint64         `json:"seed"`
	ExpectedSeconds       report.Float   `json:"expected_seconds"`
	ExpectedSecondsCI95   report.Float   `json:"expected_seconds_ci95"`
	Efficiency            report.Float   `json:"efficiency"`
	EfficiencyCI95        report.Float   `json:"efficiency_ci95"`
	LostSeconds           report.Float   `json:"lost_seconds"`
	LostSecondsCI95       report.Float   `json:"lost_seconds_ci95"`
	RestartSeconds        report.Float   `json:"restart_seconds"`
	RestartSecondsCI95    report.Float   `json:"restart_seconds_ci95"`
	CheckpointSeconds     report.Float   `json:"checkpoint_seconds"`
	CheckpointSecondsCI95 report.Float   `json:"checkpoint_seconds_ci95"`
	Failures              []report.Float `json:"failures"`
	FailuresCI95          []report.Float `json:"failures_ci95"`
	Restarts              []report.Float `json:"restarts"`
	RestartsCI95          []report.Float `json:"restarts_ci95"`
	Model                 string         `json:"model"`
	ModelEfficiency       report.Float   `json:"model_efficiency"`
	ModelExpectedSeconds  report.Float   `json:"model_expected_seconds"`
	IncompleteSegments    *int           `json:"incomplete_segments,omitempty"` // non-blocking
	*appliedReport                       // one level
	*uncoordinatedReport                 // uncoordinated
	Events                int64          `json:"events"`
	EventsPerSecond       report.Float   `json:"events_per_second"`
	Workers               int            `json:"workers"`
}

// appliedReport is what ckpt simulate --json adds for one level: one run
// against Daly's model at the failure rate it met, as ckpt demo compares
// (sim.Result.AppliedError).
type appliedReport struct {
	AppliedErrorMean        report.Float `json:"applied_error_mean"`
	AppliedErrorMeanCI95    report.Float `json:"applied_error_mean_ci95"`
	AppliedErrorMeanAbs     report.Float `json:"applied_error_mean_abs"`
	AppliedErrorMeanAbsCI95 report.Float `json:"applied_error_mean_abs_ci95"`
}

// single is whether cfg has the one-level statistics of sim.Result.
func single(cfg sim.Config) bool { return cfg.Strategy == sim.Coordinated && cfg.L() == 1 }

// uncoordinatedReport is what ckpt simulate --json adds for uncoordinated
// checkpointing.
type uncoordinatedReport struct {
	Processes             int          `json:"processes"`
	Phi                   report.Float `json:"phi"`
	LogOverhead           report.Float `json:"log_overhead"`
	ProcessSeconds        report.Float `json:"process_seconds"`
	ProcessSecondsCI95    report.Float `json:"process_seconds_ci95"`
	ProcessEfficiency     report.Float `json:"process_efficiency"`
	ProcessEfficiencyCI95 report.Float `json:"process_efficiency_ci95"`
	WaitSeconds           report.Float `json:"wait_seconds"`
	WaitSecondsCI95       report.Float `json:"wait_seconds_ci95"`
}

func newSimulateReport(run simRun, res sim.Result, reps int, seed uint64, workers int, eventRate float64) simulateReport {
	cfg, f := run.cfg, func(x float64) report.Float { return report.Float(x) }
	means := func(es []sim.Estimate) (m, ci []report.Float) {
		for _, e := range es {
			m, ci = append(m, f(e.Mean)), append(ci, f(e.CI95))
		}
		return m, ci
	}
	r := simulateReport{Strategy: run.pred.Kind, Dist: cfg.Dist.String(), Levels: cfg.L(), WorkSeconds: f(cfg.Work),
		IntervalSeconds: f(cfg.Interval), Counts: cfg.Counts, Optimized: run.pred.Optimized, Replications: reps, Seed: seed,
		ExpectedSeconds: f(res.Seconds.Mean), ExpectedSecondsCI95: f(res.Seconds.CI95),
		Efficiency: f(res.Efficiency.Mean), EfficiencyCI95: f(res.Efficiency.CI95),
		LostSeconds: f(res.Lost.Mean), LostSecondsCI95: f(res.Lost.CI95),
		RestartSeconds: f(res.Restart.Mean), RestartSecondsCI95: f(res.Restart.CI95),
		CheckpointSeconds: f(res.Checkpoint.Mean), CheckpointSecondsCI95: f(res.Checkpoint.CI95),
		Model: run.pred.Model, ModelEfficiency: f(run.pred.Efficiency), ModelExpectedSeconds: f(cfg.Work / run.pred.Efficiency),
		Events: res.Events, EventsPerSecond: f(eventRate), Workers: workers}
	r.Failures, r.FailuresCI95 = means(res.Failures)
	r.Restarts, r.RestartsCI95 = means(res.Restarts)
	if cfg.Strategy == sim.NonBlocking {
		r.IncompleteSegments = &run.pred.Incomplete
	}
	if single(cfg) {
		r.appliedReport = &appliedReport{AppliedErrorMean: f(res.AppliedError.Mean), AppliedErrorMeanCI95: f(res.AppliedError.CI95),
			AppliedErrorMeanAbs: f(res.AppliedAbsError.Mean), AppliedErrorMeanAbsCI95: f(res.AppliedAbsError.CI95)}
	}
	if cfg.Strategy == sim.Uncoordinated {
		r.uncoordinatedReport = &uncoordinatedReport{Processes: len(cfg.Dependents), Phi: f(run.pred.Phi), LogOverhead: f(cfg.LogOverhead),
			ProcessSeconds: f(res.ProcessSeconds.Mean), ProcessSecondsCI95: f(res.ProcessSeconds.CI95),
			ProcessEfficiency: f(res.ProcessEfficiency.Mean), ProcessEfficiencyCI95: f(res.ProcessEfficiency.CI95),
			WaitSeconds: f(res.Wait.Mean), WaitSecondsCI95: f(res.Wait.CI95)}
	}
	return r
}
