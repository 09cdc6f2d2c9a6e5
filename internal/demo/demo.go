// Package demo sets the runs of `ckpt demo` beside the models: what a
// measured run with failures is compared with (Daly's run time for the
// plain demo, the two-level Markov model for the flushing variants), and
// the demo's typed JSON reports; the failure-free work (Reference) and the
// failures a run met split by level, with the multi-level model at them
// (levels.go). It runs nothing: the command runs the jobs and hands their
// measurements here. Measurements become model
// inputs through policy.Measured, whose assumptions hold here too.
package demo

import (
	"github.com/ckpt/ckpt/internal/flush"
	"math"

	"github.com/ckpt/ckpt/internal/launch"
	"github.com/ckpt/ckpt/internal/policy"
	"github.com/ckpt/ckpt/internal/report"
	"github.com/ckpt/ckpt/model"
)

// MeanRestart is the mean restart a run measured: from a failure (the end
// of an attempt) to the state the next attempt restored. Without a restart
// seen it is the first launch's start-up, the best measure there is of what
// one costs; 0 without attempts.
func MeanRestart(attempts []launch.Attempt) float64 {
	var sum float64
	n := 0
	for i, a := range attempts[min(1, len(attempts)):] {
		if a.RestoredAt > 0 {
			sum += (a.RestoredAt - attempts[i].End).Seconds()
			n++
		}
	}
	switch {
	case n > 0:
		return sum / float64(n)
	case len(attempts) > 0:
		return attempts[0].RestoredAt.Seconds()
	}
	return 0
}

// MeanRecovery is the mean time from an injected failure to the state the
// next attempt restored: MeanRestart's restart plus the time the failed
// attempt took to end (noticing the failure, killing and reaping its
// ranks). That is the R of Daly's model, which starts the restart at the
// failure; the injector's clock counts it too. MeanRestart when no injected
// failure was followed by a restore.
func MeanRecovery(attempts []launch.Attempt) float64 {
	var sum float64
	n := 0
	for i, a := range attempts[min(1, len(attempts)):] {
		if prev := attempts[i]; prev.Injected && a.RestoredAt > 0 {
			sum += (a.RestoredAt - prev.InjectedAt).Seconds()
			n++
		}
	}
	if n == 0 {
		return MeanRestart(attempts)
	}
	return sum / float64(n)
}

// Daly is what Daly's model expects of a run with failures, from what the
// run measured.
type Daly struct {
	Restart    float64 // the mean restart measured (MeanRestart)
	Interval   float64 // Daly's interval for the measured cost and the MTTI
	Efficiency float64 // Daly's run time's efficiency there
	// Err is the measured efficiency's relative error against the model
	// (NaN without a failure-free run's time).
	Err float64
}

// CompareDaly evaluates Daly's run time (Oldfield et al. 2007, eq. 1) at
// Daly's interval for the measured checkpoint cost, the measured mean
// restart and the injector's MTTI; efficiency does not depend on the work.
// With the failure-free run's time (work > 0) and the measured one, it also
// gives the measured efficiency's relative error against the model. The
// model's values are NaN without a cost and an MTTI > 0.
func CompareDaly(work, measured, mtti, cost float64, attempts []launch.Attempt) Daly {
	d := Daly{Restart: MeanRestart(attempts), Interval: math.NaN(), Efficiency: math.NaN(), Err: math.NaN()}
	if cost <= 0 || mtti <= 0 {
		return d
	}
	d.Interval, d.Efficiency = policy.Measured{Level1Cost: cost, Level1MTTI: mtti, Restart: d.Restart}.Daly()
	if work > 0 && measured > 0 {
		d.Err = (work/measured - d.Efficiency) / d.Efficiency
	}
	return d
}

