package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/ckpt/ckpt/examples/himeno"
	"github.com/ckpt/ckpt/internal/demo"
	"github.com/ckpt/ckpt/internal/inject"
	"github.com/ckpt/ckpt/internal/policy"
	"github.com/ckpt/ckpt/internal/report"
)

func newDemoCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "demo [--strategy coordinated|uncoordinated|compare] [--json]",
		Short: "Himeno on 8 ranks over 4 nodes with node failures injected, against a failure-free run",
		Long:  demoLong,
		Args:  cobra.NoArgs,
	}
	fs := c.Flags()
	f := &demoFlags{
		iters:         fs.Int("iterations", 1500, "Himeno iterations"),
		size:          fs.String("size", "s", "Himeno grid: xs, s, m, l, xl or IxJxK"),
		mtti:          durationFlag(fs, "mtti", "mean time between injected node failures, in job time (default 2.5s)"),
		seed:          fs.Uint64("seed", 3, "seed of the injected failures"),
		flushMode:     fs.String("flush", "none", "also flush to a shared tier: none, blocking, nonblocking (a staging server pulls) or compare (both, same failures)"),
		flushEvery:    fs.Int("flush-every", 2, "with --flush: flush every K-th checkpoint"),
		flushBW:       bandwidthFlag(fs, "shared-bandwidth", "with --flush: the shared tier's bandwidth (default 4MB/s)"),
		flushInterval: durationFlag(fs, "flush-interval", "with --flush: computation between checkpoints (default 1s)"),
		flushBusy:     fs.String("flush-busy", "skip", "with --flush nonblocking: a flush due while the previous runs is skipped, or waits"),
		asJSON:        jsonFlag(c),
		netns:         netnsFlag(fs),
		references:    fs.Int("references", 2, "failure-free reference runs: 2, before and after the runs with failures (the efficiency divides their mean), or 1, before them only (saves one run where the figures of record are against the work measured in the run, *_in_run; the results are still checked bit for bit)"),
		transparent:   fs.Bool("transparent", false, "instead: an unmodified C program (a stencil) on 4 ranks over 4 nodes, checkpointed with CRIU, with node failures (--mtti default 10s; docs/TRANSPARENT.md)"),
	}
	dl := addDemoLauncherFlags(c)
	ds := addDemoStrategyFlags(c)
	c.RunE = func(c *cobra.Command, _ []string) error {
		which, err := ds.check()
		if err != nil {
			return err
		}
		m, modes, fd, err := f.check(c)
		if err != nil {
			return err
		}
		if ds.on() {
			return demoStrategy(c, ds, which, f.mtti.set, m, *f.seed, *f.asJSON)
		}
		if *f.transparent {
			if modes != nil {
				return usagef("--transparent: no --flush")
			}
			if !f.mtti.set {
				// A CRIU dump of every rank costs seconds on a busy
				// machine: failures 2.5s apart would leave no
				// checkpoint time to commit.
				m = 10
			}
			return demoTransparent(c, m, *f.seed, *f.asJSON)
		}
		if err := dl.check(modes != nil); err != nil {
			return err
		}
		exe, root, err := demoDirs()
		if err != nil {
			return err
		}
		defer os.RemoveAll(root)
		args := []string{"example", "himeno", "--size", *f.size, "--iterations", fmt.Sprint(*f.iters)}
		spec := func(name, interval string, inject bool) (runSpec, func() string, error) {
			s, err := demoSpec(exe, args, interval, m, *f.seed, inject)
			dl.apply(&s)
			s.cacheRoot = filepath.Join(root, name)
			var out bytes.Buffer
			s.output, s.progress = &out, c.ErrOrStderr()
			return s, out.String, err
		}
		jobs := demoJobs{spec: spec, run: timedRun, launcher: dl, once: *f.references == 1}
		if *f.netns {
			var done func()
			if jobs, done, err = onHosts(c.ErrOrStderr(), modes, jobs); err != nil {
				return err
			}
			defer done()
		}
		if modes != nil {
			return demoFlush(c, modes, fd, m, *f.asJSON, jobs)
		}
		return demoPlain(c, *f.size, *f.iters, m, *f.seed, *f.asJSON, jobs)
	}
	return c
}

