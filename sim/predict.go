package sim

import (
	"math"

	"github.com/ckpt/ckpt/model"
)

// Prediction is what the model of a simulation's strategy expects of it:
// the model a simulation is compared with, written once here for `ckpt
// simulate` and for the validation tests.
type Prediction struct {
	// Kind names the strategy as `ckpt simulate` reports it: single-level,
	// blocking, nonblocking or uncoordinated.
	Kind string
	// Model names the model the simulation is compared with.
	Model string
	// Optimized tells that the schedule is the model's optimum (the
	// configuration gave no interval).
	Optimized bool
	// Efficiency is the model's efficiency for the schedule: work over
	// expected run time (per process, for Uncoordinated).
	Efficiency float64
	// PeriodSeconds is the expected wall-clock time of one top-level
	// period (Coordinated and NonBlocking; 0 for Uncoordinated).
	PeriodSeconds float64
	// Incomplete is m, the segments the background copy spans
	// (NonBlocking).
	Incomplete int
	// Phi is the dependency factor φ of the dependencies (Uncoordinated).
	Phi float64
}

// IntervalError is Predict's error when the configuration gives no
// interval and the model has no optimal one (Fialho et al. 2011, eq. 11).
type IntervalError struct{ Err error }

func (e *IntervalError) Error() string { return "no interval given and " + e.Err.Error() }
func (e *IntervalError) Unwrap() error { return e.Err }

// Predict chooses the model that describes cfg and evaluates it:
//
//   - Coordinated, one level: Daly's run time (Oldfield et al. 2007, eq. 1),
//     as the one-level blocking Markov model;
//   - Coordinated, several levels: the blocking Markov model (Moody et al.;
//     docs/MODELS.md), the L1-protected variant with L1ProtectedFirst;
//   - NonBlocking: the non-blocking Markov model (Sato et al. 2012, §V);
//   - Uncoordinated: Fialho et al. 2011, eq. 10, per process, with φ from
//     cfg.Dependents; logProtect is their Δ_lp (logging time per MTTI
//     window), which Predict turns into cfg.LogOverhead (κ, see
//     LogOverheadFor). logProtect is unused by the other strategies.
//
// A zero cfg.Interval asks for the model's optimum: the Markov optimiser
// (interval and counts), or eq. 11 for Uncoordinated. Predict returns cfg
// with the model's schedule and, for Uncoordinated,
// LogOverhead set. Errors are the models' (*model.ParamError,
// model.ErrInfeasible, model.ErrNoOptimum) or an *IntervalError.
func Predict(cfg Config, logProtect float64) (Config, Prediction, error) {
	p := Prediction{Optimized: cfg.Interval == 0}
	if cfg.Strategy == Uncoordinated {
		return predictUncoordinated(cfg, logProtect, p)
	}
	scheme := model.Scheme{Levels: cfg.Levels, Options: model.BlockingOptions{L1ProtectedFirst: cfg.L1ProtectedFirst}}
	p.Kind, p.Model = "blocking", "Markov model, blocking (docs/MODELS.md)"
	switch {
	case cfg.Strategy == NonBlocking:
		scheme = model.Scheme{Levels: cfg.Levels, NonBlocking: true, FlushLatency: cfg.FlushLatency, Alpha: cfg.Alpha}
		p.Kind, p.Model = "nonblocking", "Markov model, non-blocking (docs/MODELS.md)"
	case cfg.L() == 1:
		p.Kind, p.Model = "single-level", "Daly, as in Oldfield et al. 2007, eq. 1"
	}
	var res model.MultilevelResult
	var err error
	if p.Optimized {
		res, err = scheme.Optimize()
	} else {
		res, err = scheme.Evaluate(cfg.Schedule)
	}
	if err != nil {
		return cfg, p, err
	}
	cfg.Schedule = res.Schedule
	p.Efficiency, p.PeriodSeconds, p.Incomplete = res.Efficiency, res.PeriodSeconds, res.Incomplete
	return cfg, p, nil
}

func predictUncoordinated(cfg Config, logProtect float64, p Prediction) (Config, Prediction, error) {
	p.Kind, p.Model = "uncoordinated", "Fialho et al. 2011, eq. 10 (per process)"
	P := make([]int, len(cfg.Dependents))
	for n, d := range cfg.Dependents {
		P[n] = 1 + len(d)
	}
	var err error
	if p.Phi, err = model.Phi(P); err != nil {
		return cfg, p, err
	}
	in := ProcessInput(cfg, p.Phi, logProtect)
	if p.Optimized {
		if cfg.Interval, err = model.FialhoParallelInterval(in); err != nil {
			return cfg, p, &IntervalError{err}
		}
	}
	cfg.Counts = []int{}
	if cfg.LogOverhead, err = LogOverheadFor(in, cfg.Interval); err != nil {
		return cfg, p, err
	}
	p.Efficiency = 1 - model.FialhoParallelOverhead(cfg.Interval, in)/in.MTTI
	return cfg, p, nil
}

// ProcessInput is the input of Fialho et al. 2011's per-process model for
// an Uncoordinated configuration of dependency factor phi and logging time
// Δ_lp per MTTI window logProtect: the whole application's MTTI, t_c, t_l,
// t_d and Δ_lr as the configuration gives them.
func ProcessInput(cfg Config, phi, logProtect float64) model.IntervalInput {
	return model.IntervalInput{Cost: cfg.Cost[0], MTTI: 1 / cfg.Rates[0], Restart: cfg.Restart[0], Detect: cfg.Detect,
		Phi: phi, LogProtect: logProtect, LogReplay: cfg.LogReplay}
}

// EstimatedEvents estimates the events of one replication of cfg from the
// model's efficiency eff: the intervals, plus two events per failure over
// the expected run time; for Uncoordinated, each failure touches its
// process and its dependents. It is +Inf when eff is not > 0.
func EstimatedEvents(cfg Config, eff float64) float64 {
	if !(eff > 0) {
		return math.Inf(1)
	}
	total := 0.0
	for _, x := range cfg.Rates {
		total += x
	}
	failures := total * cfg.Work / eff
	if cfg.Strategy == Uncoordinated {
		deps := 0
		for _, d := range cfg.Dependents {
			deps += len(d)
		}
		return failures * (1 + float64(deps)/float64(len(cfg.Dependents)))
	}
	return cfg.Work/cfg.Interval + 2*failures
}
