package demo

import (
	"math"
	"math/rand/v2"
	"testing"
)

// simulateLevel2 draws the failure process Level2Probability describes,
// failure by failure: after a node failure, the next failure comes after
// an exponential time of rate λ; if that is after the window, the lost
// node was rebuilt (level 1); else it strikes a node drawn uniformly from
// the nodes, and is the level-2 event if that is another node of the set
// (all nodes form one set here), or opens a new window (the node being
// rebuilt failed again). It returns the level-2 fraction over n failures.
func simulateLevel2(rng *rand.Rand, rate, window float64, nodes, n int) float64 {
	level2 := 0
	for range n {
		for {
			if rng.ExpFloat64()/rate > window {
				break
			}
			if rng.IntN(nodes) != 0 { // node 0 is the one being rebuilt
				level2++
				break
			}
		}
	}
	return float64(level2) / float64(n)
}

// The closed form is the failure process it describes: a seeded Monte
// Carlo of that process agrees with it within 5 standard errors, and
// rejects the first-order 1 − e^(−aλw), which leaves out the windows
// that start again when the node being rebuilt fails again.
func TestLevel2ProbabilityAgainstSimulation(t *testing.T) {
	rng := rand.New(rand.NewPCG(20, 2026))
	const n = 40000
	for _, c := range []struct {
		rate, window float64
		nodes        int
	}{
		{0.4, 0.5, 4},  // the demo: M = 2.5 s, R = 0.5 s
		{1 / 6., 1, 4}, // M = 6 s, a loaded machine's R
		{1, 2, 4},      // λw = 2: where the restarts matter
		{1, 1, 2},      // a set of 2: a = 1/2
		{0.5, 1, 8},    // a set of 8
	} {
		p := Level2Probability(c.rate, c.window, c.nodes, c.nodes)
		got := simulateLevel2(rng, c.rate, c.window, c.nodes, n)
		se := math.Sqrt(p * (1 - p) / n)
		if z := (got - p) / se; math.Abs(z) > 5 {
			t.Errorf("λ = %g, w = %g, %d nodes: simulated %.4f, closed form %.4f (Z = %.1f)", c.rate, c.window, c.nodes, got, p, z)
		}
		if c.rate*c.window >= 1 {
			a := float64(c.nodes-1) / float64(c.nodes)
			naive := -math.Expm1(-a * c.rate * c.window)
			if z := (got - naive) / se; math.Abs(z) < 5 {
				t.Errorf("λ = %g, w = %g, %d nodes: the first-order %.4f is not rejected by the simulation's %.4f (Z = %.1f)",
					c.rate, c.window, c.nodes, naive, got, z)
			}
		}
	}
}

func TestLevel2ProbabilityLimits(t *testing.T) {
	if p := Level2Probability(0.4, 0, 4, 4); p != 0 {
		t.Errorf("no rebuild window: p = %g, want 0", p)
	}
	if p := Level2Probability(0, 0.5, 4, 4); p != 0 {
		t.Errorf("no failures: p = %g, want 0", p)
	}
	// λw ≪ 1: another node of the set within the window, a·λw.
	if p, want := Level2Probability(1e-4, 0.5, 4, 4), 0.75*1e-4*0.5; math.Abs(p/want-1) > 1e-3 {
		t.Errorf("λw = 5e-5: p = %g, want about %g", p, want)
	}
	// Several sets: a failure strikes the failed node's set with
	// probability (set − 1)/nodes.
	if p, want := Level2Probability(1e-4, 0.5, 4, 16), 3./16*1e-4*0.5; math.Abs(p/want-1) > 1e-3 {
		t.Errorf("4 sets of 4: p = %g, want about %g", p, want)
	}
	// A window that never ends: the second node of the set fails for sure.
	if p := Level2Probability(1, 1e9, 4, 4); math.Abs(p-1) > 1e-12 {
		t.Errorf("an endless window: p = %g, want 1", p)
	}
	for name, p := range map[string]float64{
		"set of 1":          Level2Probability(0.4, 0.5, 1, 4),
		"fewer nodes":       Level2Probability(0.4, 0.5, 4, 3),
		"negative rate":     Level2Probability(-1, 0.5, 4, 4),
		"negative window":   Level2Probability(0.4, -0.5, 4, 4),
		"NaN window":        Level2Probability(0.4, math.NaN(), 4, 4),
		"infinite exposure": Level2Probability(math.Inf(1), 0.5, 4, 4),
	} {
		if !math.IsNaN(p) {
			t.Errorf("%s: p = %g, want NaN", name, p)
		}
	}
}

// The predicted levels split the applied rate: λ1 + λ2 = injected /
// elapsed, λ2 = λ·p, and the count predicted is injected × p. The
// multi-level model at them charges the level-2 failures' loss of the
// job so far, below the one-level model at the same total rate, and is
// that model when no failure can be level 2.
func TestPredictLevels(t *testing.T) {
	const elapsed, injected, window = 20.0, 8, 0.5
	p := PredictLevels(elapsed, injected, window, 4, 4)
	rate := injected / elapsed
	if want := Level2Probability(rate, window, 4, 4); p.Probability != want || !(want > 0) {
		t.Fatalf("probability %g, want %g", p.Probability, want)
	}
	if got := 1/p.Levels.Level1MTTI + 1/p.Levels.Level2MTTI; math.Abs(got-rate) > 1e-12 {
		t.Errorf("λ1 + λ2 = %g, want the applied %g", got, rate)
	}
	if got := 1 / p.Levels.Level2MTTI; math.Abs(got-rate*p.Probability) > 1e-12 {
		t.Errorf("λ2 = %g, want λ·p = %g", got, rate*p.Probability)
	}
	if got := p.Level2Expected; math.Abs(got-injected*p.Probability) > 1e-12 {
		t.Errorf("level-2 failures predicted %g, want %g", got, injected*p.Probability)
	}
	if p.Levels.Level2 != 0 {
		t.Errorf("Level2 = %d: nothing was counted", p.Levels.Level2)
	}
	const tau, cost, work = 0.75, 0.15, 8.0
	oneLevel := MultilevelPlain(tau, cost, window, work, Levels{Level1MTTI: 1 / rate, Level2MTTI: math.Inf(1)})
	two := MultilevelPlain(tau, cost, window, work, p.Levels)
	if !(two < oneLevel) {
		t.Errorf("model at the predicted levels %g, want below the one-level %g", two, oneLevel)
	}
	none := PredictLevels(elapsed, injected, 0, 4, 4)
	if !math.IsInf(none.Levels.Level2MTTI, 1) || math.Abs(none.Levels.Level1MTTI-1/rate) > 1e-12 {
		t.Errorf("no rebuild window: levels %+v, want all failures level 1", none.Levels)
	}
	if got := MultilevelPlain(tau, cost, window, work, none.Levels); got != oneLevel {
		t.Errorf("no level 2 possible: %g, want the one-level %g", got, oneLevel)
	}
	free := PredictLevels(elapsed, 0, window, 4, 4)
	if !math.IsInf(free.Levels.Level1MTTI, 1) || !math.IsInf(free.Levels.Level2MTTI, 1) || free.Level2Expected != 0 {
		t.Errorf("no failure: %+v, want infinite MTTIs and none predicted", free)
	}
	if bad := PredictLevels(elapsed, injected, math.NaN(), 4, 4); !math.IsNaN(bad.Probability) || !math.IsNaN(MultilevelPlain(tau, cost, window, work, bad.Levels)) {
		t.Errorf("no recovery measured: %+v, want NaN and no model", bad)
	}
}