const demoLong = `Runs the distributed Himeno benchmark (ckpt example himeno) as a job of 8
ranks over 4 simulated nodes, protected by XOR parity across the 4 nodes,
checkpointing at Daly's interval from the cost it measures and the failures
it sees, while whole nodes fail at random (seeded) together with their
caches. Each failure stops the job; ckpt relaunches it, rebuilds the lost
node's checkpoint files from the other nodes' parity, and goes on. Before
and after it, it runs the same job without failures and without
checkpoints, and compares: the results must be identical, bit for bit;
the efficiency is the failure-free runs' mean time over the time with
failures. The run is set beside Daly's model and the multi-level Markov
model at the failures it met, and beside the multi-level model at the
rate of failures the caches cannot survive that its node failures imply
(a second node of the XOR set lost before the first is rebuilt:
docs/MODELS.md). Two more figures say how far to trust one run's
comparison: the efficiency against the work measured in the run itself
(its own steps' speed, immune to the machine's drift between the runs),
and how far one run strays from the model by chance alone at its
parameters (simulated).

With --strategy, the job is instead Fialho et al. 2011's synthetic
application (ckpt example torus), under the coordinated strategy, the
uncoordinated one (each rank checkpoints alone, logs what it receives at
its protector, and a failed rank recovers alone) or both (compare, the
same seeded failures), beside Daly's model and Fialho et al.'s eq. 10 fed
with what the run measured, φ included (docs/MESSAGE-LOGGING.md).
Without --mtti, its MTTI is the first failure-free reference's time (at
least 0.5s), so that the failures scale with the machine's speed.

It needs nothing but this binary: the nodes are directories under the temp
directory, removed at the end.`

// demoFlags are the flags of ckpt demo.
type demoFlags struct {
	iters, flushEvery            *int
	size, flushMode, flushBusy   *string
	mtti, flushBW, flushInterval *quantity
	seed                         *uint64
	asJSON, transparent          *bool
	netns                        *bool // each node on a host of its own (demo_netns.go)
	references                   *int  // failure-free reference runs: 2 (before and after) or 1 (before)
}

// check validates the flags and returns the MTTI, the flushing modes (nil
// without --flush) and their settings.
func (f *demoFlags) check(c *cobra.Command) (float64, []string, demo.Settings, error) {
	fd := demo.Settings{Interval: 1, Every: *f.flushEvery, Bandwidth: 4e6, Busy: *f.flushBusy, Steps: *f.iters}
	if *f.iters < 1 {
		return 0, nil, fd, usagef("--iterations %d: need at least 1", *f.iters)
	}
	if _, err := himeno.ParseSize(*f.size); err != nil {
		return 0, nil, fd, usagef("--size: %v", err)
	}
	if *f.references != 1 && *f.references != 2 {
		return 0, nil, fd, usagef("--references %d: want 2 (before and after the runs with failures) or 1 (before only)", *f.references)
	}
	if *f.transparent && c.Flags().Changed("references") {
		return 0, nil, fd, usagef("--references applies to the Himeno demo, not --transparent")
	}
	m := 2.5
	if f.mtti.set {
		if f.mtti.v < 0.5 {
			return 0, nil, fd, usagef("--mtti %gs: need at least 0.5s (a relaunch takes a fraction of a second)", f.mtti.v)
		}
		m = f.mtti.v
	}
	var modes []string
	switch *f.flushMode {
	case "none":
		for _, name := range []string{"flush-every", "shared-bandwidth", "flush-interval", "flush-busy"} {
			if c.Flags().Changed(name) {
				return 0, nil, fd, usagef("--%s applies to the flushing runs: add --flush blocking, nonblocking or compare", name)
			}
		}
	case "blocking", "nonblocking":
		modes = []string{*f.flushMode}
	case "compare":
		modes = []string{"blocking", "nonblocking"}
	default:
		return 0, nil, fd, usagef("--flush %q: want none, blocking, nonblocking or compare", *f.flushMode)
	}
	if f.flushBW.set {
		if f.flushBW.v <= 0 {
			return 0, nil, fd, usagef("--shared-bandwidth %g: want a positive bandwidth", f.flushBW.v)
		}
		fd.Bandwidth = f.flushBW.v
	}
	if f.flushInterval.set {
		if f.flushInterval.v < 0.05 {
			return 0, nil, fd, usagef("--flush-interval %gs: need at least 0.05s", f.flushInterval.v)
		}
		fd.Interval = f.flushInterval.v
	}
	if fd.Every < 1 {
		return 0, nil, fd, usagef("--flush-every %d: need ≥ 1", fd.Every)
	}
	if fd.Busy != "skip" && fd.Busy != "wait" {
		return 0, nil, fd, usagef("--flush-busy %q: want skip or wait", fd.Busy)
	}
	return m, modes, fd, nil
}

