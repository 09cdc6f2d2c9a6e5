package model

import (
	"fmt"
	"math"
	"sort"
)

// The optimizer of SPEC-markov §6: maximise efficiency over a continuous
// interval t > 0 and integer counts v ≥ 0. The efficiency surface is flat
// near its optimum, so the maximal efficiency is robust while the argmax is
// only informative (t to about 1e-3 relative).

// intervalRange is the search range for t: the reference's [1 s, 1e7 s],
// widened to three decades either side of Young's interval for the cheapest
// level so that unusual time scales are still bracketed.
func intervalRange(cost, rate float64) (lo, hi float64) {
	y := math.Sqrt(2 * cost / rate)
	lo, hi = 1.0, 1e7
	if finite(y) && y > 0 {
		lo = math.Min(lo, y/1e3)
		hi = math.Max(hi, y*1e3)
	}
	return lo, hi
}

// gridPoints keeps the reference's density of 64 points over 7 decades.
func gridPoints(lo, hi float64, perSevenDecades int) int {
	decades := math.Log10(hi / lo)
	return max(perSevenDecades, int(math.Ceil(float64(perSevenDecades)*decades/7)))
}

// logGrid returns n points spaced evenly in log t over [lo, hi].
func logGrid(lo, hi float64, n int) []float64 {
	g := make([]float64, n)
	a, b := math.Log(lo), math.Log(hi)
	for i := range g {
		g[i] = math.Exp(a + (b-a)*float64(i)/float64(n-1))
	}
	return g
}

// goldenMax maximises f over [lo, hi] by golden-section search in log t.
// It returns the best point it evaluated.
func goldenMax(f func(float64) float64, lo, hi float64) (float64, float64) {
	const invPhi = 0.6180339887498949
	a, b := math.Log(lo), math.Log(hi)
	x1 := b - invPhi*(b-a)
	x2 := a + invPhi*(b-a)
	f1, f2 := f(math.Exp(x1)), f(math.Exp(x2))
	for i := 0; i < 80 && b-a > 1e-9; i++ {
		if f1 >= f2 {
			b, x2, f2 = x2, x1, f1
			x1 = b - invPhi*(b-a)
			f1 = f(math.Exp(x1))
		} else {
			a, x1, f1 = x1, x2, f2
			x2 = a + invPhi*(b-a)
			f2 = f(math.Exp(x2))
		}
	}
	if f1 >= f2 {
		return math.Exp(x1), f1
	}
	return math.Exp(x2), f2
}

// maximizeInterval is the blocking t-search: a log grid, then golden section
// in the cell around the best grid point.
func maximizeInterval(f func(float64) float64, lo, hi float64) (float64, float64) {
	grid := logGrid(lo, hi, gridPoints(lo, hi, 64))
	best, bestF := 0, math.Inf(-1)
	for i, t := range grid {
		if v := f(t); v > bestF {
			best, bestF = i, v
		}
	}
	a := grid[max(best-1, 0)]
	b := grid[min(best+1, len(grid)-1)]
	t, v := goldenMax(f, a, b)
	if v >= bestF {
		return t, v
	}
	return grid[best], bestF
}

// scanCount scans v = 0, 1, 2, … and stops when v > v_best + max(30, v_best)
// (SPEC-markov §6). eval returns the best result for that v.
// The scan is also capped at maxCount, which only matters when efficiency
// keeps rising with v (a level above that no failure needs).
func scanCount(eval func(v int) (MultilevelResult, bool)) (MultilevelResult, bool) {
	var best MultilevelResult
	found := false
	bestV := 0
	for v := 0; v <= bestV+max(30, bestV) && v <= maxCount; v++ {
		r, ok := eval(v)
		if !ok {
			continue
		}
		if !found || r.Efficiency > best.Efficiency {
			best, bestV, found = r, v, true
		}
	}
	return best, found
}

// maxCount bounds the number of level-i checkpoints per level-(i+1) checkpoint
// the optimizer considers.
const maxCount = 1 << 14

// checkTopRate rejects a top level that no failure needs: the optimum would
// then never take a top-level checkpoint (v → ∞).
func checkTopRate(lv Levels) error {
	if lv.L() > 1 && lv.Rates[lv.L()-1] == 0 {
		return &ParamError{Param: "rates", Value: 0, Reason: fmt.Sprintf("level %d (the top level) has failure rate 0, so the optimum never takes a level-%d checkpoint; drop that level", lv.L(), lv.L())}
	}
	return nil
}

