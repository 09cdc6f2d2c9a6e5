package demo

import (
	"math"

	"github.com/ckpt/ckpt/internal/policy"
	"github.com/ckpt/ckpt/internal/report"
	"github.com/ckpt/ckpt/model"
)

// The models the demo compares a run with are rates: the efficiency of a
// job that goes on for ever. The demo's job is a few periods long. It
// takes no checkpoint after its last step, so its last interval is
// partial and its last period is cut short, and it flushes
// ⌊checkpoints / K⌋ times where the steady-state model charges
// work / (K t) periods of K checkpoints. With a blocking flush of 0.4 s
// in a job of 7 s the part of a period the job never reaches moves the
// efficiency by some percent, always the same way (docs/MODELS.md,
// "The finite job"). The finite-job models here are the same models laid
// over the job the run really did (model.Scheme.EvaluateJob), with the
// same inputs.

// JobOf is the finite job of a run of steps steps whose work was measured
// in the run (w): steps × the step time of computation, checkpointed
// every interval of it, after a lead of w.Start (the first launch to the
// start of computing, in which the rank's interval has not started yet:
// policy.NewLocal starts it after the restore). ok is false without a
// step time or a start.
func JobOf(steps int, w InRun) (job model.Job, ok bool) {
	if steps <= 0 || !(w.StepSeconds > 0) || !(w.Start >= 0) || math.IsInf(w.Start, 0) || math.IsInf(w.StepSeconds, 0) {
		return model.Job{}, false
	}
	return model.Job{Work: float64(steps) * w.StepSeconds, Lead: w.Start}, true
}

// Finite is what the finite-job models expect of one run: the efficiency
// of the run's model (the Markov model at the applied rate for a flushing
// run, Daly's single-level model for the plain demo) and of the
// multi-level model by level, over the job the run did, and the
// checkpoints and flushes they take in it. NaN efficiencies where the
// models cannot be evaluated.
type Finite struct {
	Efficiency, Multilevel float64
	Checkpoints, Flushes   int
}

// NoFinite is Finite with nothing evaluated.
func NoFinite() Finite { return Finite{Efficiency: math.NaN(), Multilevel: math.NaN()} }

// FiniteJob is the model of r's inputs over a finite job: the same
// levels, costs, restart, schedule and rates as r.Efficiency, failure
// rates of 0 included (a run that met no failure: then the job's work
// plus the checkpoints and flushes it takes, exactly). NaN when r's
// inputs were not measured.
func (r Markov) FiniteJob(s Settings, job model.Job) model.JobResult {
	res := model.JobResult{Seconds: math.NaN(), Efficiency: math.NaN()}
	if !r.haveInputs || s.Every < 1 {
		return res
	}
	m := r.inputs
	sch := model.Scheme{Levels: m.Levels(), NonBlocking: m.NonBlocking, FlushLatency: m.FlushCost, Alpha: m.ModelAlpha(),
		Options: model.BlockingOptions{RetryRecovery: r.retry}}
	if got, err := sch.EvaluateJob(model.Schedule{Interval: s.Interval, Counts: []int{s.Every - 1}}, job); err == nil {
		res = got
	}
	return res
}

// FiniteMarkov is a flushing run's Finite: applied is the Markov model at
// the failures met (CompareMarkovApplied), levels the same by level
// (CompareMarkovLevels), over job.
// The checkpoints and flushes are the job's, whether or not the models
// could be evaluated.
func FiniteMarkov(s Settings, applied, levels Markov, job model.Job) Finite {
	f := Finite{Efficiency: applied.FiniteJob(s, job).Efficiency, Multilevel: levels.FiniteJob(s, job).Efficiency}
	if s.Interval > 0 && s.Every >= 1 && job.Work > 0 {
		f.Checkpoints = model.JobSegments(job.Work, s.Interval) - 1
		f.Flushes = f.Checkpoints / s.Every
	}
	return f
}

