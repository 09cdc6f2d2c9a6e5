package model

import (
	"math"
	"testing"
)

// 000 eq. 1 equals the single-level form of SPEC-markov §4.5:
// E = e^{λr}(e^{λ(t+c)} − 1)/λ per interval, with M = 1/λ, R = r, τ = t,
// δ = c; for T_s of work there are T_s/τ intervals.
func TestDalyRuntimeSingleLevelForm(t *testing.T) {
	cases := []RuntimeInput{
		{Work: 1000, Interval: 1000, Cost: 60, MTTI: 1e4, Restart: 120},
		{Work: 1e6, Interval: 1000, Cost: 60, MTTI: 1e4, Restart: 120},
		{Work: 3600, Interval: 600, Cost: 30, MTTI: 4000, Restart: 40},
		{Work: 1, Interval: 50, Cost: 5, MTTI: 100, Restart: 20},  // λr = 0.2 (SPEC §9 stress)
		{Work: 1e5, Interval: 5, Cost: 1, MTTI: 3, Restart: 2},    // failures outnumber intervals
		{Work: 1e5, Interval: 7200, Cost: 600, MTTI: 86400 * 365}, // R = 0
	}
	for _, in := range cases {
		lambda := 1 / in.MTTI
		perInterval := math.Exp(lambda*in.Restart) * (math.Exp(lambda*(in.Interval+in.Cost)) - 1) / lambda
		want := perInterval * in.Work / in.Interval
		T, eff := DalyRuntime(in)
		checkRel(t, "DalyRuntime vs §4.5", T, want, 1e-12)
		checkRel(t, "efficiency = T_s/T", eff, in.Work/want, 1e-12)
	}
	// By hand: τ + δ = M ln 2 makes e^{(τ+δ)/M} − 1 = 1, so with R = 0, T = M T_s/τ.
	M := 1e4
	tau := M*math.Ln2 - 60
	T, eff := DalyRuntime(RuntimeInput{Work: 2 * tau, Interval: tau, Cost: 60, MTTI: M})
	checkRel(t, "T with e^x − 1 = 1", T, 2*M, 1e-14)
	checkRel(t, "efficiency with e^x − 1 = 1", eff, tau/M, 1e-14)
	// And R = M ln 3 multiplies that by e^{R/M} = 3.
	T, _ = DalyRuntime(RuntimeInput{Work: tau, Interval: tau, Cost: 60, MTTI: M, Restart: M * math.Log(3)})
	checkRel(t, "T with e^{R/M} = 3", T, 3*M, 1e-14)
}

// For a huge MTTI (1e15 s) failures vanish and the efficiency tends to the
// failure-free τ/(τ+δ). The exponent (τ+δ)/M ≈ 1e-12 is far below float64's
// resolution around 1, so e^x − 1 must be computed with expm1.
func TestDalyRuntimeHugeMTTI(t *testing.T) {
	for _, c := range []struct{ tau, delta float64 }{{1000, 60}, {3600, 300}, {17, 3}} {
		in := RuntimeInput{Work: c.tau * 100, Interval: c.tau, Cost: c.delta, MTTI: 1e15}
		_, eff := DalyRuntime(in)
		ideal := c.tau / (c.tau + c.delta)
		// Exact: eff = τ/(M·expm1(x)) with x = (τ+δ)/M = ideal/(1 + x/2 + …): relative gap ≈ x/2 ≈ 5e-13.
		checkRel(t, "efficiency at M = 1e15", eff, ideal, 1e-9)
		// The naive e^x − 1 loses about 12 of 16 digits.
		x := (c.tau + c.delta) / in.MTTI
		naive := c.tau / (in.MTTI * (math.Exp(x) - 1))
		if relDiff(naive, ideal) < 1e-6 {
			t.Errorf("τ=%g δ=%g: naive exp(x)−1 gives %.15g, within %.2g of ideal %.15g — expected it to be visibly off", c.tau, c.delta, naive, relDiff(naive, ideal), ideal)
		}
	}
}