// demoJobs runs the demo's jobs: spec makes one (its name, checkpoint
// interval, and whether failures are injected; with the ranks' output
// kept for an error), run runs it to its end and times it. A test fakes
// run.
type demoJobs struct {
	spec func(name, interval string, inject bool) (runSpec, func() string, error)
	run  func(ctx context.Context, s runSpec) (runResult, float64, error)
	// launcher adds to the JSON what --launcher ran (nil: nothing).
	launcher *demoLauncher
	// netns: the jobs run each node in a network namespace (onHosts).
	netns bool
	// once: one reference, before the runs with failures (--references 1).
	once bool
}

// timedRun runs the job and measures its wall-clock seconds, from the
// launch to its end.
func timedRun(ctx context.Context, s runSpec) (runResult, float64, error) {
	start := time.Now()
	res, err := s.run(ctx)
	return res, time.Since(start).Seconds(), err
}

// reference runs the failure-free reference, the same job without
// failures or checkpoints, before ("before") or after ("after") the runs
// with failures (demo.Reference).
func (j demoJobs) reference(ctx context.Context, progress io.Writer, which string) (runResult, float64, error) {
	fmt.Fprintf(progress, "reference (%s the runs with failures): the same job, no failures, no checkpoints\n", which)
	s, logs, err := j.spec("reference-"+which, "none", false)
	if err != nil {
		return runResult{}, 0, err
	}
	res, secs, err := j.run(ctx, s)
	if err != nil {
		io.WriteString(progress, logs())
		return res, secs, fmt.Errorf("the reference run %s the runs with failures: %w", which, err)
	}
	return res, secs, nil
}

// references runs the reference before and after between, which runs
// the jobs with failures; the result is the first reference's (both must
// match it). With once, only the reference before.
func (j demoJobs) references(ctx context.Context, progress io.Writer, between func() error) (demo.Reference, string, bool, error) {
	before, beforeSecs, err := j.reference(ctx, progress, "before")
	if err != nil {
		return demo.Reference{}, "", false, err
	}
	if err := between(); err != nil {
		return demo.Reference{}, "", false, err
	}
	if j.once {
		return demo.Reference{Before: beforeSecs, After: math.NaN(), Once: true}, before.Result, before.Result != "", nil
	}
	after, afterSecs, err := j.reference(ctx, progress, "after")
	if err != nil {
		return demo.Reference{}, "", false, err
	}
	return demo.Reference{Before: beforeSecs, After: afterSecs}, before.Result, before.Result != "" && after.Result == before.Result, nil
}