// Applied is the failure process a run really met, on the injector's
// clock (the job's wall clock from its first launch to its end, launch's
// Report.Elapsed): the failures its MTTI expects there, those injected, and
// the MTTI they amount to. The injector strikes at rate 1/MTTI on that
// clock (package inject), so Injected is Poisson with mean Expected; one
// run's count still strays from it by about √Expected, and so does its
// efficiency from the model's at the configured MTTI. The model at MTTI
// (this run's applied MTTI) takes the failures the run met, leaving the
// model's accounting of their cost (checkpoints, lost work, restarts) to
// be compared.
type Applied struct {
	Expected float64 // elapsed / MTTI
	Injected int
	MTTI     float64 // elapsed / Injected; +Inf without a failure
}

// AppliedFailures is the failure process of a run that lasted elapsed
// seconds on the injector's clock, with mtti configured and injected
// failures.
func AppliedFailures(elapsed, mtti float64, injected int) Applied {
	a := Applied{Expected: math.NaN(), Injected: injected, MTTI: math.Inf(1)}
	if mtti > 0 {
		a.Expected = elapsed / mtti
	}
	if injected > 0 {
		a.MTTI = elapsed / float64(injected)
	}
	return a
}

// DalyEfficiency is the efficiency of Daly's run time (Oldfield et al.
// 2007, eq. 1) at interval τ, cost δ, restart R and MTTI M, including its
// limit without failures (M = +Inf), τ/(τ + δ). NaN without τ, δ > 0.
func DalyEfficiency(interval, cost, restart, mtti float64) float64 {
	if !(interval > 0) || !(cost > 0) || !(mtti > 0) {
		return math.NaN()
	}
	if math.IsInf(mtti, 1) {
		return interval / (interval + cost)
	}
	_, eff := model.DalyRuntime(model.RuntimeInput{Work: 1, Interval: interval, Cost: cost, MTTI: mtti, Restart: restart})
	return eff
}

// AtApplied is Daly's model of the run at the MTTI it really met (a.MTTI),
// the interval it checkpointed at (d.Interval, Daly's for the configured
// MTTI) and the restart measured from the failures (recovery,
// MeanRecovery), and the measured efficiency's relative error against it
// (NaN without the failure-free run's time).
func (d Daly) AtApplied(a Applied, work, measured, cost, recovery float64) (efficiency, relErr float64) {
	efficiency = DalyEfficiency(d.Interval, cost, recovery, a.MTTI)
	relErr = math.NaN()
	if work > 0 && measured > 0 {
		relErr = (work/measured - efficiency) / efficiency
	}
	return efficiency, relErr
}

// Settings are what the flushing runs share.
type Settings struct {
	Interval  float64 // seconds of computation between checkpoints
	Every     int     // K: every K-th checkpoint is flushed
	Bandwidth float64 // the shared tier's bytes/s
	Busy      string  // non-blocking: a flush due while one runs is skipped, or waits
	Steps     int     // the job's steps (Himeno's iterations), for the work measured in the run (InRun)
}

// Markov is one flushing run set beside the two-level Markov model.
type Markov struct {
	Efficiency float64 // the model's (NaN if it cannot be evaluated)
	Why        string  // why not, if NaN
	C1, C2     float64 // measured level-1 cost; blocking level-2 cost (c1 + flush)
	Latency    float64 // non-blocking flush latency ℓ2 (NaN if none finished)
	Alpha      float64 // α measured (NaN if not; 0 if negative)
	ModelAlpha float64 // the α the model used: the measured one, or 0 (NaN for blocking)
	Restart    float64 // the mean restart measured
	// Measured are the inputs the model was evaluated at (zero if it
	// could not be), for ErrorByChanceMarkov.
	Measured policy.Measured
	// inputs are the model's inputs once the run measured them, also when
	// the model could not be evaluated for want of a failure (FiniteJob
	// takes rates of 0), and retry its RetryRecovery.
	inputs     policy.Measured
	haveInputs bool
	retry      bool
}