func TestDalyRuntimeEfficiencyFallsWithMTTI(t *testing.T) {
	prev := 1.0
	for _, M := range []float64{1e12, 1e9, 1e7, 1e6, 1e5, 3e4, 1e4, 3e3, 1e3, 300} {
		_, eff := DalyRuntime(RuntimeInput{Work: 1e5, Interval: 1000, Cost: 60, MTTI: M, Restart: 120})
		if !(eff < prev) || !(eff > 0) {
			t.Errorf("MTTI %g: efficiency %g, want in (0, %g)", M, eff, prev)
		}
		prev = eff
	}
	// Also below the failure-free bound τ/(τ+δ) everywhere.
	if !(prev < 1000.0/1060) {
		t.Error("efficiency above τ/(τ+δ)")
	}
}

// Young's run time T_s(1 + δ/τ + τ/(2M)) is minimised at √(2δM).
func TestYoungRuntimeMinimum(t *testing.T) {
	// By hand: T_s = 1e5, τ = 1000, δ = 60, M = 1e4: 1e5(1 + 0.06 + 0.05) = 111000.
	checkRel(t, "YoungRuntime by hand", YoungRuntime(RuntimeInput{Work: 1e5, Interval: 1000, Cost: 60, MTTI: 1e4}), 111000, 1e-15)
	for _, c := range []struct{ cost, mtti float64 }{{60, 1e4}, {300, 86400}, {1.63, 100}, {0.01, 5}} {
		f := func(tau float64) float64 {
			return YoungRuntime(RuntimeInput{Work: 1, Interval: tau, Cost: c.cost, MTTI: c.mtti})
		}
		num := goldenMin(f, c.cost/100, 100*c.mtti)
		checkRel(t, "argmin YoungRuntime vs √(2δM)", num, Young(c.cost, c.mtti), 1e-6)
	}
}

func TestGroppLuskAndFialhoRuntime(t *testing.T) {
	// By hand (T_s = 1e5, τ = 1000, δ = 60, R = 120, M = 1e4):
	//   Gropp–Lusk: T = 1e5·(1 + 60/1000)(1 + 1000/2e4) = 1e5·1.06·1.05 = 111300
	//   Fialho: eq. 5 overhead = (1000² + 2(1000·120 + 1e4·60))/(2·1060) = 2.44e6/2120 = 1150.9433962…
	//           T = 1e5·1e4/(1e4 − 1150.9433962) = 113006.3965885…
	// Fialho's run time is T_s(1 + δ/τ)/(1 − (R + t_d + τ/2)/M) identically:
	// M − O = τ(2M − τ − 2(R+t_d))/(2(τ+δ)).
	in := RuntimeInput{Work: 1e5, Interval: 1000, Cost: 60, MTTI: 1e4, Restart: 120}
	checkRel(t, "GroppLuskRuntime by hand", GroppLuskRuntime(in), 111300, 1e-14)
	checkRel(t, "FialhoRuntime by hand", FialhoRuntime(in, 0), 1e9/(1e4-2.44e6/2120), 1e-14)
	checkRel(t, "FialhoRuntime closed form", FialhoRuntime(in, 0), 1e5*1.06/0.938, 1e-14)

	sane := []struct {
		in     RuntimeInput
		detect float64
	}{
		{in, 0},
		{RuntimeInput{Work: 1e6, Interval: 3600, Cost: 300, MTTI: 86400, Restart: 300}, 30},
		{RuntimeInput{Work: 500, Interval: 16.3, Cost: 1.63, MTTI: 100, Restart: 1.643}, 0.5},
		{RuntimeInput{Work: 1, Interval: 1, Cost: 1e-3, MTTI: 1e12}, 0},
	}
	for _, c := range sane {
		gl, fi := GroppLuskRuntime(c.in), FialhoRuntime(c.in, c.detect)
		if !finite(gl) || !(gl > c.in.Work) || !finite(fi) || !(fi > c.in.Work) {
			t.Errorf("%+v: Gropp–Lusk %g, Fialho %g; want finite and > work %g", c.in, gl, fi, c.in.Work)
		}
		// Young ≤ Gropp–Lusk (which adds failures during checkpoints) ≤
		// Fialho (which adds restarts and counts failures over the whole run).
		if y := YoungRuntime(c.in); !(y <= gl*(1+1e-12) && gl <= fi*(1+1e-12)) {
			t.Errorf("%+v: Young %g, Gropp–Lusk %g, Fialho %g; want non-decreasing", c.in, y, gl, fi)
		}
	}
	// Gropp–Lusk's run time is minimised at its optimum √(2δM).
	for _, c := range []struct{ cost, mtti float64 }{{300, 86400}, {5, 1440}, {1.63, 100}} {
		f := func(tau float64) float64 {
			return GroppLuskRuntime(RuntimeInput{Work: 1, Interval: tau, Cost: c.cost, MTTI: c.mtti})
		}
		checkRel(t, "argmin GroppLuskRuntime vs √(2δM)", goldenMin(f, c.cost/100, 100*c.mtti), GroppLusk(c.cost, c.mtti), 1e-6)
	}

	// Failures outpace progress: R + t_d + τ/2 ≥ M.
	for _, c := range []struct {
		in     RuntimeInput
		detect float64
	}{
		{RuntimeInput{Work: 1e5, Interval: 120, Cost: 10, MTTI: 100, Restart: 50}, 0},     // 50 + 60 > 100
		{RuntimeInput{Work: 1e5, Interval: 100, Cost: 10, MTTI: 100, Restart: 50}, 0},     // exactly 100
		{RuntimeInput{Work: 1e5, Interval: 300, Cost: 10, MTTI: 100, Restart: 0}, 0},      // τ/2 = 150
		{RuntimeInput{Work: 1e5, Interval: 20, Cost: 10, MTTI: 100, Restart: 1000}, 0},    // restart alone
		{RuntimeInput{Work: 1e5, Interval: 1000, Cost: 60, MTTI: 1e4, Restart: 120}, 1e4}, // detection alone
	} {
		if fi := FialhoRuntime(c.in, c.detect); !math.IsInf(fi, 1) {
			t.Errorf("%+v t_d=%g: FialhoRuntime = %g, want +Inf", c.in, c.detect, fi)
		}
	}
}