// demoPlain is `ckpt demo`: the reference, the run with failures, the
// reference again, compared with each other and with Daly's model and
// the multi-level model.
func demoPlain(c *cobra.Command, size string, iters int, m float64, seed uint64, asJSON bool, jobs demoJobs) error {
	progress := c.ErrOrStderr()
	fmt.Fprintf(progress, "ckpt demo: Himeno (size %s, %d iterations) on 8 ranks over 4 nodes, XOR across the 4,\n", size, iters)
	fmt.Fprintf(progress, "whole nodes failing at random (mean %gs apart, seed %d); checkpoint interval: Daly's, from the\n", m, seed)
	fmt.Fprintf(progress, "measured checkpoint cost and the injector's MTTI\n")
	var res runResult
	var runSecs float64
	ref, refResult, refMatch, err := jobs.references(c.Context(), progress, func() error {
		fmt.Fprintln(progress, "the run with failures")
		run, out, err := jobs.spec("run", fmt.Sprintf("auto:%gs", m), true)
		if err != nil {
			return err
		}
		if res, runSecs, err = jobs.run(c.Context(), run); err != nil {
			io.WriteString(progress, out())
			return fmt.Errorf("the run with failures: %w", err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	match := refMatch && res.Result == refResult
	work := ref.Work()
	eff := demo.Efficiency(work, runSecs)
	cost := res.Policy.Cost.Seconds()
	pred := demo.CompareDaly(work, runSecs, m, cost, res.Attempts)
	applied := demo.AppliedFailures(res.Elapsed.Seconds(), m, res.Injected)
	recovery := demo.MeanRecovery(res.Attempts)
	appliedEff, appliedErr := pred.AtApplied(applied, work, runSecs, cost, recovery)
	levels := demo.AppliedLevels(res.Elapsed.Seconds(), res.Injected, res.Account)
	multi := demo.MultilevelPlain(pred.Interval, cost, recovery, work, levels)
	chance := demo.ErrorByChance(work, pred.Interval, cost, recovery, m)
	chanceLevels := demo.ErrorByChanceLevels(work, pred.Interval, cost, recovery, levels)
	chancePredicted := demo.ErrorByChancePredicted(work, pred.Interval, cost, recovery, m, demoXORSet, demoNodes)
	inRun := demo.WorkInRun(iters, res.Attempts, res.Flush.StepSeconds())
	finite := demo.NoFinite()
	if job, ok := demo.JobOf(iters, inRun); ok {
		finite = demo.FinitePlain(pred.Interval, cost, recovery, applied.MTTI, levels, job)
	}
	// The multi-level model at the level-2 rate the node failures imply
	// (λ2 from the XOR layout and the rebuild window R, not from the
	// run's own level-2 events): the one model for every run, those
	// that restarted from scratch included.
	predicted := demo.PredictLevels(res.Elapsed.Seconds(), res.Injected, recovery, demoXORSet, demoNodes)
	multiPredicted := demo.MultilevelPlain(pred.Interval, cost, recovery, work, predicted.Levels)
	finitePredicted := math.NaN()
	if job, ok := demo.JobOf(iters, inRun); ok {
		finitePredicted = demo.FinitePlain(pred.Interval, cost, recovery, applied.MTTI, predicted.Levels, job).Multilevel
	}
	inRunEff := demo.Efficiency(inRun.Work, runSecs)
	if asJSON {
		if err := writeJSON(c.OutOrStdout(), jobs.launcher.report(demo.Report{
			ResultMatchesReference:             match,
			FailuresInjected:                   res.Injected,
			RestartsFromCache:                  res.Restarts["cache"],
			RestartsFromRebuild:                res.Restarts["rebuild"],
			RestartsFromShared:                 res.Restarts["shared"],
			RestartsFromScratch:                res.Restarts["none"],
			Efficiency:                         report.Float(eff),
			Attempts:                           len(res.Attempts),
			RunSeconds:                         report.Float(runSecs),
			ReferenceSeconds:                   report.Float(work),
			CheckpointSeconds:                  report.Float(cost),
			RestartSeconds:                     report.Float(pred.Restart),
			MTTISeconds:                        m,
			IntervalSeconds:                    report.Float(pred.Interval),
			ModelEfficiency:                    report.Float(pred.Efficiency),
			ModelError:                         report.Float(pred.Err),
			Result:                             res.Result,
			ReferenceResult:                    refResult,
			FailuresExpected:                   report.Float(applied.Expected),
			RecoverySeconds:                    report.Float(recovery),
			MTTIAppliedSeconds:                 report.Float(applied.MTTI),
			ModelEfficiencyApplied:             report.Float(appliedEff),
			ModelErrorApplied:                  report.Float(appliedErr),
			ScratchNoCheckpoint:                res.Account.ScratchNoCheckpoint,
			ScratchUnrecoverable:               res.Account.ScratchUnrecoverable,
			ReferenceSecondsBefore:             report.Float(ref.Before),
			ReferenceSecondsAfter:              report.Float(ref.After),
			LevelsApplied:                      demo.NewLevelsApplied(levels, eff, multi),
			ModelErrorAppliedChance:            report.Float(chance.MeanAbs),
			ModelErrorAppliedChanceBias:        report.Float(chance.Mean),
			MultilevelErrorAppliedChance:       report.Float(chanceLevels.MeanAbs),
			MultilevelErrorAppliedChanceBias:   report.Float(chanceLevels.Mean),
			InRunReport:                        demo.NewInRunReport(inRun, runSecs, appliedEff, false, multi).WithFinite(finite),
			Netns:                              jobs.netns,
			LevelsPredicted:                    demo.NewLevelsPredicted(predicted, eff, inRunEff, multiPredicted, finitePredicted),
			MultilevelErrorPredictedChance:     report.Float(chancePredicted.MeanAbs),
			MultilevelErrorPredictedChanceBias: report.Float(chancePredicted.Mean),
		}, res)); err != nil {
			return err
		}
	} else {
		w := c.OutOrStdout()
		t := newTable(w)
		t.row("failures injected", fmt.Sprint(res.Injected), expectedNote(applied, m))
		t.row("restarts", fmt.Sprintf("from cache %d, rebuilt from parity %d, from the shared tier %d, from scratch %d",
			res.Restarts["cache"], res.Restarts["rebuild"], res.Restarts["shared"], res.Restarts["none"]))
		t.row("failures", res.Account.String())
		t.row("checkpoint cost", sec(cost), "(measured)")
		t.row("time", fmt.Sprintf("%.2f s with failures, %.2f s without", runSecs, work), referenceNote(ref))
		t.row("efficiency", fmt.Sprintf("%.1f%%", 100*eff))
		t.row("", inRunNote(inRun, runSecs, appliedEff))
		if !math.IsNaN(finite.Efficiency) {
			t.row("", fmt.Sprintf("%.1f%%: the same model over the job run (%d checkpoints, none after the last step); measured in run − model = %+.1f%% of the model",
				100*finite.Efficiency, finite.Checkpoints, 100*demo.RelErr(demo.Efficiency(inRun.Work, runSecs), finite.Efficiency)))
		}
		t.row("model", fmt.Sprintf("%.1f%% (Daly's run time, Oldfield et al. 2007, eq. 1: δ = %s measured, R = %s measured, M = %gs, τ = %s); measured − model = %+.1f%% of the model",
			100*pred.Efficiency, sec(cost), sec(pred.Restart), m, sec(pred.Interval), 100*pred.Err))
		t.row("", fmt.Sprintf("%.1f%% at the failures met (M = %s, run time over failures injected; R = %s from the failure); measured − model = %+.1f%% of the model",
			100*appliedEff, appliedMTTI(applied), sec(recovery), 100*appliedErr))
		t.row("", chanceNote(chance))
		t.row("", multilevelNote(levels, multi, eff))
		t.row("", predictedNote(predicted, levels, recovery, multiPredicted, eff, inRunEff))
		if !math.IsNaN(finitePredicted) {
			t.row("", fmt.Sprintf("%.1f%%: the same model over the job run; measured in run − model = %+.1f%% of the model",
				100*finitePredicted, 100*demo.RelErr(inRunEff, finitePredicted)))
		}
		if !math.IsNaN(chancePredicted.MeanAbs) {
			t.row("", fmt.Sprintf("by chance alone (whether and where a level-2 failure fell), one run at these parameters strays from that model by %.1f%% on average (mean error %+.1f%%, simulated)",
				100*chancePredicted.MeanAbs, 100*chancePredicted.Mean))
		}
		if !math.IsNaN(chanceLevels.MeanAbs) {
			t.row("", fmt.Sprintf("by chance alone (where the level-2 failures fell), a run with level-2 failures at these rates strays from that model by %.1f%% on average (mean error %+.1f%%, simulated)",
				100*chanceLevels.MeanAbs, 100*chanceLevels.Mean))
		}
		if jobs.netns {
			t.row("nodes", "each in a network namespace of its own, on a bridge (--netns)")
		}
		t.row("result", res.Result)
		t.row("reference", refResult)
		verdict := "identical to the failure-free run"
		if !match {
			verdict = "DIFFERENT from the failure-free run"
		}
		t.row("verdict", verdict)
		if err := t.flush(); err != nil {
			return err
		}
	}
	if !match {
		return fmt.Errorf("%w: the result with failures differs from the reference", errNotRecoverable)
	}
	return nil
}

// inRunNote is the efficiency against the work measured in the run
// itself (demo.InRun), and its error against the model's efficiency
// model.
func inRunNote(w demo.InRun, run, model float64) string {
	if math.IsNaN(w.Work) {
		return "against the work measured in the run: n/a (no step timed)"
	}
	eff := demo.Efficiency(w.Work, run)
	return fmt.Sprintf("%.1f%% against the work measured in the run itself (%.2f s: start %s, then %s a step); measured − model at the failures met = %+.1f%% of the model",
		100*eff, w.Work, sec(w.Start), sec(w.StepSeconds), 100*demo.RelErr(eff, model))
}

// chanceNote says how far one run strays from the model at the failures
// it met by chance alone (demo.ErrorByChance).
func chanceNote(c demo.Chance) string {
	if math.IsNaN(c.MeanAbs) {
		return "by chance alone: n/a (no measured cost or restart)"
	}
	return fmt.Sprintf("by chance alone (where the failures fell), one run at these parameters strays from that model by %.1f%% on average (mean error %+.1f%%, simulated)",
		100*c.MeanAbs, 100*c.Mean)
}

// referenceNote says what the time without failures is.
func referenceNote(r demo.Reference) string {
	if r.Once {
		return fmt.Sprintf("(the reference before the runs with failures, %.2f s; none after them: --references 1)", r.Before)
	}
	return fmt.Sprintf("(the mean of the reference before the runs with failures, %.2f s, and after them, %.2f s)", r.Before, r.After)
}

// multilevelNote is the multi-level model at the failures a run of the
// plain demo met by level.
func multilevelNote(lv demo.Levels, ml, measured float64) string {
	why := fmt.Sprintf("%d level-2 failures: the caches lost, relaunched from scratch after a checkpoint had been committed", lv.Level2)
	if math.IsNaN(ml) {
		return "multi-level model at the failures met by level: n/a (" + why + ")"
	}
	return fmt.Sprintf("%.1f%% multi-level Markov model at the failures met by level (λ1 = 1/%s, λ2 = 1/%s; %s); measured − model = %+.1f%% of the model",
		100*ml, mttiOrNone(lv.Level1MTTI), mttiOrNone(lv.Level2MTTI), why, 100*demo.RelErr(measured, ml))
}

// predictedNote is the multi-level model at the level-2 rate a run's node
// failures imply (demo.PredictLevels), beside the level-2 events it met.
func predictedNote(p demo.Predicted, met demo.Levels, recovery, ml, measured, inRun float64) string {
	if math.IsNaN(ml) {
		return "multi-level model at the level-2 rate the node failures imply: n/a (no recovery or cost measured)"
	}
	return fmt.Sprintf("%.1f%% multi-level Markov model at the level-2 rate the node failures imply (%.1f%% of failures: another node of the XOR set of %d lost within R = %s of one; λ2 = 1/%s; %.2f level-2 failures predicted, %d met); measured − model = %+.1f%% of the model, in run %+.1f%%",
		100*ml, 100*p.Probability, demoXORSet, sec(recovery), mttiOrNone(p.Levels.Level2MTTI), p.Level2Expected, met.Level2,
		100*demo.RelErr(measured, ml), 100*demo.RelErr(inRun, ml))
}

// mttiOrNone is an applied MTTI for a table: ∞ without a failure.
func mttiOrNone(m float64) string {
	if math.IsInf(m, 1) {
		return "∞"
	}
	return sec(m)
}

// The demo's nodes and its XOR sets: one set of all 4 nodes. The
// level-2 rate the models are given follows from them
// (demo.PredictLevels).
const (
	demoNodes  = 4
	demoXORSet = 4
)

// demoSpec is one of the demo's runs: 8 ranks of himeno over 4 nodes with
// XOR across them.
func demoSpec(exe string, args []string, interval string, mtti float64, seed uint64, injectFailures bool) (runSpec, error) {
	return demoShape{ranks: 8, nodes: demoNodes, redundancy: fmt.Sprintf("xor:%d", demoXORSet), retries: 20, kind: "node"}.
		spec(exe, args, interval, mtti, seed, injectFailures)
}

// demoShape is what differs between the demos' jobs: their ranks, nodes
// and redundancy, the relaunches they allow, and what a failure kills.
type demoShape struct {
	ranks, nodes, retries int
	redundancy, kind      string
	uncoordinated         bool
}

// spec is a run of the shape: with failures injected (inject.ParseFlags'
// kind) at the MTTI, seeded, or none.
func (d demoShape) spec(exe string, args []string, interval string, mtti float64, seed uint64, injectFailures bool) (runSpec, error) {
	p, err := policy.Parse(interval)
	if err != nil {
		return runSpec{}, err
	}
	s := runSpec{ranks: d.ranks, nodes: d.nodes, program: exe, args: args, redundancy: d.redundancy, interval: p,
		retries: d.retries, heartbeat: 10 * time.Second, uncoordinated: d.uncoordinated}
	if injectFailures {
		cfg, err := inject.ParseFlags(fmt.Sprintf("%gs", mtti), "exp", d.kind, seed)
		if err != nil {
			return s, err
		}
		s.inject = &cfg
	}
	return s, nil
}

// expectedNote sets the failures a run met beside those its MTTI expects
// on the injector's clock.
func expectedNote(a demo.Applied, mtti float64) string {
	return fmt.Sprintf("(%.1f expected: %.2f s of job time / MTTI %gs)", a.Expected, a.Expected*mtti, mtti)
}

// appliedMTTI is the MTTI a run met, for a table.
func appliedMTTI(a demo.Applied) string {
	if math.IsInf(a.MTTI, 1) {
		return "∞, no failure"
	}
	return sec(a.MTTI)
}

// prediction is Daly's model of a run (demo.CompareDaly), as printRun
// takes it: at the configured MTTI, and at the failures the run met
// (applied; demo.AppliedFailures).
type prediction struct {
	restart, interval, efficiency, err float64
	applied                            demo.Applied
	appliedEfficiency                  float64
	// fialho is Fialho et al. 2011 eq. 10's model of an uncoordinated
	// run (withFialho; nil otherwise).
	fialho *demo.Fialho
}

func predict(work, measured, mtti float64, res runResult) prediction {
	d := demo.CompareDaly(work, measured, mtti, res.Policy.Cost.Seconds(), res.Attempts)
	a := demo.AppliedFailures(res.Elapsed.Seconds(), mtti, res.Injected)
	p := prediction{restart: d.Restart, interval: d.Interval, efficiency: d.Efficiency, err: d.Err,
		applied: a, appliedEfficiency: math.NaN()}
	if mtti > 0 {
		p.appliedEfficiency, _ = d.AtApplied(a, work, measured, res.Policy.Cost.Seconds(), demo.MeanRecovery(res.Attempts))
	}
	return p
}
