package model

import (
	"fmt"
	"math"
)

// Interval methods. Symbols follow the papers: δ (= t_c) is the checkpoint
// cost, M (= α in 003) the mean time to interrupt, R (= t_l) the restart
// (load) time, t_d the failure detection latency, Δ_lp and Δ_lr the message
// logging protection and replay times of 003 §3.2, φ the dependency factor.

// Method names an optimal-interval formula.
type Method string

const (
	MethodYoung          Method = "young"           // Young (1974): √(2δM)
	MethodDaly           Method = "daly"            // Daly's higher-order estimate, Oldfield et al. 2007, eq. 2
	MethodDalyFirstOrder Method = "daly1"           // Daly's first-order estimate: √(2δM) − δ
	MethodGroppLusk      Method = "gropp"           // Gropp and Lusk (2004): √(2δM)
	MethodFialho         Method = "fialho"          // Fialho et al. 2011, eqs. 5–6, serial or coordinated
	MethodFialhoParallel Method = "fialho-parallel" // Fialho et al. 2011, eqs. 10–11, uncoordinated with message logging
)

// Methods lists every method, in the order the tools present them.
var Methods = []Method{MethodYoung, MethodDaly, MethodDalyFirstOrder, MethodGroppLusk, MethodFialho, MethodFialhoParallel}