// CompareMarkov evaluates the two-level Markov model (SPEC-markov §4
// blocking, §5 non-blocking) at the run's schedule (interval t, K−1
// level-1 checkpoints between flushes) with what the run measured:
// level-1 cost, blocking flush time or flush latency and α, restart time,
// and the injector's rate of node failures — all of level 1, since XOR
// across the nodes survives any one node (λ2 = 0).
func CompareMarkov(nonblocking bool, s Settings, mtti float64, f flush.Stats, staged []launch.StageEvent, attempts []launch.Attempt) Markov {
	return compareMarkov(nonblocking, s, mtti, 0, false, f, staged, MeanRestart(attempts))
}

// CompareMarkovApplied is CompareMarkov at the failure process the run
// really met: the MTTI a.MTTI, and the restart measured from the failures
// (MeanRecovery).
func CompareMarkovApplied(nonblocking bool, s Settings, a Applied, f flush.Stats, staged []launch.StageEvent, attempts []launch.Attempt) Markov {
	return compareMarkov(nonblocking, s, a.MTTI, 0, false, f, staged, MeanRecovery(attempts))
}

// compareMarkov evaluates the model with level-1 failures every mtti and
// level-2 failures every mtti2 (0: none) on average; retry: a failure
// during a level-1 restart retries it (model.BlockingOptions.RetryRecovery).
func compareMarkov(nonblocking bool, s Settings, mtti, mtti2 float64, retry bool, f flush.Stats, staged []launch.StageEvent, restart float64) Markov {
	r := Markov{Efficiency: math.NaN(), ModelAlpha: math.NaN()}
	r.C1 = f.Level1Cost()
	r.C2 = r.C1 + f.MeanSeconds()
	r.Latency, r.Alpha = launch.StagedLatency(staged), f.Alpha()
	if r.Alpha < 0 {
		r.Alpha = 0 // noise: a flush does not speed the application up
	}
	r.Restart = restart
	if math.IsNaN(r.C1) || r.Restart <= 0 {
		r.Why = "the run measured no checkpoint or restart"
		return r
	}
	m := policy.Measured{Interval: s.Interval, Level1Cost: r.C1, NonBlocking: nonblocking, Alpha: r.Alpha,
		Restart: r.Restart, Level1MTTI: mtti, Level2MTTI: mtti2}
	if nonblocking {
		if math.IsNaN(r.Latency) {
			r.Why = "no non-blocking flush finished"
			return r
		}
		m.FlushCost = r.Latency
		// Without a measured α (no step of rank 0 ran while its node's
		// flush did) the model assumes none, and says so.
		r.ModelAlpha = m.ModelAlpha()
	} else {
		if math.IsNaN(r.C2) {
			r.Why = "no blocking flush completed"
			return r
		}
		m.FlushCost = f.MeanSeconds()
	}
	r.inputs, r.haveInputs, r.retry = m, true, retry
	res, err := evaluate(m, retry, model.Schedule{Interval: s.Interval, Counts: []int{s.Every - 1}})
	if err != nil {
		r.Why = err.Error()
		return r
	}
	r.Efficiency, r.Measured = res.Efficiency, m
	return r
}

