package model

import (
	"fmt"
	"math"
	"slices"
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

// scanCount maximises over the count v ≥ 0. The reference (SPEC-markov §6)
// scans v = 0, 1, 2, … until v > v_best + max(30, v_best); that costs O(v*)
// interval optimisations, and v* grows without bound as the level-1 cost
// shrinks. We sample v = 0…8 and then geometrically (×1.25) under the same
// stopping rule, and refine between the samples that bracket the best one by
// integer ternary search, finishing with every integer of a small bracket.
// Efficiency is unimodal in v in every case we know; the tests check the
// result against the reference's exhaustive scan.
func scanCount(eval func(v int) (MultilevelResult, bool)) (MultilevelResult, bool) {
	type entry struct {
		r  MultilevelResult
		ok bool
	}
	memo := map[int]entry{}
	get := func(v int) entry {
		e, seen := memo[v]
		if !seen {
			e.r, e.ok = eval(v)
			memo[v] = e
		}
		return e
	}
	score := func(v int) float64 {
		if e := get(v); e.ok {
			return e.r.Efficiency
		}
		return math.Inf(-1)
	}
	var samples []int
	bestIdx, bestV := -1, 0
	for v := 0; v <= maxCount; {
		samples = append(samples, v)
		if bestIdx < 0 || score(v) > score(bestV) {
			if get(v).ok {
				bestIdx, bestV = len(samples)-1, v
			}
		}
		if bestIdx >= 0 && v > bestV+max(30, bestV) {
			break
		}
		if v < 8 {
			v++
		} else {
			v = max(v+1, int(float64(v)*1.25))
		}
	}
	if bestIdx < 0 {
		return MultilevelResult{}, false
	}
	lo := samples[max(bestIdx-1, 0)]
	hi := samples[min(bestIdx+1, len(samples)-1)]
	for hi-lo > 8 {
		m1 := lo + (hi-lo)/3
		m2 := hi - (hi-lo)/3
		if score(m1) < score(m2) {
			lo = m1
		} else {
			hi = m2
		}
	}
	for v := lo; v <= hi; v++ {
		if score(v) > score(bestV) {
			bestV = v
		}
	}
	return get(bestV).r, true
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
	lo, hi := intervalRange(minCost(lv.Cost), lv.total())
	counts := make([]int, lv.L()-1)
	optimizeT := func() MultilevelResult {
		f := func(t float64) float64 {
			return blocking(lv, Schedule{Interval: t, Counts: counts}, opt).Efficiency
		}
		t, _ := maximizeInterval(f, lo, hi)
		return blocking(lv, Schedule{Interval: t, Counts: append(make([]int, 0, len(counts)), counts...)}, opt)
	}
	if len(counts) == 0 {
		return optimizeT(), nil
	}
	// One count at a time, top level first, until no count changes
	// (coordinate ascent; for two levels this is the plain scan). Optima of
	// several levels can sit on a ridge along which two counts must move
	// together (one more level-1 per level-2, one fewer level-2 per
	// level-3); a hill climb over the joint neighbourhood then moves along it
	// and the ascent starts again from there.
	var best MultilevelResult
	for round := 0; round < 50; round++ {
		before := append([]int(nil), counts...)
		for level := len(counts) - 1; level >= 0; level-- {
			best, _ = scanCount(func(v int) (MultilevelResult, bool) {
				counts[level] = v
				return optimizeT(), true
			})
			copy(counts, best.Counts)
		}
		if len(counts) > 1 {
			best = climbCounts(best, counts, func() MultilevelResult { return optimizeT() })
		}
		if slices.Equal(before, counts) {
			break
		}
	}
	return best, nil
}

// climbCounts hill-climbs from best over the joint neighbourhood of the
// counts: every combination of −s, 0, +s per count, with s = 1 and s = 5% of
// the count. counts holds the current point and is left at the best one.
func climbCounts(best MultilevelResult, counts []int, eval func() MultilevelResult) MultilevelResult {
	base := append([]int(nil), counts...)
	for improved := true; improved; {
		improved = false
		for _, scale := range []float64{0, 0.05} {
			steps := make([]int, len(base))
			for i, v := range base {
				steps[i] = max(1, int(scale*float64(v)))
			}
			// Enumerate {−1, 0, +1}^d by counting in base 3.
			combos := 1
			for range base {
				combos *= 3
			}
			for code := 0; code < combos; code++ {
				ok, c := true, code
				for i := range base {
					counts[i] = base[i] + (c%3-1)*steps[i]
					c /= 3
					if counts[i] < 0 || counts[i] > maxCount {
						ok = false
					}
				}
				if !ok || slices.Equal(counts, base) {
					continue
				}
				if r := eval(); r.Efficiency > best.Efficiency {
					best, improved = r, true
				}
			}
			copy(base, best.Counts)
		}
	}
	copy(counts, best.Counts)
	return best
}

// minCost is the cheapest level's cost, which sets the interval search range.
func minCost(costs []float64) float64 {
	m := costs[0]
	for _, c := range costs[1:] {
		m = math.Min(m, c)
	}
	return m
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
	lo, hi := intervalRange(nb.Cost[0], nb.total())
	best, found := scanCount(func(v int) (MultilevelResult, bool) {
		return nb.optimizeInterval(v, lo, hi)
	})
	if !found {
		return MultilevelResult{}, &ParamError{Param: "flush-latency", Value: nb.FlushLatency,
			Reason: fmt.Sprintf("the background copy outlasts every period in the search range (up to %d segments of at most %g s); lengthen the interval or shorten the copy", maxCount+1, hi)}
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
		}
		// Every boundary for short periods; for long ones the first and last
		// 16 and a geometric sample between (the optimum sits near j = n).
		for j := 1; j <= n; {
			if bounds[j] > tMin && bounds[j] < hi {
				consider(bounds[j])
			}
			switch {
			case n <= 64 || j < 16 || j >= n-16:
				j++
			default:
				j = min(max(j+1, int(float64(j)*1.1)), n-16)
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