func TestRuntimeValidate(t *testing.T) {
	ok := RuntimeInput{Work: 1, Interval: 1, Cost: 1, MTTI: 1, Restart: 0}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid input: %v", err)
	}
	cases := []struct {
		mod   func(*RuntimeInput)
		param string
	}{
		{func(in *RuntimeInput) { in.Work = 0 }, "work"},
		{func(in *RuntimeInput) { in.Interval = -1 }, "interval"},
		{func(in *RuntimeInput) { in.Cost = math.NaN() }, "cost"},
		{func(in *RuntimeInput) { in.MTTI = math.Inf(1) }, "mtti"},
		{func(in *RuntimeInput) { in.Restart = -1e-9 }, "restart"},
		{func(in *RuntimeInput) { in.Restart = math.NaN() }, "restart"},
	}
	for _, c := range cases {
		in := ok
		c.mod(&in)
		checkParamErr(t, "RuntimeInput.Validate", in.Validate(), c.param)
	}
}

// SmallestReaching bisects in log x to 1e-4 relative, from above.
func TestSmallestReaching(t *testing.T) {
	sq := func(x float64) float64 { return x * x }
	x, ok := SmallestReaching(sq, 100, 1, 1000) // x² ≥ 100 ⇔ x ≥ 10
	if !ok || !(x >= 10*(1-1e-12)) || !(x <= 10*math.Exp(1e-4)) || !(sq(x) >= 100) {
		t.Errorf("x² ≥ 100 on [1, 1000]: x = %.10g, ok = %v; want in [10, 10·e^1e-4]", x, ok)
	}
	// Efficiency against MTTI (non-decreasing): the smallest MTTI giving 90%
	// with τ = 1000, δ = 60, R = 0 is where τ/(M(e^{(τ+δ)/M} − 1)) = 0.9.
	eff := func(M float64) float64 {
		_, e := DalyRuntime(RuntimeInput{Work: 1000, Interval: 1000, Cost: 60, MTTI: M})
		return e
	}
	M, ok := SmallestReaching(eff, 0.9, 1e3, 1e9)
	if !ok || !(eff(M) >= 0.9) || !(eff(M*math.Exp(-2e-4)) < 0.9) {
		t.Errorf("MTTI for 90%%: %g (eff %g), ok = %v", M, eff(M), ok)
	}
	if x, ok := SmallestReaching(sq, 1e7, 1, 1000); ok || !math.IsNaN(x) {
		t.Errorf("unreachable target: x = %g, ok = %v; want NaN, false", x, ok)
	}
	if x, ok := SmallestReaching(sq, 0.5, 1, 1000); !ok || x != 1 {
		t.Errorf("target met at lo: x = %g, ok = %v; want 1, true", x, ok)
	}
}