// Report is `ckpt demo --json`: the run with failures against the
// failure-free reference and Daly's model.
type Report struct {
	ResultMatchesReference bool         `json:"result_matches_reference"`
	FailuresInjected       int          `json:"failures_injected"`
	RestartsFromCache      int          `json:"restarts_from_cache"`
	RestartsFromRebuild    int          `json:"restarts_from_rebuild"`
	RestartsFromShared     int          `json:"restarts_from_shared"`
	RestartsFromScratch    int          `json:"restarts_from_scratch"`
	Efficiency             report.Float `json:"efficiency"`
	Attempts               int          `json:"attempts"`
	RunSeconds             report.Float `json:"run_seconds"`
	ReferenceSeconds       report.Float `json:"reference_seconds"`
	CheckpointSeconds      report.Float `json:"checkpoint_seconds"`
	RestartSeconds         report.Float `json:"restart_seconds"`
	MTTISeconds            float64      `json:"mtti_seconds"`
	IntervalSeconds        report.Float `json:"interval_seconds"`
	ModelEfficiency        report.Float `json:"model_efficiency"`
	ModelError             report.Float `json:"model_error"`
	Result                 string       `json:"result"`
	ReferenceResult        string       `json:"reference_result"`
	// Added with the failure process a run met (Applied).
	FailuresExpected       report.Float `json:"failures_expected"`
	RecoverySeconds        report.Float `json:"recovery_seconds"`
	MTTIAppliedSeconds     report.Float `json:"mtti_applied_seconds"`
	ModelEfficiencyApplied report.Float `json:"model_efficiency_applied"`
	ModelErrorApplied      report.Float `json:"model_error_applied"`
	ScratchNoCheckpoint    int          `json:"scratch_no_checkpoint"`
	ScratchUnrecoverable   int          `json:"scratch_unrecoverable"`
	// Added with the reference run at both ends (Reference):
	// reference_seconds is their mean, the work.
	ReferenceSecondsBefore report.Float `json:"reference_seconds_before"`
	ReferenceSecondsAfter  report.Float `json:"reference_seconds_after"`
	// Added with the failures split by level (Levels) and the multi-level
	// model at them (MultilevelPlain).
	LevelsApplied
	// Added with nodes as hosts: true when each node ran in a network
	// namespace of its own (ckpt demo --netns); absent otherwise.
	Netns bool `json:"netns,omitempty"`
	// Added with ErrorByChance: the mean absolute and the mean error of one
	// simulated run at this run's parameters against the same model as
	// model_error_applied, when failures are exactly the model's.
	ModelErrorAppliedChance     report.Float `json:"model_error_applied_chance"`
	ModelErrorAppliedChanceBias report.Float `json:"model_error_applied_chance_bias"`
	// And ErrorByChanceLevels, for multilevel_error_applied in a run with
	// level-2 events (null without one).
	MultilevelErrorAppliedChance     report.Float `json:"multilevel_error_applied_chance"`
	MultilevelErrorAppliedChanceBias report.Float `json:"multilevel_error_applied_chance_bias"`
	InRunReport
	// Added with the level-2 rate predicted from the node failures and
	// the XOR layout (PredictLevels).
	LevelsPredicted
	// And ErrorByChancePredicted: how far one run strays from that model
	// (multilevel_error_predicted) by chance, over every run, those with
	// and without a level-2 failure alike.
	MultilevelErrorPredictedChance     report.Float `json:"multilevel_error_predicted_chance"`
	MultilevelErrorPredictedChanceBias report.Float `json:"multilevel_error_predicted_chance_bias"`
}

// InRunReport is the efficiency against the work measured in the run
// itself (InRun) and the models' errors against it, in the demo's JSON.
type InRunReport struct {
	StepSeconds                 report.Float  `json:"step_seconds"`
	WorkInRunSeconds            report.Float  `json:"work_in_run_seconds"`
	EfficiencyInRun             report.Float  `json:"efficiency_in_run"`
	ModelErrorAppliedInRun      *report.Float `json:"model_error_applied_in_run,omitempty"`  // plain demo
	MarkovErrorAppliedInRun     *report.Float `json:"markov_error_applied_in_run,omitempty"` // flushing runs
	MultilevelErrorAppliedInRun report.Float  `json:"multilevel_error_applied_in_run"`
	// Added with the finite-job models (WithFinite).
	FiniteReport
}

// NewInRunReport is the JSON of a run of run seconds against its in-run
// work w: model is the efficiency of the run's model at the failures it
// met (the Markov model's for a flushing run, Daly's for the plain demo),
// multi the multi-level model's by level.
func NewInRunReport(w InRun, run, model float64, flushing bool, multi float64) InRunReport {
	eff := Efficiency(w.Work, run)
	r := InRunReport{StepSeconds: report.Float(w.StepSeconds), WorkInRunSeconds: report.Float(w.Work),
		EfficiencyInRun: report.Float(eff), MultilevelErrorAppliedInRun: report.Float(RelErr(eff, multi))}
	e := report.Float(RelErr(eff, model))
	if flushing {
		r.MarkovErrorAppliedInRun = &e
	} else {
		r.ModelErrorAppliedInRun = &e
	}
	return r
}

