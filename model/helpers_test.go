package model

import (
	"errors"
	"math"
	"testing"
)

// Shared helpers of the model tests. Expected values in the tests come from
// the papers, from SPEC-markov.md or from hand derivations written next to
// them; these helpers only compare.

// relDiff is |got − want| / |want| (or |got| when want is 0).
func relDiff(got, want float64) float64 {
	if want == 0 {
		return math.Abs(got)
	}
	return math.Abs(got-want) / math.Abs(want)
}

// checkRel fails the test when got differs from want by more than tol relative.
func checkRel(t *testing.T, name string, got, want, tol float64) {
	t.Helper()
	if math.IsNaN(got) || relDiff(got, want) > tol {
		t.Errorf("%s = %.15g, want %.15g (relative error %.3g > %.3g)", name, got, want, relDiff(got, want), tol)
	}
}

// checkAbs fails the test when |got − want| > tol.
func checkAbs(t *testing.T, name string, got, want, tol float64) {
	t.Helper()
	if math.IsNaN(got) || math.Abs(got-want) > tol {
		t.Errorf("%s = %.15g, want %.15g ± %.3g (off by %.3g)", name, got, want, tol, math.Abs(got-want))
	}
}

// paramOf returns the Param of a *ParamError in err's chain, or "" if none.
func paramOf(err error) string {
	var pe *ParamError
	if errors.As(err, &pe) {
		return pe.Param
	}
	return ""
}

// checkParamErr fails unless err is a *ParamError naming param.
func checkParamErr(t *testing.T, name string, err error, param string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error, want a ParamError naming %q", name, param)
		return
	}
	if got := paramOf(err); got != param {
		t.Errorf("%s: error %q names param %q, want %q", name, err, got, param)
	}
}

// powersOfTwo returns 2^a, 2^(a+1), …, 2^b.
func powersOfTwo(a, b int) []int {
	var out []int
	for e := a; e <= b; e++ {
		out = append(out, 1<<e)
	}
	return out
}

// goldenMin minimises a unimodal f over [lo, hi] by golden-section search in
// the test itself (independent of the package's optimizer).
func goldenMin(f func(float64) float64, lo, hi float64) float64 {
	const g = 0.6180339887498949
	a, b := lo, hi
	x1, x2 := b-g*(b-a), a+g*(b-a)
	f1, f2 := f(x1), f(x2)
	for i := 0; i < 200 && b-a > 1e-12*math.Max(1, math.Abs(a)); i++ {
		if f1 <= f2 {
			b, x2, f2 = x2, x1, f1
			x1 = b - g*(b-a)
			f1 = f(x1)
		} else {
			a, x1, f1 = x1, x2, f2
			x2 = a + g*(b-a)
			f2 = f(x2)
		}
	}
	return (a + b) / 2
}
