package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ckpt/ckpt/internal/inject"
	"github.com/ckpt/ckpt/internal/units"
	"github.com/ckpt/ckpt/model"
	"github.com/ckpt/ckpt/sim"
)

func newSimulateCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "simulate --work D (--rates λ1[,λ2,…] | --mtti D) --cost c1[,…] --restart r1[,…] [flags]",
		Short: "Discrete-event simulation of a job under failures, to check the models",
		Long: `Simulates a job of --work seconds of computation under random failures, in
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
Runs that take more than a few seconds print their progress on stderr.`,
		Example: `  # Fialho et al. 2011, §4.1: 500 days, MTTI 6 h, checkpoint and restart 5 min, Daly's interval
  ckpt simulate --work 500d --mtti 6h --cost 5m --restart 5m --interval 55m
  # the same with clustered failures
  ckpt simulate --work 500d --mtti 6h --cost 5m --restart 5m --interval 55m --dist weibull:0.7
  # a worked example of the Markov models, blocking then non-blocking
  ckpt simulate --work 1000h --rates 2e-4,5e-5 --cost 30,400 --restart 40,500 --interval 600 --counts 4 --json
  ckpt simulate --work 1000h --rates 2e-4,5e-5 --cost 30,30 --restart 40,500 --interval 600 --counts 4 \
      --nonblocking --flush-latency 1500 --alpha 0.05
  # Fialho et al. 2011, Table 2, 16 processes (each waited for by 4 others), at eq. 11's interval
  ckpt simulate --strategy uncoordinated --work 2e5 --mtti 100 --cost 1.691 --restart 1.61 \
      --detect 0.5 --phi 0.3125 --procs 16 --log-protect 2.765`,
		Args: cobra.NoArgs,
	}
	fs := c.Flags()
	work := durationFlag(fs, "work", "failure-free compute time of the job T_s (required, > 0)")
	rates := listFlag(fs, "rates", "rates", units.ParseRate, "failure rate of each level, per second (or --mtti)")
	mtti := durationFlag(fs, "mtti", "mean time to interrupt, for one level: --rates 1/MTTI")
	cost := listFlag(fs, "cost", "durations", units.ParseDuration, "checkpoint cost of each level (required, > 0)")
	restart := listFlag(fs, "restart", "durations", units.ParseDuration, "restart cost of each level (required, ≥ 0; t_l when uncoordinated)")
	interval := durationFlag(fs, "interval", "compute time between checkpoints (omit to use the model's optimum)")
	var counts intList
	fs.Var(&counts, "counts", "level-i checkpoints between level-(i+1) checkpoints, one per level below the top")
	variant := fs.String("variant", "moody", "blocking: moody, or l1-protected (two levels)")
	nonblocking := fs.Bool("nonblocking", false, "two-level non-blocking checkpointing: flush in the background")
	flushLatency := durationFlag(fs, "flush-latency", "duration of the background copy ℓ_2 (with --nonblocking)")
	alpha := numberFlag(fs, "alpha", "slowdown of computation while a copy runs α (with --nonblocking, ≥ 0, default 0)")
	detect := durationFlag(fs, "detect", "failure detection latency t_d, added to every recovery (≥ 0, default 0)")
	dist := fs.String("dist", "exp", "times between failures: exp, or weibull:SHAPE with the same mean")
	strategy := fs.String("strategy", "coordinated", "coordinated (one or more levels, blocking or --nonblocking) or uncoordinated")
	phi := numberFlag(fs, "phi", "dependency factor φ in (0, 1] (uncoordinated, with --procs; see 'ckpt model phi')")
	procs := fs.Int("procs", 0, "number of processes (uncoordinated, with --phi)")
	deps := fs.String("deps", "", "P(n) of each process, comma-separated (uncoordinated)")
	graph := fs.String("graph", "", "file of who waits for whom (uncoordinated; format of 'ckpt model phi')")
	logProtect := durationFlag(fs, "log-protect", "message-logging time per MTTI window Δ_lp (uncoordinated, ≥ 0)")
	logReplay := durationFlag(fs, "log-replay", "log replay time after a failure Δ_lr (uncoordinated, ≥ 0)")
	reps := fs.Int("replications", 1000, "independent replications (≥ 2)")
	seed := fs.Uint64("seed", 1, "seed of the failures")
	workers := fs.Int("workers", 0, "goroutines running replications (default: every core); the results do not depend on it")
	asJSON := jsonFlag(c)

	c.RunE = func(c *cobra.Command, _ []string) error {
		if err := require(req{"work", work}); err != nil {
			return err
		}
		if rates.set == mtti.set {
			return usagef("give --rates (one entry per level) or --mtti (one level), not both or neither")
		}
		if mtti.set {
			if !(mtti.v > 0) || math.IsInf(mtti.v, 0) {
				return usagef("--mtti: must be a finite number > 0 (got %g)", mtti.v)
			}
			rates.v = []float64{1 / mtti.v}
		}
		for _, l := range []struct {
			name string
			set  bool
		}{{"cost", cost.set}, {"restart", restart.set}} {
			if !l.set {
				return usagef("--%s is required (one entry per level)", l.name)
			}
		}
		cfg := sim.Config{Work: work.v, Levels: model.Levels{Rates: rates.v, Cost: cost.v, Restart: restart.v}, Detect: detect.v}
		rateFlag := "rates"
		if mtti.set {
			rateFlag = "mtti"
		}
		if err := cfg.Levels.Validate(); err != nil {
			return simErr(err, rateFlag)
		}
		if err := checkNonNegative(detect, "detect"); err != nil {
			return err
		}
		d, err := inject.ParseDist(*dist)
		if err != nil {
			var fe *inject.FlagError
			if errors.As(err, &fe) {
				return usagef("--dist %q: %s", *dist, fe.Reason)
			}
			return usagef("--dist: %v", err)
		}
		if d.Family == inject.Weibull {
			cfg.Dist.Shape = d.Shape
		}
		if *reps < 2 || *reps > 1e8 {
			return usagef("--replications: between 2 and 10⁸ (got %d)", *reps)
		}
		if *workers < 0 {
			return usagef("--workers: must be ≥ 0 (got %d)", *workers)
		}

		uncoordinatedOnly := []struct {
			name string
			set  bool
		}{{"phi", phi.set}, {"procs", fs.Changed("procs")}, {"deps", fs.Changed("deps")}, {"graph", fs.Changed("graph")}, {"log-protect", logProtect.set}, {"log-replay", logReplay.set}}
		var run simRun
		switch *strategy {
		case "coordinated":
			for _, f := range uncoordinatedOnly {
				if f.set {
					return usagef("--%s: only used with --strategy uncoordinated", f.name)
				}
			}
			run, err = coordinatedRun(cfg, interval, &counts, *variant, *nonblocking, flushLatency, alpha)
		case "uncoordinated":
			switch {
			case *nonblocking:
				return usagef("--nonblocking: not with --strategy uncoordinated")
			case counts.set:
				return usagef("--counts: uncoordinated checkpointing has one level")
			case *variant != "moody":
				return usagef("--variant: applies to coordinated blocking checkpointing only")
			}
			run, err = uncoordinatedRun(cfg, interval, rateFlag, phi, *procs, fs.Changed("procs"), *deps, *graph, logProtect, logReplay)
		default:
			return usagef("--strategy: unknown strategy %q (use coordinated or uncoordinated)", *strategy)
		}
		if err != nil {
			return err
		}
		run.cfg.Dist = cfg.Dist
		if err := run.cfg.Validate(); err != nil {
			return simErr(err, rateFlag)
		}
		if ev := run.eventsPerReplication(); ev > 1e9 {
			return usagef("--work: a replication would simulate about %.2g events (the model's efficiency for this schedule is %.3g: failures come about as fast as the job progresses); shorten --work or change the schedule", ev, run.modelEff)
		}

		nw := *workers
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
		res, err := sim.Run(c.Context(), run.cfg, sim.Replications(*reps), sim.Seed(*seed), sim.Workers(nw), sim.Progress(progress))
		if err != nil {
			return simErr(err, rateFlag)
		}
		elapsed := time.Since(start).Seconds()
		return printSimulation(c, run, res, *reps, *seed, nw, elapsed, *asJSON)
	}
	return c
}

