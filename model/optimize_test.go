package model

import (
	"math"
	"math/rand"
	"testing"
)

// referenceScan is the exhaustive count scan of SPEC-markov §6: every v from
// 0 until v > v_best + max(30, v_best). The optimiser samples v instead; these
// tests check that it loses nothing against the reference.
func referenceScan(eval func(v int) (MultilevelResult, bool)) (MultilevelResult, bool) {
	var best MultilevelResult
	found, bestV := false, 0
	for v := 0; v <= bestV+max(30, bestV); v++ {
		r, ok := eval(v)
		if ok && (!found || r.Efficiency > best.Efficiency) {
			best, bestV, found = r, v, true
		}
	}
	return best, found
}

// referenceBlocking nests the exhaustive scan over every count, the top one
// outermost: the optimiser's coordinate ascent must match it.
func referenceBlocking(lv Levels) MultilevelResult {
	lo, hi := intervalRange(minCost(lv.Cost), lv.total())
	counts := make([]int, lv.L()-1)
	var search func(level int) (MultilevelResult, bool)
	search = func(level int) (MultilevelResult, bool) {
		if level < 0 {
			f := func(t float64) float64 {
				return blocking(lv, Schedule{Interval: t, Counts: counts}, BlockingOptions{}).Efficiency
			}
			t, _ := maximizeInterval(f, lo, hi)
			return blocking(lv, Schedule{Interval: t, Counts: append([]int(nil), counts...)}, BlockingOptions{}), true
		}
		return referenceScan(func(v int) (MultilevelResult, bool) {
			counts[level] = v
			return search(level - 1)
		})
	}
	r, _ := search(lv.L() - 2)
	return r
}

// randomLevels draws a level description whose optimal counts stay small
// enough for the exhaustive reference.
func randomLevels(rng *rand.Rand, levels int) Levels {
	lv := Levels{}
	rate, cost := 1e-4*math.Pow(10, rng.Float64()), 5+20*rng.Float64()
	for i := 0; i < levels; i++ {
		lv.Rates = append(lv.Rates, rate)
		lv.Cost = append(lv.Cost, cost)
		lv.Restart = append(lv.Restart, cost*(0.5+rng.Float64()))
		rate *= 0.05 + 0.3*rng.Float64()
		cost *= 3 + 10*rng.Float64()
	}
	return lv
}

func TestOptimizeBlockingMatchesExhaustiveScan(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	cases := 12
	if testing.Short() {
		cases = 4
	}
	for i := 0; i < cases; i++ {
		levels := 2 + i%2
		lv := randomLevels(rng, levels)
		got, err := OptimizeBlocking(lv, BlockingOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := referenceBlocking(lv)
		if got.Efficiency < want.Efficiency-1e-9 {
			t.Errorf("case %d (%d levels, %+v): optimiser %.10f at %v, exhaustive %.10f at %v",
				i, levels, lv, got.Efficiency, got.Counts, want.Efficiency, want.Counts)
		}
	}
}

func TestOptimizeNonBlockingMatchesExhaustiveScan(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	cases := 10
	if testing.Short() {
		cases = 3
	}
	for i := 0; i < cases; i++ {
		lv := randomLevels(rng, 2)
		lv.Cost[1] = lv.Cost[0]
		nb := NonBlocking{Levels: lv, FlushLatency: lv.Restart[1] * (1 + 3*rng.Float64()), Alpha: 0.2 * rng.Float64()}
		got, err := nb.Optimize()
		if err != nil {
			t.Fatal(err)
		}
		lo, hi := intervalRange(nb.Cost[0], nb.total())
		want, _ := referenceScan(func(v int) (MultilevelResult, bool) { return nb.optimizeInterval(v, lo, hi) })
		if got.Efficiency < want.Efficiency-1e-9 {
			t.Errorf("case %d (%+v): optimiser %.10f at v=%v, exhaustive %.10f at v=%v",
				i, nb, got.Efficiency, got.Counts, want.Efficiency, want.Counts)
		}
	}
}

// A vanishing level-1 cost drives the optimal count up without bound; the
// sampled scan keeps the work logarithmic in it and caps it at maxCount.
func TestOptimizeTinyCostStaysBounded(t *testing.T) {
	lv := Levels{Rates: []float64{1e-5, 1e-6}, Cost: []float64{1e-9, 100}, Restart: []float64{1, 100}}
	r, err := OptimizeBlocking(lv, BlockingOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Counts[0] > maxCount || !(r.Efficiency > 0.98) {
		t.Errorf("got %+v", r)
	}
	nb := NonBlocking{Levels: Levels{Rates: lv.Rates, Cost: []float64{1e-9, 1e-9}, Restart: lv.Restart}, FlushLatency: 1000}
	if _, err := nb.Optimize(); err != nil {
		t.Fatal(err)
	}
}