// ParseMethod maps a method name to a Method.
func ParseMethod(s string) (Method, error) {
	for _, m := range Methods {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("unknown method %q (use young, daly, daly1, gropp, fialho or fialho-parallel)", s)
}

// Source names the paper and equation of the method.
func (m Method) Source() string {
	switch m {
	case MethodYoung:
		return "Young 1974: √(2δM)"
	case MethodDaly:
		return "Daly higher order, as in Oldfield et al. 2007, eq. 2"
	case MethodDalyFirstOrder:
		return "Daly first order: √(2δM) − δ"
	case MethodGroppLusk:
		return "Gropp and Lusk 2004: √(2δM)"
	case MethodFialho:
		return "Fialho et al. 2011, serial/coordinated, eqs. 5–6"
	case MethodFialhoParallel:
		return "Fialho et al. 2011, uncoordinated with message logging, eqs. 10–11"
	}
	return ""
}

// Uses reports whether the method reads an optional input of
// IntervalInput (or OptimalInterval's at), named as the command line and
// the system files name it: restart, detect, phi, log-protect, log-replay
// or interval. Cost and MTTI every method uses.
func (m Method) Uses(input string) bool {
	switch m {
	case MethodFialho:
		return input == "restart" || input == "detect" || input == "interval"
	case MethodFialhoParallel:
		switch input {
		case "restart", "detect", "phi", "log-protect", "log-replay", "interval":
			return true
		}
	}
	return false
}

// IntervalInput holds every quantity an interval formula may use. Zero
// values mean "none" for the optional times; Phi is used by fialho-parallel only.
type IntervalInput struct {
	Cost       float64 // δ = t_c, seconds, > 0
	MTTI       float64 // M = α, seconds, > 0
	Restart    float64 // R = t_l, seconds, ≥ 0
	Detect     float64 // t_d, seconds, ≥ 0
	Phi        float64 // φ in (0, 1]
	LogProtect float64 // Δ_lp, seconds, ≥ 0
	LogReplay  float64 // Δ_lr, seconds, ≥ 0
}

// Validate checks the ranges the methods share and, for fialho-parallel, φ.
func (in IntervalInput) Validate(m Method) error {
	if err := positive("cost", in.Cost); err != nil {
		return err
	}
	if err := positive("mtti", in.MTTI); err != nil {
		return err
	}
	for _, q := range []struct {
		name string
		v    float64
	}{{"restart", in.Restart}, {"detect", in.Detect}, {"log-protect", in.LogProtect}, {"log-replay", in.LogReplay}} {
		if err := nonNegative(q.name, q.v); err != nil {
			return err
		}
	}
	if m == MethodFialhoParallel {
		return ValidatePhi(in.Phi)
	}
	return nil
}

// ValidatePhi checks that the dependency factor lies in (0, 1] (003 §3.3).
func ValidatePhi(phi float64) error {
	if !finite(phi) || phi <= 0 || phi > 1 {
		return &ParamError{Param: "phi", Value: phi, Reason: "the dependency factor must lie in (0, 1]"}
	}
	return nil
}

// Young is Young's first-order optimum √(2δM).
func Young(cost, mtti float64) float64 { return math.Sqrt(2 * cost * mtti) }

// GroppLusk is the optimum of Gropp and Lusk, which equals Young's √(2δM)
// (003 §2; 003 Tables 1–3 print the same value for both).
func GroppLusk(cost, mtti float64) float64 { return math.Sqrt(2 * cost * mtti) }

// DalyFirstOrder is Daly's first-order optimum √(2δM) − δ. It is returned as
// computed and is negative when δ > 2M.
func DalyFirstOrder(cost, mtti float64) float64 { return math.Sqrt(2*cost*mtti) - cost }

// DalyFirstOrderInterval is DalyFirstOrder within its domain δ < 2M; at
// δ ≥ 2M the formula gives an interval ≤ 0, which is no interval at all, and
// the error says so (the higher-order estimate, Daly, answers τ = M there).
func DalyFirstOrderInterval(cost, mtti float64) (float64, error) {
	tau := DalyFirstOrder(cost, mtti)
	if !(tau > 0) {
		return math.NaN(), fmt.Errorf("%w: Daly's first-order estimate √(2δM) − δ = %g s ≤ 0 for cost δ = %g s and mtti M = %g s: it holds only for δ < 2M (here 2M = %g s); --method daly answers τ = M there", ErrNoOptimum, tau, cost, mtti, 2*mtti)
	}
	return tau, nil
}

// Daly is Daly's higher-order optimum, 000 eq. 2:
//
//	τ = √(2δM) [1 + ⅓ (δ/2M)^½ + δ/(9·2M)] − δ   for δ < 2M
//	τ = M                                        for δ ≥ 2M
func Daly(cost, mtti float64) float64 {
	if cost >= 2*mtti {
		return mtti
	}
	x := cost / (2 * mtti)
	return math.Sqrt(2*cost*mtti)*(1+math.Sqrt(x)/3+x/9) - cost
}

// FialhoOverhead is 003 eq. 5: the fault-tolerance overhead between two
// faults (per MTTI window) of a serial or coordinated application that
// checkpoints every sigma seconds.
func FialhoOverhead(sigma float64, in IntervalInput) float64 {
	return (sigma*sigma + 2*(sigma*in.Detect+sigma*in.Restart+in.MTTI*in.Cost)) / (2 * (sigma + in.Cost))
}

// FialhoInterval is 003 eq. 6, σ_opt = √(t_c² − 2t_c t_d − 2t_c t_l + 2α t_c) − t_c.
// The radicand is negative when detection and loading outlast the MTTI
// (t_d + t_l > α + t_c/2); there is then no real optimum.
func FialhoInterval(in IntervalInput) (float64, error) {
	tc := in.Cost
	rad := tc*tc - 2*tc*in.Detect - 2*tc*in.Restart + 2*in.MTTI*tc
	if rad < 0 {
		return math.NaN(), fmt.Errorf("%w: Fialho et al. 2011, eq. 6 has a negative radicand (%g s²) because detect + restart (%g s) exceed mtti + cost/2 (%g s): failures come faster than the job can recover", ErrNoOptimum, rad, in.Detect+in.Restart, in.MTTI+tc/2)
	}
	sigma := math.Sqrt(rad) - tc
	if sigma <= 0 {
		return math.NaN(), fmt.Errorf("%w: Fialho et al. 2011, eq. 6 gives σ = %g s ≤ 0 because detect + restart (%g s) reach the mtti (%g s): eq. 5 then only grows with σ", ErrNoOptimum, sigma, in.Detect+in.Restart, in.MTTI)
	}
	return sigma, nil
}

// FialhoParallelOverhead is 003 eq. 10: the overhead per MTTI window of one
// process of an uncoordinated application with pessimistic receiver-based
// message logging, weighted by the dependency factor φ.
func FialhoParallelOverhead(sigma float64, in IntervalInput) float64 {
	phi, tc, td, tl, lr, lp, a := in.Phi, in.Cost, in.Detect, in.Restart, in.LogReplay, in.LogProtect, in.MTTI
	num := phi*sigma*sigma +
		sigma*(2*phi*td+2*phi*tl+phi*tc+2*phi*lr-tc+2*lp) +
		2*tc*(phi*td+phi*tl+phi*lr+a-td-tl-lr+lp)
	return num / (2*sigma + 2*tc)
}

// FialhoParallelInterval is 003 eq. 11,
// σ_opt = √(φ t_c (t_c + 2α − 2t_d − 2t_l − 2Δ_lr)) / φ − t_c.
func FialhoParallelInterval(in IntervalInput) (float64, error) {
	if err := ValidatePhi(in.Phi); err != nil {
		return math.NaN(), err
	}
	tc := in.Cost
	inner := tc + 2*in.MTTI - 2*in.Detect - 2*in.Restart - 2*in.LogReplay
	if inner < 0 {
		return math.NaN(), fmt.Errorf("%w: Fialho et al. 2011, eq. 11 has a negative radicand because detect + restart + log-replay (%g s) exceed mtti + cost/2 (%g s)", ErrNoOptimum, in.Detect+in.Restart+in.LogReplay, in.MTTI+tc/2)
	}
	sigma := math.Sqrt(in.Phi*tc*inner)/in.Phi - tc
	if sigma <= 0 {
		return math.NaN(), fmt.Errorf("%w: Fialho et al. 2011, eq. 11 gives σ = %g s ≤ 0: with these times eq. 10 only grows with σ", ErrNoOptimum, sigma)
	}
	return sigma, nil
}

// IntervalResult is the outcome of an interval computation.
type IntervalResult struct {
	Method   Method
	Interval float64 // the method's optimum, as computed
	// Overhead is the Fialho overhead per MTTI window (eq. 5 or 10) at
	// OverheadAt; NaN for the other methods.
	Overhead   float64
	OverheadAt float64
}

// OptimalInterval computes a method's optimum. For the Fialho methods it also
// evaluates the overhead, at the given interval if at > 0, else at the optimum.
func OptimalInterval(m Method, in IntervalInput, at float64) (IntervalResult, error) {
	if err := in.Validate(m); err != nil {
		return IntervalResult{}, err
	}
	res := IntervalResult{Method: m, Overhead: math.NaN(), OverheadAt: math.NaN()}
	var err error
	switch m {
	case MethodYoung:
		res.Interval = Young(in.Cost, in.MTTI)
	case MethodGroppLusk:
		res.Interval = GroppLusk(in.Cost, in.MTTI)
	case MethodDaly:
		res.Interval = Daly(in.Cost, in.MTTI)
	case MethodDalyFirstOrder:
		res.Interval, err = DalyFirstOrderInterval(in.Cost, in.MTTI)
	case MethodFialho:
		res.Interval, err = FialhoInterval(in)
	case MethodFialhoParallel:
		res.Interval, err = FialhoParallelInterval(in)
	default:
		_, err = ParseMethod(string(m))
	}
	if err != nil {
		return IntervalResult{}, err
	}
	if m == MethodFialho || m == MethodFialhoParallel {
		res.OverheadAt = res.Interval
		if at > 0 {
			res.OverheadAt = at
		}
		if m == MethodFialho {
			res.Overhead = FialhoOverhead(res.OverheadAt, in)
		} else {
			res.Overhead = FialhoParallelOverhead(res.OverheadAt, in)
		}
	}
	return res, nil
}
