package model

import "math"

// RuntimeInput is Daly's run-time model's input (000 eq. 1).
type RuntimeInput struct {
	Work     float64 // T_s, failure-free compute time, seconds, > 0
	Interval float64 // τ, compute time between checkpoints, > 0
	Cost     float64 // δ, checkpoint overhead, > 0
	MTTI     float64 // M, > 0
	Restart  float64 // R, ≥ 0
}

// Validate checks the ranges of the run-time inputs.
func (in RuntimeInput) Validate() error {
	for _, q := range []struct {
		name string
		v    float64
	}{{"work", in.Work}, {"interval", in.Interval}, {"cost", in.Cost}, {"mtti", in.MTTI}} {
		if err := positive(q.name, q.v); err != nil {
			return err
		}
	}
	return nonNegative("restart", in.Restart)
}

// DalyRuntime is 000 eq. 1, the expected wall-clock time of a job under
// Poisson failures:
//
//	T = M e^{R/M} (e^{(τ+δ)/M} − 1) T_s/τ
//
// e^x − 1 is evaluated with expm1 so that huge MTTIs (tiny exponents) keep
// their precision. Efficiency is T_s/T.
func DalyRuntime(in RuntimeInput) (expected, efficiency float64) {
	// Efficiency does not depend on T_s; computing it first keeps huge
	// inputs from overflowing the product.
	M := in.MTTI
	efficiency = in.Interval / (M * math.Exp(in.Restart/M) * math.Expm1((in.Interval+in.Cost)/M))
	return in.Work / efficiency, efficiency
}

// YoungRuntime is the first-order run time behind Young's interval: every
// interval pays the checkpoint, and failures (rate 1/M) each lose half an
// interval of work on average, T = T_s (1 + δ/τ + τ/(2M)). Its minimum over τ
// is at √(2δM). It ignores restarts and failures during checkpoints.
func YoungRuntime(in RuntimeInput) float64 {
	return in.Work * (1 + in.Cost/in.Interval + in.Interval/(2*in.MTTI))
}

// GroppLuskRuntime is a first-order run time whose minimum is Gropp and
// Lusk's optimum √(2δM): the checkpointed run T_s(1 + δ/τ) meets failures at
// rate 1/M over its length, and each loses half an interval,
// T = T_s (1 + δ/τ)(1 + τ/(2M)). It differs from Young's form by counting
// failures during checkpoints (the δ/(2M) term) and, like it, ignores
// restarts, which keeps its optimum at √(2δM) as 003's tables print.
// (Counting a restart per failure over the whole wall-clock time instead
// gives T_s(1 + δ/τ)/(1 − (R + τ/2)/M), which is exactly Fialho's eq. 5 run
// time with t_d = 0, minimised by eq. 6.)
func GroppLuskRuntime(in RuntimeInput) float64 {
	return in.Work * (1 + in.Cost/in.Interval) * (1 + in.Interval/(2*in.MTTI))
}

// FialhoRuntime turns Fialho's overhead per MTTI window (003 eq. 5) into a
// run time: each window of α seconds holds α − Overhead seconds of useful
// work, so T = T_s α / (α − Overhead). Infinite when the overhead fills the window.
func FialhoRuntime(in RuntimeInput, detect float64) float64 {
	o := FialhoOverhead(in.Interval, IntervalInput{Cost: in.Cost, MTTI: in.MTTI, Restart: in.Restart, Detect: detect})
	if o >= in.MTTI {
		return math.Inf(1)
	}
	return in.Work * in.MTTI / (in.MTTI - o)
}
