package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/ckpt/ckpt/internal/demo"
	"github.com/ckpt/ckpt/internal/flush"
	"github.com/ckpt/ckpt/internal/policy"
	"github.com/ckpt/ckpt/internal/report"
)

// The demo's flushing variants: the same job also flushes every K-th
// checkpoint to a shared tier of limited bandwidth, blocking (the ranks
// copy) or non-blocking (a staging server pulls while the job computes),
// and each run is set beside the multi-level Markov model's efficiency
// for the parameters it measured (demo.CompareMarkov).

// flushRun is one flushing run and what the model expects of it.
type flushRun struct {
	mode string // blocking or nonblocking
	res  runResult
	secs float64
	eff  float64
	demo.Markov
	// applied is the failure process the run met, and appliedEff the
	// model's efficiency at its MTTI.
	applied    demo.Applied
	appliedEff float64
	recovery   float64
	// appliedAt are the model's inputs at the failures met, and chance
	// what one run strays from it by chance (set with the work).
	appliedAt policy.Measured
	chance    demo.Chance
	// levels are the failures it met by level, and multiEff the model's
	// efficiency at them (level-2 failures at their applied rate).
	levels   demo.Levels
	multiEff float64
	// predicted is the failures split by level as the node failures and
	// the XOR layout imply (demo.PredictLevels), and predEff the model's
	// efficiency at them.
	predicted  demo.Predicted
	predEff    float64
	predFinite float64
	// inRun is the work measured in the run itself, and finite the
	// models over the finite job it did.
	inRun  demo.InRun
	finite demo.Finite
}

// runFlushVariants runs the job flushing in each mode (the same seed of
// failures for each) and sets each beside the models; the efficiencies
// are set once the reference is known (demoFlush).
func runFlushVariants(ctx context.Context, modes []string, d demo.Settings, mtti float64,
	jobs demoJobs, progress io.Writer) ([]flushRun, error) {
	var out []flushRun
	for _, mode := range modes {
		fmt.Fprintf(progress, "%s flushing: %s to a shared tier of %s/s, checkpoint every %gs\n",
			mode, everyNth(d.Every), fmtBytes(d.Bandwidth), d.Interval)
		s, logs, err := jobs.spec(mode, fmt.Sprintf("%gs", d.Interval), true)
		if err != nil {
			return nil, err
		}
		s.flushEvery, s.sharedBandwidth = policy.FlushEvery{K: d.Every}, d.Bandwidth
		s.shared = s.cacheRoot + "-shared"
		if mode == "nonblocking" {
			s.stagingServers, s.flushBusy = 1, d.Busy
		}
		res, secs, err := jobs.run(ctx, s)
		if err != nil {
			fmt.Fprint(progress, logs())
			return nil, fmt.Errorf("the %s run: %w", mode, err)
		}
		r := flushRun{mode: mode, res: res, secs: secs, eff: math.NaN()}
		r.Markov = demo.CompareMarkov(mode != "blocking", d, mtti, flush.Stats(res.Flush), res.Staged, res.Attempts)
		r.applied = demo.AppliedFailures(res.Elapsed.Seconds(), mtti, res.Injected)
		ap := demo.CompareMarkovApplied(mode != "blocking", d, r.applied, flush.Stats(res.Flush), res.Staged, res.Attempts)
		r.appliedEff, r.recovery, r.appliedAt = ap.Efficiency, ap.Restart, ap.Measured
		r.levels = demo.AppliedLevels(res.Elapsed.Seconds(), res.Injected, res.Account)
		lv := demo.CompareMarkovLevels(mode != "blocking", d, r.levels, flush.Stats(res.Flush), res.Staged, res.Attempts)
		r.multiEff = lv.Efficiency
		r.predicted = demo.PredictLevels(res.Elapsed.Seconds(), res.Injected, r.recovery, demoXORSet, demoNodes)
		pl := demo.CompareMarkovLevels(mode != "blocking", d, r.predicted.Levels, flush.Stats(res.Flush), res.Staged, res.Attempts)
		r.predEff, r.predFinite = pl.Efficiency, math.NaN()
		r.inRun = demo.WorkInRun(d.Steps, res.Attempts, res.Flush.StepSeconds())
		r.finite = demo.NoFinite()
		if job, ok := demo.JobOf(d.Steps, r.inRun); ok {
			r.finite = demo.FiniteMarkov(d, ap, lv, job)
			r.predFinite = demo.FiniteMarkov(d, ap, pl, job).Multilevel
		}
		out = append(out, r)
	}
	return out, nil
}