// simulateProgressEvery is how often a run reports its progress on stderr;
// runs shorter than that print nothing there.
var simulateProgressEvery = 2 * time.Second

// simRun is a validated simulation and what the models say about it.
type simRun struct {
	cfg        sim.Config
	kind       string // single-level, blocking, nonblocking, uncoordinated
	optimized  bool
	incomplete int     // non-blocking: m
	modelName  string  // the model the simulation is compared with
	modelEff   float64 // its efficiency for this schedule
	phi        float64 // uncoordinated
}

// eventsPerReplication estimates a replication's events from the model:
// the intervals, plus two events per failure over the expected run time.
// Uncoordinated: each failure touches its process and its dependents.
func (r simRun) eventsPerReplication() float64 {
	if !(r.modelEff > 0) {
		return math.Inf(1)
	}
	total := 0.0
	for _, x := range r.cfg.Rates {
		total += x
	}
	failures := total * r.cfg.Work / r.modelEff
	if r.cfg.Strategy == sim.Uncoordinated {
		deps := 0
		for _, d := range r.cfg.Dependents {
			deps += len(d)
		}
		return failures * (1 + float64(deps)/float64(len(r.cfg.Dependents)))
	}
	return r.cfg.Work/r.cfg.Interval + 2*failures
}

func coordinatedRun(cfg sim.Config, interval *quantity, counts *intList, variant string, nonblocking bool, flushLatency, alpha *quantity) (simRun, error) {
	run := simRun{cfg: cfg}
	L := cfg.L()
	if counts.set && !interval.set {
		return run, usagef("--counts: give --interval too, or neither to use the model's optimum")
	}
	if interval.set && !counts.set && L > 1 {
		return run, usagef("--interval: with %d levels give --counts too (%d entries), or neither to use the model's optimum", L, L-1)
	}
	opt := model.BlockingOptions{}
	switch variant {
	case "moody":
	case "l1-protected":
		if nonblocking {
			return run, usagef("--variant: applies to the blocking model only")
		}
		if L != 2 {
			return run, usagef("--variant: l1-protected is defined for two levels (got %d rates)", L)
		}
		opt.L1ProtectedFirst = true
	default:
		return run, usagef("--variant: unknown variant %q (use moody or l1-protected)", variant)
	}
	if !nonblocking && (flushLatency.set || alpha.set) {
		name := "flush-latency"
		if alpha.set {
			name = "alpha"
		}
		return run, usagef("--%s: only used with --nonblocking", name)
	}
	if interval.set {
		if !(interval.v > 0) {
			return run, usagef("--interval: must be a finite number > 0 (got %g)", interval.v)
		}
		run.cfg.Schedule = model.Schedule{Interval: interval.v, Counts: counts.v}
		if run.cfg.Counts == nil {
			run.cfg.Counts = []int{}
		}
	}
	run.optimized = !interval.set
	var res model.MultilevelResult
	var err error
	if nonblocking {
		if L != 2 {
			return run, usagef("--nonblocking: the non-blocking model has exactly two levels (got %d rates)", L)
		}
		if !flushLatency.set {
			return run, usagef("--flush-latency is required with --nonblocking")
		}
		run.cfg.Strategy = sim.NonBlocking
		run.cfg.FlushLatency, run.cfg.Alpha = flushLatency.v, alpha.v
		run.kind, run.modelName = "nonblocking", "Markov model, non-blocking (docs/MODELS.md)"
		nb := model.NonBlocking{Levels: cfg.Levels, FlushLatency: flushLatency.v, Alpha: alpha.v}
		if run.optimized {
			res, err = nb.Optimize()
		} else {
			res, err = nb.Evaluate(run.cfg.Schedule)
		}
	} else {
		run.cfg.L1ProtectedFirst = opt.L1ProtectedFirst
		run.kind, run.modelName = "blocking", "Markov model, blocking (docs/MODELS.md)"
		if L == 1 {
			run.kind, run.modelName = "single-level", "Daly, as in Oldfield et al. 2007, eq. 1"
		}
		if run.optimized {
			res, err = model.OptimizeBlocking(cfg.Levels, opt)
		} else {
			res, err = model.Blocking(cfg.Levels, run.cfg.Schedule, opt)
		}
	}
	if err != nil {
		return run, modelErr(err)
	}
	run.cfg.Schedule = res.Schedule
	run.modelEff = res.Efficiency
	run.incomplete = res.Incomplete
	return run, nil
}

