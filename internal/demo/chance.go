package demo

import (
	"context"
	"math"

	"github.com/ckpt/ckpt/internal/policy"
	"github.com/ckpt/ckpt/model"
	"github.com/ckpt/ckpt/sim"
)

// chanceReplications is how many simulated runs ErrorByChance averages:
// enough for its mean |error| to ±0.3 points at the demo's parameters,
// few enough to take milliseconds.
const chanceReplications = 4000

// Chance is what one run's error against Daly's model at the failure rate
// it met (Daly.AtApplied) is by chance alone: the mean and mean absolute
// error over simulated runs whose failures are exactly the model's (a
// Poisson process at rate 1/mtti on the wall clock, sim.Result.AppliedError)
// and whose work, interval, cost and restart are the run's.
type Chance struct {
	Mean, MeanAbs float64 // NaN if it cannot be simulated
}

// ErrorByChance simulates the single-level setting of eq. 1 (Oldfield et
// al. 2007) at the given work, interval τ, cost δ, restart R and MTTI M,
// chanceReplications times with a fixed seed, so that the same arguments
// give the same answer. A real run that errs by about MeanAbs agrees with
// the model as well as one run can; the model's own accuracy needs the mean
// error over many runs, which chance moves by about MeanAbs/√runs.
func ErrorByChance(work, interval, cost, restart, mtti float64) Chance {
	c := Chance{Mean: math.NaN(), MeanAbs: math.NaN()}
	if !(work > 0) || !(interval > 0) || !(cost > 0) || !(restart >= 0) || !(mtti > 0) || math.IsInf(mtti, 1) {
		return c
	}
	cfg := sim.Config{Strategy: sim.Coordinated, Work: work,
		Levels:   model.Levels{Rates: []float64{1 / mtti}, Cost: []float64{cost}, Restart: []float64{restart}},
		Schedule: model.Schedule{Interval: interval}}
	res, err := sim.Run(context.Background(), cfg, sim.Replications(chanceReplications), sim.Seed(1))
	if err != nil {
		return c
	}
	return Chance{Mean: res.AppliedError.Mean, MeanAbs: res.AppliedAbsError.Mean}
}

// levelsReplications is how many runs ErrorByChanceLevels simulates; each
// is compared with the Markov model at its own failures (about 20 µs).
const levelsReplications = 2000

// ErrorByChanceLevels is Chance for the plain demo's comparison with the
// multi-level model at the failures a run met by level (MultilevelPlain):
// simulated runs of the same two-level setting (checkpoints every
// interval at cost; level 2 is the job's start; both levels restart in
// recovery) with failures at the run's applied rates lv, each compared
// with MultilevelPlain at the failures it met by level, counting only the
// simulated runs that met a level-2 failure as the real one did. It is
// for a run with level-2 events (NaN for one without: ErrorByChance
// covers those). A level-2 failure costs all the work since the start, and
// one or two of them, early or late, decide such a run's efficiency, so
// chance moves it far more than it moves a run of level-1 failures alone.
func ErrorByChanceLevels(work, interval, cost, recovery float64, lv Levels) Chance {
	c := Chance{Mean: math.NaN(), MeanAbs: math.NaN()}
	if lv.Level2 == 0 || !(work > 0) || !(interval > 0) || !(cost > 0) || !(recovery >= 0) {
		return c
	}
	rate := func(m float64) float64 {
		if math.IsInf(m, 1) {
			return 1e-300 // none met: the simulator needs a rate > 0
		}
		return 1 / m
	}
	n := max(1, int(math.Round(work/interval)))
	cfg := sim.Config{Strategy: sim.Coordinated, Work: work,
		Levels: model.Levels{Rates: []float64{rate(lv.Level1MTTI), rate(lv.Level2MTTI)},
			Cost: []float64{cost, cost}, Restart: []float64{recovery, recovery}},
		Schedule: model.Schedule{Interval: interval, Counts: []int{n - 1}}}
	errs := make([]float64, levelsReplications)
	for i := range errs {
		errs[i] = math.NaN()
	}
	_, err := sim.Run(context.Background(), cfg, sim.Replications(levelsReplications), sim.Seed(1),
		sim.Observe(func(r int, s sim.Sample) {
			if s.Failures[1] == 0 {
				return
			}
			mtti := func(k int) float64 {
				if k == 0 {
					return math.Inf(1)
				}
				return s.Seconds / float64(k)
			}
			m := MultilevelPlain(interval, cost, recovery, work,
				Levels{Level2: s.Failures[1], Level1MTTI: mtti(s.Failures[0]), Level2MTTI: mtti(s.Failures[1])})
			errs[r] = RelErr(work/s.Seconds, m)
		}))
	if err != nil {
		return c
	}
	return meanErrors(errs)
}

// markovReplications is how many runs ErrorByChanceMarkov simulates.
const markovReplications = 2000