func fmtBytes(b float64) string {
	switch {
	case b >= 1e9:
		return fmt.Sprintf("%.3g GB", b/1e9)
	case b >= 1e6:
		return fmt.Sprintf("%.3g MB", b/1e6)
	}
	return fmt.Sprintf("%.3g kB", b/1e3)
}

func flushRunReport(r flushRun, ref string) *demo.FlushRun {
	f := func(x float64) report.Float { return report.Float(x) }
	return &demo.FlushRun{
		ResultMatchesReference:       r.res.Result != "" && r.res.Result == ref,
		FailuresInjected:             r.res.Injected,
		RestartsFromCache:            r.res.Restarts["cache"],
		RestartsFromRebuild:          r.res.Restarts["rebuild"],
		RestartsFromShared:           r.res.Restarts["shared"],
		RestartsFromScratch:          r.res.Restarts["none"],
		Failures:                     r.res.Account.Failures,
		ScratchNoCheckpoint:          r.res.Account.ScratchNoCheckpoint,
		ScratchUnrecoverable:         r.res.Account.ScratchUnrecoverable,
		RelaunchesNeverRestored:      r.res.Account.NeverRestored,
		RunSeconds:                   f(r.secs),
		Efficiency:                   f(r.eff),
		MarkovEfficiency:             f(r.Efficiency),
		MarkovError:                  f((r.eff - r.Efficiency) / r.Efficiency),
		Level1CostSeconds:            f(r.C1),
		Level2CostSeconds:            f(r.C2),
		FlushLatencySeconds:          f(r.Latency),
		Alpha:                        f(r.Alpha),
		MarkovAlpha:                  f(r.ModelAlpha),
		RestartSeconds:               f(r.Restart),
		Flush:                        flushJSON(r.res),
		FailuresExpected:             f(r.applied.Expected),
		RecoverySeconds:              f(r.recovery),
		MTTIAppliedSeconds:           f(r.applied.MTTI),
		MarkovEfficiencyApplied:      f(r.appliedEff),
		MarkovErrorApplied:           f((r.eff - r.appliedEff) / r.appliedEff),
		LevelsApplied:                demo.NewLevelsApplied(r.levels, r.eff, r.multiEff),
		InRunReport:                  demo.NewInRunReport(r.inRun, r.secs, r.appliedEff, true, r.multiEff).WithFinite(r.finite),
		MarkovErrorAppliedChance:     f(r.chance.MeanAbs),
		MarkovErrorAppliedChanceBias: f(r.chance.Mean),
		LevelsPredicted:              demo.NewLevelsPredicted(r.predicted, r.eff, demo.Efficiency(r.inRun.Work, r.secs), r.predEff, r.predFinite),
	}
}