// maxDependencies bounds φ·N², the dependency entries of --phi/--procs
// (about 8 bytes each).
const maxDependencies = 64 << 20

func uncoordinatedRun(cfg sim.Config, interval *quantity, rateFlag string, phi *quantity, procs int, procsSet bool, deps, graph string, logProtect, logReplay *quantity) (simRun, error) {
	run := simRun{cfg: cfg, kind: "uncoordinated", modelName: "Fialho et al. 2011, eq. 10 (per process)"}
	run.cfg.Strategy = sim.Uncoordinated
	if cfg.L() != 1 {
		return run, usagef("--rates: uncoordinated checkpointing has one level: give the failure rate of the whole application (got %d rates)", cfg.L())
	}
	for _, q := range []struct {
		name string
		q    *quantity
	}{{"log-protect", logProtect}, {"log-replay", logReplay}} {
		if err := checkNonNegative(q.q, q.name); err != nil {
			return run, err
		}
	}
	var p []int
	given := 0
	for _, s := range []bool{phi.set || procsSet, deps != "", graph != ""} {
		if s {
			given++
		}
	}
	if given != 1 {
		return run, usagef("give the dependencies once: --phi F with --procs N, --deps P1,P2,…, or --graph FILE")
	}
	var err error
	switch {
	case deps != "":
		for i, s := range strings.Split(deps, ",") {
			s = strings.TrimSpace(s)
			n, err := strconv.Atoi(s)
			if err != nil {
				return run, usagef("--deps: element %d (%q) is not a whole number", i+1, s)
			}
			p = append(p, n)
		}
		if run.cfg.Dependents, err = sim.DependentsFromP(p); err != nil {
			return run, simErr(err, rateFlag)
		}
	case graph != "":
		f, err := os.Open(graph)
		if err != nil {
			return run, usagef("--graph: %v", err)
		}
		defer f.Close()
		g, err := model.ParseDependencyGraph(f)
		if err != nil {
			return run, usagef("--graph %s: %v", graph, err)
		}
		p = g.P()
		run.cfg.Dependents = sim.DependentsFromGraph(g)
	default:
		if !phi.set || !procsSet {
			return run, usagef("--phi and --procs go together (or give --deps or --graph)")
		}
		if procs < 1 || procs > 1<<20 {
			return run, usagef("--procs: between 1 and 2^20 (got %d)", procs)
		}
		// The dependency lists hold about φ·N² entries: bound them so a
		// large --procs fails with a message, not by exhausting memory.
		if phi.set && phi.v*float64(procs)*float64(procs) > maxDependencies {
			return run, usagef("--phi %g --procs %d: about %.3g dependencies, more than the simulator holds (%g); fewer processes or a smaller φ",
				phi.v, procs, phi.v*float64(procs)*float64(procs), float64(maxDependencies))
		}
		if p, err = sim.UniformP(phi.v, procs); err != nil {
			return run, simErr(err, rateFlag)
		}
		if run.cfg.Dependents, err = sim.DependentsFromP(p); err != nil {
			return run, simErr(err, rateFlag)
		}
	}
	if len(p) > 1<<20 {
		return run, usagef("at most 2^20 processes (got %d)", len(p))
	}
	if run.phi, err = model.Phi(p); err != nil {
		return run, simErr(err, rateFlag)
	}
	in := model.IntervalInput{Cost: cfg.Cost[0], MTTI: 1 / cfg.Rates[0], Restart: cfg.Restart[0], Detect: cfg.Detect,
		Phi: run.phi, LogProtect: logProtect.v, LogReplay: logReplay.v}
	if interval.set {
		if !(interval.v > 0) {
			return run, usagef("--interval: must be a finite number > 0 (got %g)", interval.v)
		}
		run.cfg.Interval = interval.v
	} else {
		run.optimized = true
		if run.cfg.Interval, err = model.FialhoParallelInterval(in); err != nil {
			return run, usagef("no --interval given and %v", err)
		}
	}
	run.cfg.Counts = []int{}
	run.cfg.LogReplay = logReplay.v
	if run.cfg.LogOverhead, err = sim.LogOverheadFor(in, run.cfg.Interval); err != nil {
		return run, simErr(err, rateFlag)
	}
	run.modelEff = 1 - model.FialhoParallelOverhead(run.cfg.Interval, in)/in.MTTI
	return run, nil
}

