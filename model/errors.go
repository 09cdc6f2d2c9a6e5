package model

import (
	"errors"
	"fmt"
	"math"
)

// ParamError reports a model input outside its domain. Param is the name the
// command line and the system files use for the quantity (for example "cost"
// or "mtti"), so a front end can point at the flag or field that is wrong.
// Value is the offending value, or NaN when the problem is not one value
// (lists of different lengths, say).
type ParamError struct {
	Param  string
	Value  float64
	Reason string
}

func (e *ParamError) Error() string {
	if math.IsNaN(e.Value) {
		return fmt.Sprintf("%s: %s", e.Param, e.Reason)
	}
	return fmt.Sprintf("%s = %g: %s", e.Param, e.Value, e.Reason)
}

// ErrNoOptimum is wrapped by errors from interval formulas that have no real,
// positive optimum for the given inputs (for example Fialho's eq. 6 when its
// radicand is negative).
var ErrNoOptimum = errors.New("no real optimum")

// ErrInfeasible is wrapped by errors for schedules the model cannot run, such
// as a background copy that outlasts the period it belongs to.
var ErrInfeasible = errors.New("infeasible schedule")

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// positive checks that a cost, an MTTI or a bandwidth is finite and > 0.
func positive(name string, v float64) error {
	if !finite(v) || v <= 0 {
		return &ParamError{Param: name, Value: v, Reason: "must be a finite number > 0"}
	}
	return nil
}

// nonNegative checks restart, detection, logging and start-up times, which may be 0.
func nonNegative(name string, v float64) error {
	if !finite(v) || v < 0 {
		return &ParamError{Param: name, Value: v, Reason: "must be a finite number ≥ 0"}
	}
	return nil
}