func printFlushRuns(w io.Writer, runs []flushRun, d demo.Settings, mtti float64, refs demo.Reference, ref string) error {
	t := newTable(w)
	head := []string{""}
	for _, r := range runs {
		head = append(head, r.mode)
	}
	t.row(head...)
	row := func(name string, f func(r flushRun) string) {
		cells := []string{name}
		for _, r := range runs {
			cells = append(cells, f(r))
		}
		t.row(cells...)
	}
	row("failures injected", func(r flushRun) string {
		return fmt.Sprint(r.res.Injected) + " " + expectedNote(r.applied, mtti)
	})
	row("restarts", func(r flushRun) string {
		return fmt.Sprintf("cache %d, rebuild %d, shared %d, scratch %d", r.res.Restarts["cache"], r.res.Restarts["rebuild"], r.res.Restarts["shared"], r.res.Restarts["none"])
	})
	row("failures", func(r flushRun) string { return r.res.Account.String() })
	row("time", func(r flushRun) string {
		return fmt.Sprintf("%.2f s (reference %.2f s)", r.secs, refs.Work())
	})
	row("efficiency", func(r flushRun) string { return fmt.Sprintf("%.1f%%", 100*r.eff) })
	row("in the run", func(r flushRun) string {
		if math.IsNaN(r.inRun.Work) {
			return "n/a (no step timed)"
		}
		eff := demo.Efficiency(r.inRun.Work, r.secs)
		return fmt.Sprintf("%.1f%% of %.2f s of work measured in the run (measured − model at the failures met %+.1f%%)",
			100*eff, r.inRun.Work, 100*demo.RelErr(eff, r.appliedEff))
	})
	row("finite job", func(r flushRun) string {
		if math.IsNaN(r.finite.Efficiency) {
			return "n/a"
		}
		eff := demo.Efficiency(r.inRun.Work, r.secs)
		return fmt.Sprintf("%.1f%%: the model at the failures met over the job run, %d checkpoints, %d flushed, none after the last step (in run − model %+.1f%%)",
			100*r.finite.Efficiency, r.finite.Checkpoints, r.finite.Flushes, 100*demo.RelErr(eff, r.finite.Efficiency))
	})
	row("Markov model", func(r flushRun) string {
		if math.IsNaN(r.Efficiency) {
			return "n/a: " + r.Why
		}
		return fmt.Sprintf("%.1f%% (measured − model %+.1f%%)", 100*r.Efficiency, 100*(r.eff-r.Efficiency)/r.Efficiency)
	})
	row("at the failures met", func(r flushRun) string {
		if math.IsNaN(r.appliedEff) {
			return "n/a"
		}
		return fmt.Sprintf("%.1f%% at M = %s (measured − model %+.1f%%)", 100*r.appliedEff, appliedMTTI(r.applied), 100*(r.eff-r.appliedEff)/r.appliedEff)
	})
	row("by chance", func(r flushRun) string {
		if math.IsNaN(r.chance.MeanAbs) {
			return "n/a"
		}
		return fmt.Sprintf("one run strays from that model by %.1f%% on average (mean error %+.1f%%, simulated)", 100*r.chance.MeanAbs, 100*r.chance.Mean)
	})
	row("by level", func(r flushRun) string {
		if math.IsNaN(r.multiEff) {
			return fmt.Sprintf("n/a (%d level-2 failures)", r.levels.Level2)
		}
		return fmt.Sprintf("%.1f%% with %d level-2 failures, λ2 = 1/%s (measured − model %+.1f%%)",
			100*r.multiEff, r.levels.Level2, mttiOrNone(r.levels.Level2MTTI), 100*demo.RelErr(r.eff, r.multiEff))
	})
	row("λ2 predicted", func(r flushRun) string {
		if math.IsNaN(r.predEff) {
			return "n/a"
		}
		return fmt.Sprintf("%.1f%% at λ2 = 1/%s, %.1f%% of failures (%.2f level-2 failures predicted, %d met; measured − model %+.1f%%, in run %+.1f%%)",
			100*r.predEff, mttiOrNone(r.predicted.Levels.Level2MTTI), 100*r.predicted.Probability, r.predicted.Level2Expected, r.levels.Level2,
			100*demo.RelErr(r.eff, r.predEff), 100*demo.RelErr(demo.Efficiency(r.inRun.Work, r.secs), r.predEff))
	})
	row("λ2 predicted, finite", func(r flushRun) string {
		if math.IsNaN(r.predFinite) {
			return "n/a"
		}
		return fmt.Sprintf("%.1f%% over the job run (in run − model %+.1f%%)", 100*r.predFinite, 100*demo.RelErr(demo.Efficiency(r.inRun.Work, r.secs), r.predFinite))
	})
	row("level-1 cost c1", func(r flushRun) string { return sec(r.C1) })
	row("flush", func(r flushRun) string {
		if r.mode == "blocking" {
			return fmt.Sprintf("c2 = %s (blocks)", sec(r.C2))
		}
		a := fmtAlpha(r.Alpha)
		if math.IsNaN(r.Alpha) {
			a += " (not measured; the model takes 0)"
		}
		return fmt.Sprintf("ℓ2 = %s in the background, α = %s", sec(r.Latency), a)
	})
	row("flushes", func(r flushRun) string {
		f := r.res.Flush
		return fmt.Sprintf("%d due, %d started, %d skipped, %d failed", f.Due, f.Started, f.Skipped, f.Failed)
	})
	row("restart r", func(r flushRun) string { return sec(r.Restart) })
	row("result", func(r flushRun) string {
		if r.res.Result != "" && r.res.Result == ref {
			return "identical to the reference"
		}
		return "DIFFERENT from the reference"
	})
	if err := t.flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "model: λ1 = 1/%gs (node failures, all survivable by XOR), λ2 = 0; t = %gs, K = %d (the multi-level Markov model, blocking and non-blocking: docs/MODELS.md)\n", mtti, d.Interval, d.Every)
	fmt.Fprintf(w, "reference: %s\n", strings.Trim(referenceNote(refs), "()"))
	fmt.Fprintf(w, "by level: the same model at the failures the run met, λ2 = level-2 failures (the caches lost: relaunched from the shared tier,\n")
	fmt.Fprintf(w, "or from scratch after a checkpoint had been committed) / job time, λ1 = the other failures / job time, a failure during a\n")
	fmt.Fprintf(w, "level-1 restart retrying it (docs/MODELS.md); λ2 predicted: the same model with λ2 = λ × the chance that another node of the\n")
	fmt.Fprintf(w, "XOR set fails before the first is rebuilt (within the recovery R), from the node failures, not the run's level-2 events\n")
	return nil
}

