package policy

import (
	"math"

	"github.com/ckpt/ckpt/model"
)

// Measured is what a job measured of itself (seconds), to be set beside
// the models or to choose by them. It is the one place where measurements
// become model inputs: `ckpt demo` (Daly's model and the two-level Markov
// model against a run), ChooseK (the auto-K of the flush schedule) and
// whatever else compares a run with a model go through it.
//
// The assumptions, written once:
//
//  1. Failures of level 1 (those node-local redundancy survives) come at
//     rate 1/Level1MTTI; those only the shared tier survives at
//     1/Level2MTTI, or not at all when Level2MTTI is 0 (λ2 = 0: the flush
//     protects against nothing the job meets and costs what it costs).
//  2. A level-1 checkpoint blocks the application for Level1Cost (a mean
//     below 1 µs counts as 1 µs: the models need a cost > 0).
//  3. Blocking flush: a level-2 checkpoint blocks for Level1Cost +
//     FlushCost, the blocking copy's mean time. Non-blocking: it blocks
//     for Level1Cost as level 1 does, and the copy runs in the background
//     for FlushCost (the latency ℓ2), slowing computation by (1 + α).
//  4. α is the slowdown measured while a copy ran; not measured (NaN) or
//     negative (noise: a copy does not speed the application up), it is 0.
//  5. Recovery: when a restart was measured (Restart, from a failure to the
//     restored state), every level recovers in that time; when not (NaN),
//     a recovery costs what writing the checkpoint cost: Level1Cost from
//     level 1, Level1Cost + FlushCost from level 2.
type Measured struct {
	Interval    float64 // t: computation between checkpoints
	Level1Cost  float64 // c1: a checkpoint's blocking time
	FlushCost   float64 // a blocking flush's time, or the latency ℓ2 of a background one
	NonBlocking bool
	Alpha       float64 // α measured, NaN if not
	Restart     float64 // r measured, NaN if not
	Level1MTTI  float64 // 1/λ1
	Level2MTTI  float64 // 1/λ2; 0: λ2 = 0
}

// ModelAlpha is the α the model takes (assumption 4).
func (m Measured) ModelAlpha() float64 {
	if math.IsNaN(m.Alpha) || m.Alpha < 0 {
		return 0
	}
	return m.Alpha
}

// Levels are the two levels of the Markov model (assumptions 1–3, 5).
func (m Measured) Levels() model.Levels {
	c1, f := max(m.Level1Cost, 1e-6), m.FlushCost
	lv := model.Levels{Rates: []float64{1 / m.Level1MTTI, 0}, Cost: []float64{c1, c1 + f}, Restart: []float64{c1, c1 + f}}
	if m.Level2MTTI > 0 {
		lv.Rates[1] = 1 / m.Level2MTTI
	}
	if m.NonBlocking {
		lv.Cost[1] = c1
	}
	if !math.IsNaN(m.Restart) {
		lv.Restart = []float64{m.Restart, m.Restart}
	}
	return lv
}

// Evaluate evaluates the two-level Markov model at the schedule: blocking
// (SPEC-markov §4) or non-blocking (§5), as the job flushes.
func (m Measured) Evaluate(s model.Schedule) (model.MultilevelResult, error) {
	return model.Scheme{Levels: m.Levels(), NonBlocking: m.NonBlocking, FlushLatency: m.FlushCost, Alpha: m.ModelAlpha()}.Evaluate(s)
}

// Daly is the single-level view of the measurements: Daly's interval
// (Daly 2006) for the checkpoint cost and the level-1 MTTI, and the
// efficiency of Daly's run time there (Oldfield et al. 2007, eq. 1), with
// the restart as measured (0 if not). Both are NaN without a cost and an
// MTTI > 0.
func (m Measured) Daly() (interval, efficiency float64) {
	if !(m.Level1Cost > 0) || !(m.Level1MTTI > 0) {
		return math.NaN(), math.NaN()
	}
	r := m.Restart
	if math.IsNaN(r) {
		r = 0
	}
	interval = model.Daly(m.Level1Cost, m.Level1MTTI)
	_, efficiency = model.DalyRuntime(model.RuntimeInput{Work: 1, Interval: interval, Cost: m.Level1Cost, MTTI: m.Level1MTTI, Restart: r})
	return interval, efficiency
}