// FinitePlain is the plain demo's Finite: Daly's single-level model
// (Oldfield et al. 2007, eq. 1, per segment: SPEC-markov §4.5) at
// interval τ, cost δ, the recovery R and the applied MTTI, and the
// multi-level model of MultilevelPlain by level, over job. The plain demo
// has no shared tier, so the whole job is one level-2 period that ends
// without a level-2 checkpoint (the model MultilevelPlain charges one
// checkpoint more than the run takes, at the end: this one does not).
// Infinite MTTIs are rates of 0.
func FinitePlain(interval, cost, recovery, mtti float64, lv Levels, job model.Job) Finite {
	f := NoFinite()
	if !(interval > 0) || !(cost > 0) || !(recovery >= 0) || !(mtti > 0) {
		return f
	}
	one := model.Scheme{Levels: model.Levels{Rates: []float64{1 / mtti}, Cost: []float64{cost}, Restart: []float64{recovery}}}
	if res, err := one.EvaluateJob(model.Schedule{Interval: interval}, job); err == nil {
		f.Efficiency = res.Efficiency
	}
	if job.Work > 0 {
		f.Checkpoints = model.JobSegments(job.Work, interval) - 1
	}
	// One period longer than the job: its start is the only level-2
	// checkpoint.
	m := policy.Measured{Interval: interval, Level1Cost: cost, Restart: recovery,
		Level1MTTI: lv.Level1MTTI, Level2MTTI: lv.Level2MTTI}
	two := model.Scheme{Levels: m.Levels(), Options: model.BlockingOptions{RetryRecovery: true}}
	segs := model.JobSegments(job.Work, interval)
	if res, err := two.EvaluateJob(model.Schedule{Interval: interval, Counts: []int{segs}}, job); err == nil {
		f.Multilevel = res.Efficiency
	}
	return f
}

// FiniteReport is the finite-job models in the demo's JSON, beside the
// steady-state ones: their efficiency and the run's in-run efficiency's
// error against them, for the run's model (markov_… for a flushing run,
// model_… for the plain demo) and the multi-level one by level.
type FiniteReport struct {
	ModelFiniteEfficiency      *report.Float `json:"model_finite_efficiency,omitempty"`    // plain demo
	ModelFiniteErrorInRun      *report.Float `json:"model_finite_error_in_run,omitempty"`  // plain demo
	MarkovFiniteEfficiency     *report.Float `json:"markov_finite_efficiency,omitempty"`   // flushing runs
	MarkovFiniteErrorInRun     *report.Float `json:"markov_finite_error_in_run,omitempty"` // flushing runs
	MultilevelFiniteEfficiency report.Float  `json:"multilevel_finite_efficiency"`
	MultilevelFiniteErrorInRun report.Float  `json:"multilevel_finite_error_in_run"`
	FiniteCheckpoints          int           `json:"finite_checkpoints"`
	FiniteFlushes              *int          `json:"finite_flushes,omitempty"` // flushing runs
}

// WithFinite is r with the finite-job models f beside it.
func (r InRunReport) WithFinite(f Finite) InRunReport {
	eff := float64(r.EfficiencyInRun)
	e, err := report.Float(f.Efficiency), report.Float(RelErr(eff, f.Efficiency))
	r.FiniteReport = FiniteReport{MultilevelFiniteEfficiency: report.Float(f.Multilevel),
		MultilevelFiniteErrorInRun: report.Float(RelErr(eff, f.Multilevel)), FiniteCheckpoints: f.Checkpoints}
	if r.MarkovErrorAppliedInRun != nil {
		flushes := f.Flushes
		r.MarkovFiniteEfficiency, r.MarkovFiniteErrorInRun, r.FiniteFlushes = &e, &err, &flushes
	} else {
		r.ModelFiniteEfficiency, r.ModelFiniteErrorInRun = &e, &err
	}
	return r
}