// OptimizeBlocking finds the schedule (interval and counts) of maximal
// efficiency under the blocking model. Counts are optimised level by level,
// the top one outermost, each with the stopping rule of SPEC-markov §6.
func OptimizeBlocking(lv Levels, opt BlockingOptions) (MultilevelResult, error) {
	if err := lv.Validate(); err != nil {
		return MultilevelResult{}, err
	}
	if opt.L1ProtectedFirst && lv.L() != 2 {
		return MultilevelResult{}, &ParamError{Param: "rates", Value: float64(lv.L()), Reason: "the L1-protected variant is defined for two levels"}
	}
	if err := checkTopRate(lv); err != nil {
		return MultilevelResult{}, err
	}
	lo, hi := intervalRange(lv.Cost[0], lv.total())
	counts := make([]int, lv.L()-1)
	var search func(level int) (MultilevelResult, bool)
	search = func(level int) (MultilevelResult, bool) {
		if level < 0 {
			f := func(t float64) float64 {
				return blocking(lv, Schedule{Interval: t, Counts: counts}, opt).Efficiency
			}
			t, _ := maximizeInterval(f, lo, hi)
			r := blocking(lv, Schedule{Interval: t, Counts: append([]int(nil), counts...)}, opt)
			return r, true
		}
		return scanCount(func(v int) (MultilevelResult, bool) {
			counts[level] = v
			return search(level - 1)
		})
	}
	best, _ := search(lv.L() - 2)
	return best, nil
}

// Optimize finds the schedule of maximal efficiency under the non-blocking
// model. For a fixed v the feasible interval axis splits into pieces
// [b_j, b_{j-1}) on which m = j, with b_j = (ℓ_2/j − c1)/(1+α); efficiency
// jumps at each b_j and the optimum is typically at one of them (where the
// copy exactly fills j segments). Following SPEC-markov §6 it evaluates every
// b_j and a 48-point log grid, then refines inside the three best pieces.
func (nb NonBlocking) Optimize() (MultilevelResult, error) {
	if err := nb.Validate(); err != nil {
		return MultilevelResult{}, err
	}
	if err := checkTopRate(nb.Levels); err != nil {
		return MultilevelResult{}, err
	}
	c1 := nb.Cost[0]
	lo, hi := intervalRange(c1, nb.total())
	best, found := scanCount(func(v int) (MultilevelResult, bool) {
		return nb.optimizeInterval(v, lo, hi)
	})
	if !found {
		return MultilevelResult{}, &ParamError{Param: "flush-latency", Value: nb.FlushLatency,
			Reason: "the background copy outlasts every feasible period; no schedule is feasible"}
	}
	return best, nil
}

func (nb NonBlocking) optimizeInterval(v int, lo, hi float64) (MultilevelResult, bool) {
	n := v + 1
	c1 := nb.Cost[0]
	eval := func(t float64) (MultilevelResult, bool) {
		m := nb.IncompleteSegments(t)
		if m > n || t <= 0 {
			return MultilevelResult{}, false
		}
		return nb.evaluate(t, v, m), true
	}
	// Piece boundaries b_1 > b_2 > … > b_n; b_0 = ∞.
	bounds := []float64{math.Inf(1)}
	if nb.FlushLatency > 0 {
		for j := 1; j <= n; j++ {
			bounds = append(bounds, (nb.FlushLatency/float64(j)-c1)/(1+nb.Alpha))
		}
	}
	tMin := lo
	if nb.FlushLatency > 0 {
		tMin = math.Max(lo, bounds[n])
		if bounds[n] >= hi {
			return MultilevelResult{}, false
		}
	}
	type piece struct {
		lo, hi float64
		best   float64
	}
	pieces := make([]piece, len(bounds))
	for j := range pieces {
		pieces[j] = piece{hi: hi, best: math.Inf(-1)}
		if j == 0 && nb.FlushLatency > 0 {
			pieces[j].lo = hi // unused: m = 0 only when ℓ_2 = 0
		}
	}
	var best MultilevelResult
	found := false
	consider := func(t float64) {
		r, ok := eval(t)
		if !ok {
			return
		}
		if !found || r.Efficiency > best.Efficiency {
			best, found = r, true
		}
		j := r.Incomplete
		if j < len(pieces) && r.Efficiency > pieces[j].best {
			pieces[j].best = r.Efficiency
		}
	}
	if nb.FlushLatency > 0 {
		for j := 1; j <= n; j++ {
			pieces[j].lo = math.Max(bounds[j], tMin)
			pieces[j].hi = math.Min(bounds[j-1], hi)
			if bounds[j] > tMin && bounds[j] < hi {
				consider(bounds[j])
			}
		}
	} else {
		pieces[0].lo = lo
	}
	for _, t := range logGrid(tMin, hi, gridPoints(tMin, hi, 48)) {
		consider(t)
	}
	// Refine inside the three best pieces.
	order := make([]int, 0, len(pieces))
	for j, p := range pieces {
		if p.best > math.Inf(-1) && p.hi > p.lo {
			order = append(order, j)
		}
	}
	sort.Slice(order, func(a, b int) bool { return pieces[order[a]].best > pieces[order[b]].best })
	for _, j := range order[:min(3, len(order))] {
		p := pieces[j]
		f := func(t float64) float64 {
			r, ok := eval(t)
			if !ok {
				return math.Inf(-1)
			}
			return r.Efficiency
		}
		t, _ := goldenMax(f, p.lo, p.hi)
		consider(t)
	}
	return best, found
}