var errFlushVariant = errors.New("a flushing run's result differs from the reference")

// demoFlush is `ckpt demo --flush MODE`: the reference run, the job
// flushing in each mode under the same failures, the reference again.
func demoFlush(c interface {
	Context() context.Context
	OutOrStdout() io.Writer
	ErrOrStderr() io.Writer
}, modes []string, d demo.Settings, mtti float64, asJSON bool, jobs demoJobs) error {
	progress := c.ErrOrStderr()
	var runs []flushRun
	refs, refResult, match, err := jobs.references(c.Context(), progress, func() (err error) {
		runs, err = runFlushVariants(c.Context(), modes, d, mtti, jobs, progress)
		return err
	})
	if err != nil {
		return err
	}
	work := refs.Work()
	for i := range runs {
		runs[i].eff = demo.Efficiency(work, runs[i].secs)
		runs[i].chance = demo.ErrorByChanceMarkov(d, work, runs[i].appliedAt)
		match = match && runs[i].res.Result == refResult
	}
	if asJSON {
		rep := demo.FlushReport{ResultMatchesReference: match, ReferenceSeconds: report.Float(work),
			IntervalSeconds: d.Interval, FlushEvery: d.Every, SharedBandwidth: d.Bandwidth, MTTISeconds: mtti,
			ReferenceSecondsBefore: report.Float(refs.Before), ReferenceSecondsAfter: report.Float(refs.After)}
		for _, r := range runs {
			if r.mode == "blocking" {
				rep.Blocking = flushRunReport(r, refResult)
			} else {
				rep.NonBlocking = flushRunReport(r, refResult)
			}
		}
		if len(runs) == 2 {
			gain := report.Float(runs[1].eff - runs[0].eff)
			rep.NonBlockingGain = &gain
		}
		if err := writeJSON(c.OutOrStdout(), rep); err != nil {
			return err
		}
	} else if err := printFlushRuns(c.OutOrStdout(), runs, d, mtti, refs, refResult); err != nil {
		return err
	}
	if !match {
		return fmt.Errorf("%w: %w", errNotRecoverable, errFlushVariant)
	}
	return nil
}
