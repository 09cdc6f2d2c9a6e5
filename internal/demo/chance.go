package demo

import (
	"context"
	"math"

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
