package model

import "math"

// SmallestReaching returns the smallest x in [lo, hi] with f(x) ≥ target, for
// an f that does not decrease in x (efficiency against a bandwidth, say). It
// bisects in log x to a relative precision of 1e-4. ok is false when even
// f(hi) falls short of the target; if f(lo) already reaches it, lo is returned.
func SmallestReaching(f func(x float64) float64, target, lo, hi float64) (x float64, ok bool) {
	if f(hi) < target {
		return math.NaN(), false
	}
	if f(lo) >= target {
		return lo, true
	}
	a, b := math.Log(lo), math.Log(hi)
	for b-a > 1e-4 {
		mid := (a + b) / 2
		if f(math.Exp(mid)) >= target {
			b = mid
		} else {
			a = mid
		}
	}
	return math.Exp(b), true
}