// LevelsApplied is a run's failures by level and the multi-level Markov
// model at their applied rates, in the demo's JSON.
type LevelsApplied struct {
	Level2Failures              int          `json:"level2_failures"`
	Level1MTTIAppliedSeconds    report.Float `json:"level1_mtti_applied_seconds"`
	Level2MTTIAppliedSeconds    report.Float `json:"level2_mtti_applied_seconds"`
	MultilevelEfficiencyApplied report.Float `json:"multilevel_efficiency_applied"`
	MultilevelErrorApplied      report.Float `json:"multilevel_error_applied"`
}

// NewLevelsApplied is the JSON of a run of efficiency measured, at the
// failures lv by level, against the multi-level model's efficiency.
func NewLevelsApplied(lv Levels, measured, efficiency float64) LevelsApplied {
	return LevelsApplied{Level2Failures: lv.Level2, Level1MTTIAppliedSeconds: report.Float(lv.Level1MTTI),
		Level2MTTIAppliedSeconds: report.Float(lv.Level2MTTI), MultilevelEfficiencyApplied: report.Float(efficiency),
		MultilevelErrorApplied: report.Float(RelErr(measured, efficiency))}
}

// LevelsPredicted is the multi-level model of a run at the level-2 rate
// its node failures imply (PredictLevels), in the demo's JSON: the
// comparison for every run, those that restarted from scratch or from
// the shared tier included, with a λ2 that does not come from the run's
// own outcome (LevelsApplied's does). Errors are measured / model − 1,
// against the reference's work and against the work measured in the run.
type LevelsPredicted struct {
	Level2Probability             report.Float `json:"level2_probability"`
	Level2FailuresPredicted       report.Float `json:"level2_failures_predicted"`
	Level1MTTIPredictedSeconds    report.Float `json:"level1_mtti_predicted_seconds"`
	Level2MTTIPredictedSeconds    report.Float `json:"level2_mtti_predicted_seconds"`
	MultilevelEfficiencyPredicted report.Float `json:"multilevel_efficiency_predicted"`
	MultilevelErrorPredicted      report.Float `json:"multilevel_error_predicted"`
	MultilevelErrorPredictedInRun report.Float `json:"multilevel_error_predicted_in_run"`
	// The same over the finite job the run did (FinitePlain,
	// FiniteMarkov), against the work measured in the run.
	MultilevelFiniteEfficiencyPredicted report.Float `json:"multilevel_finite_efficiency_predicted"`
	MultilevelFiniteErrorPredictedInRun report.Float `json:"multilevel_finite_error_predicted_in_run"`
}

// NewLevelsPredicted is the JSON of a run of efficiency measured (and
// inRun against the work measured in the run) against the multi-level
// model's efficiency at the predicted levels p, steady-state and over the
// finite job (finite).
func NewLevelsPredicted(p Predicted, measured, inRun, efficiency, finite float64) LevelsPredicted {
	return LevelsPredicted{Level2Probability: report.Float(p.Probability), Level2FailuresPredicted: report.Float(p.Level2Expected),
		Level1MTTIPredictedSeconds: report.Float(p.Levels.Level1MTTI), Level2MTTIPredictedSeconds: report.Float(p.Levels.Level2MTTI),
		MultilevelEfficiencyPredicted: report.Float(efficiency), MultilevelErrorPredicted: report.Float(RelErr(measured, efficiency)),
		MultilevelErrorPredictedInRun:       report.Float(RelErr(inRun, efficiency)),
		MultilevelFiniteEfficiencyPredicted: report.Float(finite), MultilevelFiniteErrorPredictedInRun: report.Float(RelErr(inRun, finite))}
}