// ErrorByChanceMarkov is Chance for a flushing run's comparison with the
// two-level Markov model at the failure rate it met
// (CompareMarkovApplied, whose inputs m are): simulated runs of work
// seconds at the schedule s (every s.Every-th checkpoint flushed, blocking
// or in the background), failures at m's rate, each compared with the
// model at the rate it met; only runs with a failure count, since the
// demo compares no other. NaN when m is zero (the model was not
// evaluated) or the simulation cannot run.
func ErrorByChanceMarkov(s Settings, work float64, m policy.Measured) Chance {
	c := Chance{Mean: math.NaN(), MeanAbs: math.NaN()}
	if !(work > 0) || !(m.Level1MTTI > 0) || math.IsInf(m.Level1MTTI, 1) || !(s.Interval > 0) || s.Every < 1 {
		return c
	}
	lv := m.Levels()
	if lv.Rates[1] == 0 {
		lv.Rates[1] = 1e-300 // the simulator needs a rate > 0
	}
	sched := model.Schedule{Interval: s.Interval, Counts: []int{s.Every - 1}}
	cfg := sim.Config{Strategy: sim.Coordinated, Work: work, Levels: lv, Schedule: sched}
	if m.NonBlocking {
		cfg.Strategy, cfg.FlushLatency, cfg.Alpha = sim.NonBlocking, m.FlushCost, m.ModelAlpha()
	}
	errs := make([]float64, markovReplications)
	for i := range errs {
		errs[i] = math.NaN()
	}
	_, err := sim.Run(context.Background(), cfg, sim.Replications(markovReplications), sim.Seed(1),
		sim.Observe(func(r int, smp sim.Sample) {
			n := 0
			for _, f := range smp.Failures {
				n += f
			}
			if n == 0 {
				return
			}
			at := m
			at.Level1MTTI, at.Level2MTTI = smp.Seconds/float64(n), 0
			if res, err := at.Evaluate(sched); err == nil {
				errs[r] = RelErr(work/smp.Seconds, res.Efficiency)
			}
		}))
	if err != nil {
		return c
	}
	return meanErrors(errs)
}

// meanErrors is the mean and mean absolute value of the errors that are
// not NaN, summed in order (the same sums whatever the workers did first).
func meanErrors(errs []float64) Chance {
	var sum, sumAbs float64
	k := 0
	for _, e := range errs {
		if !math.IsNaN(e) {
			sum, sumAbs, k = sum+e, sumAbs+math.Abs(e), k+1
		}
	}
	if k == 0 {
		return Chance{Mean: math.NaN(), MeanAbs: math.NaN()}
	}
	return Chance{Mean: sum / float64(k), MeanAbs: sumAbs / float64(k)}
}

// ErrorByChancePredicted is Chance for the plain demo's comparison with
// the multi-level model at the level-2 rate the node failures imply
// (MultilevelPlain at PredictLevels), over every run, not only those that
// met a level-2 failure: simulated runs of the plain demo's two-level
// setting (as ErrorByChanceLevels: level 2 is the job's start) whose
// failures are exactly the model's (rate 1/mtti, of which the fraction
// Level2Probability at the recovery window is of level 2), each compared
// with MultilevelPlain at PredictLevels of the failures it met, as the
// demo compares a real run. Most runs meet no level-2 failure and land a
// little above the model; the few that do lose all the work since the
// start and land far below it: that lottery, not the model, sets how far
// the mean |error| of a handful of runs strays (NaN if it cannot be
// simulated).
func ErrorByChancePredicted(work, interval, cost, recovery, mtti float64, set, nodes int) Chance {
	c := Chance{Mean: math.NaN(), MeanAbs: math.NaN()}
	if !(work > 0) || !(interval > 0) || !(cost > 0) || !(recovery >= 0) || !(mtti > 0) || math.IsInf(mtti, 1) {
		return c
	}
	p := Level2Probability(1/mtti, recovery, set, nodes)
	if math.IsNaN(p) {
		return c
	}
	n := max(1, int(math.Round(work/interval)))
	cfg := sim.Config{Strategy: sim.Coordinated, Work: work,
		Levels: model.Levels{Rates: []float64{(1 - p) / mtti, max(p/mtti, 1e-300)},
			Cost: []float64{cost, cost}, Restart: []float64{recovery, recovery}},
		Schedule: model.Schedule{Interval: interval, Counts: []int{n - 1}}}
	errs := make([]float64, levelsReplications)
	_, err := sim.Run(context.Background(), cfg, sim.Replications(levelsReplications), sim.Seed(1),
		sim.Observe(func(r int, s sim.Sample) {
			pred := PredictLevels(s.Seconds, s.Failures[0]+s.Failures[1], recovery, set, nodes)
			errs[r] = RelErr(work/s.Seconds, MultilevelPlain(interval, cost, recovery, work, pred.Levels))
		}))
	if err != nil {
		return c
	}
	return meanErrors(errs)
}