func checkNonNegative(q *quantity, name string) error {
	if q.set && !(q.v >= 0) {
		return usagef("--%s: must be a finite number ≥ 0 (got %g)", name, q.v)
	}
	return nil
}

// simErr turns a simulator or model error into a usage error naming the
// flag; rateFlag is the flag that gave the rates (rates or mtti).
func simErr(err error, rateFlag string) error {
	var pe *model.ParamError
	if errors.As(err, &pe) {
		switch pe.Param {
		case "rates":
			pe.Param = rateFlag
		case "log-overhead":
			pe.Param = "log-protect"
		}
		return modelErr(pe)
	}
	if errors.Is(err, sim.ErrTooLong) {
		return err
	}
	return modelErr(err)
}

func printSimulation(c *cobra.Command, run simRun, res sim.Result, reps int, seed uint64, workers int, elapsed float64, asJSON bool) error {
	cfg := run.cfg
	L := cfg.L()
	means := func(es []sim.Estimate) (m, ci []any) {
		for _, e := range es {
			m, ci = append(m, num(e.Mean)), append(ci, num(e.CI95))
		}
		return m, ci
	}
	failures, failuresCI := means(res.Failures)
	restarts, restartsCI := means(res.Restarts)
	modelSeconds := cfg.Work / run.modelEff
	eventRate := float64(res.Events) / elapsed
	w := c.OutOrStdout()
	if asJSON {
		o := object{
			{"strategy", run.kind},
			{"dist", cfg.Dist.String()},
			{"levels", L},
			{"work_seconds", num(cfg.Work)},
			{"interval_seconds", num(cfg.Interval)},
			{"counts", cfg.Counts},
			{"optimized", run.optimized},
			{"replications", reps},
			{"seed", seed},
			{"expected_seconds", num(res.Seconds.Mean)},
			{"expected_seconds_ci95", num(res.Seconds.CI95)},
			{"efficiency", num(res.Efficiency.Mean)},
			{"efficiency_ci95", num(res.Efficiency.CI95)},
			{"lost_seconds", num(res.Lost.Mean)},
			{"lost_seconds_ci95", num(res.Lost.CI95)},
			{"restart_seconds", num(res.Restart.Mean)},
			{"restart_seconds_ci95", num(res.Restart.CI95)},
			{"checkpoint_seconds", num(res.Checkpoint.Mean)},
			{"checkpoint_seconds_ci95", num(res.Checkpoint.CI95)},
			{"failures", failures},
			{"failures_ci95", failuresCI},
			{"restarts", restarts},
			{"restarts_ci95", restartsCI},
			{"model", run.modelName},
			{"model_efficiency", num(run.modelEff)},
			{"model_expected_seconds", num(modelSeconds)},
		}
		if cfg.Strategy == sim.NonBlocking {
			o = append(o, kv{"incomplete_segments", run.incomplete})
		}
		if cfg.Strategy == sim.Uncoordinated {
			o = append(o,
				kv{"processes", len(cfg.Dependents)},
				kv{"phi", num(run.phi)},
				kv{"log_overhead", num(cfg.LogOverhead)},
				kv{"process_seconds", num(res.ProcessSeconds.Mean)},
				kv{"process_seconds_ci95", num(res.ProcessSeconds.CI95)},
				kv{"process_efficiency", num(res.ProcessEfficiency.Mean)},
				kv{"process_efficiency_ci95", num(res.ProcessEfficiency.CI95)},
				kv{"wait_seconds", num(res.Wait.Mean)},
				kv{"wait_seconds_ci95", num(res.Wait.CI95)})
		}
		o = append(o, kv{"events", res.Events}, kv{"events_per_second", num(eventRate)}, kv{"workers", workers})
		return writeJSON(w, o)
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
	desc := fmt.Sprintf("%s, %d levels", run.kind, L)
	if L == 1 {
		desc = run.kind
	}
	if cfg.Strategy == sim.Uncoordinated {
		desc = fmt.Sprintf("uncoordinated, %d processes, φ = %.4g", len(cfg.Dependents), run.phi)
	}
	t.row("simulated", fmt.Sprintf("%s; failures %s; %d replications, seed %d", desc, cfg.Dist, reps, seed))
	sched := fmt.Sprintf("interval %s (%s)", dur(cfg.Interval), sec(cfg.Interval))
	if len(cfg.Counts) > 0 {
		sched += fmt.Sprintf(", counts %v", cfg.Counts)
	}
	if run.optimized {
		sched += ", the model's optimum"
	}
	if cfg.Strategy == sim.NonBlocking {
		sched += fmt.Sprintf(", the copy spans %d segments", run.incomplete)
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
	simEff := res.Efficiency
	if cfg.Strategy == sim.Uncoordinated {
		simEff = res.ProcessEfficiency
	}
	verdict := fmt.Sprintf("off by %+.2f%% of the simulated efficiency", 100*(run.modelEff/simEff.Mean-1))
	if math.Abs(run.modelEff-simEff.Mean) <= simEff.CI95 {
		verdict = "inside the simulation's 95% interval"
	}
	assumes := ""
	if cfg.Dist.Weibull() {
		assumes = "; the model assumes exponential failures"
	}
	t.row("model", fmt.Sprintf("%s: efficiency %.6f, %s%s", run.modelName, run.modelEff, verdict, assumes))
	t.row("speed", fmt.Sprintf("%.3g events in %.2fs on %d workers (%.3g events/s)", float64(res.Events), elapsed, workers, eventRate))
	return t.flush()
}