// FlushReport is `ckpt demo --flush MODE --json`. `ckpt model multilevel
// --alpha-from` and `ckpt plan --alpha-from` read NonBlocking.Alpha back.
type FlushReport struct {
	ResultMatchesReference bool         `json:"result_matches_reference"`
	ReferenceSeconds       report.Float `json:"reference_seconds"`
	IntervalSeconds        float64      `json:"interval_seconds"`
	FlushEvery             int          `json:"flush_every"`
	SharedBandwidth        float64      `json:"shared_bandwidth_bytes_per_second"`
	MTTISeconds            float64      `json:"mtti_seconds"`
	Blocking               *FlushRun    `json:"blocking,omitempty"`
	NonBlocking            *FlushRun    `json:"nonblocking,omitempty"`
	// NonBlockingGain is the non-blocking run's efficiency minus the
	// blocking one's (--flush compare only).
	NonBlockingGain *report.Float `json:"nonblocking_gain,omitempty"`
	// Added with the reference run at both ends (Reference):
	// reference_seconds is their mean, the work.
	ReferenceSecondsBefore report.Float `json:"reference_seconds_before"`
	ReferenceSecondsAfter  report.Float `json:"reference_seconds_after"`
}

// FlushRun is one flushing run in a FlushReport.
type FlushRun struct {
	ResultMatchesReference  bool         `json:"result_matches_reference"`
	FailuresInjected        int          `json:"failures_injected"`
	RestartsFromCache       int          `json:"restarts_from_cache"`
	RestartsFromRebuild     int          `json:"restarts_from_rebuild"`
	RestartsFromShared      int          `json:"restarts_from_shared"`
	RestartsFromScratch     int          `json:"restarts_from_scratch"`
	Failures                int          `json:"failures"`
	ScratchNoCheckpoint     int          `json:"scratch_no_checkpoint"`
	ScratchUnrecoverable    int          `json:"scratch_unrecoverable"`
	RelaunchesNeverRestored int          `json:"relaunches_never_restored"`
	RunSeconds              report.Float `json:"run_seconds"`
	Efficiency              report.Float `json:"efficiency"`
	MarkovEfficiency        report.Float `json:"markov_efficiency"`
	MarkovError             report.Float `json:"markov_error"`
	Level1CostSeconds       report.Float `json:"level1_cost_seconds"`
	Level2CostSeconds       report.Float `json:"level2_cost_seconds"`
	FlushLatencySeconds     report.Float `json:"flush_latency_seconds"`
	Alpha                   report.Float `json:"alpha"`
	MarkovAlpha             report.Float `json:"markov_alpha"`
	RestartSeconds          report.Float `json:"restart_seconds"`
	// Flush is the run's flush statistics as `ckpt run --json` reports
	// them.
	Flush launch.FlushReport `json:"flush"`
	// Added with the failure process a run met (Applied).
	FailuresExpected        report.Float `json:"failures_expected"`
	RecoverySeconds         report.Float `json:"recovery_seconds"`
	MTTIAppliedSeconds      report.Float `json:"mtti_applied_seconds"`
	MarkovEfficiencyApplied report.Float `json:"markov_efficiency_applied"`
	MarkovErrorApplied      report.Float `json:"markov_error_applied"`
	// Added with the failures split by level (Levels) and the Markov
	// model at them (CompareMarkovLevels).
	LevelsApplied
	// What one run strays from the Markov model at the failures met by
	// chance alone (ErrorByChanceMarkov).
	MarkovErrorAppliedChance     report.Float `json:"markov_error_applied_chance"`
	MarkovErrorAppliedChanceBias report.Float `json:"markov_error_applied_chance_bias"`
	InRunReport
	// Added with the level-2 rate predicted from the node failures and
	// the XOR layout (PredictLevels).
	LevelsPredicted
}

// LauncherReport is `ckpt demo --launcher NAME --json`: the plain demo's
// Report with the launcher that ran its jobs and the nodes its run with
// failures left out after their failure (every one, re-admitted or not;
// an empty list when none was).
type LauncherReport struct {
	Report
	Launcher      string             `json:"launcher"`
	ExcludedNodes []launch.Exclusion `json:"excluded_nodes"`
}
