package model

import (
	"errors"
	"math"
	"testing"
)

// Paper 003 (Fialho, Rexachs, Luque) Table 1: MTTI 24 h and 6 h,
// t_c = t_l = 5 min, t_d = 0. The paper prints the intervals truncated (not
// rounded) to two decimals: eq. 6 gives
//
//	24 h: √(5² − 0 − 2·5·5 + 2·1440·5) − 5 = √14375 − 5 = 119.8957… − 5 = 114.8957…  → "114.89"
//	 6 h: √(25 − 50 + 2·360·5) − 5 = √3575 − 5 = 59.7913… − 5 = 54.7913…           → "54.79"
//
// whereas rounding would print 114.90 and 54.79. The "Daly" column is Daly's
// first-order estimate √(2δM) − δ (120 − 5 = 115, 60 − 5 = 55), not eq. 2 of
// paper 000 (which gives 116.69 for 24 h, see TestDalyHigherOrder).
func TestFialhoTable1(t *testing.T) {
	trunc2 := func(x float64) float64 { return math.Floor(x*100) / 100 }
	rows := []struct {
		hours                       float64
		fialho, daly1, gropp, young float64 // minutes, as printed
	}{
		{24, 114.89, 115.00, 120.00, 120.00},
		{6, 54.79, 55.00, 60.00, 60.00},
	}
	// Run in minutes (the table's unit) and in seconds (converted back):
	// every formula is homogeneous of degree 1 in time.
	units := []struct {
		name  string
		scale float64 // seconds per unit of input
	}{{"minutes", 1}, {"seconds", 60}}
	for _, u := range units {
		for _, r := range rows {
			in := IntervalInput{
				Cost:    5 * u.scale,
				Restart: 5 * u.scale, // t_l, the checkpoint loading time, is the Restart field
				MTTI:    r.hours * 60 * u.scale,
			}
			for _, c := range []struct {
				m    Method
				want float64
			}{
				{MethodFialho, r.fialho},
				{MethodDalyFirstOrder, r.daly1},
				{MethodGroppLusk, r.gropp},
				{MethodYoung, r.young},
			} {
				res, err := OptimalInterval(c.m, in, 0)
				if err != nil {
					t.Fatalf("%s %gh %s: %v", u.name, r.hours, c.m, err)
				}
				got := trunc2(res.Interval / u.scale)
				if got != c.want {
					t.Errorf("%s MTTI %g h %s: interval %.6f min truncates to %.2f, paper prints %.2f", u.name, r.hours, c.m, res.Interval/u.scale, got, c.want)
				}
			}
		}
	}
	// The two rounding conventions really differ for the 24 h Fialho value,
	// so the test above does check truncation.
	v, _ := FialhoInterval(IntervalInput{Cost: 5, Restart: 5, MTTI: 1440})
	if math.Round(v*100)/100 == 114.89 {
		t.Errorf("rounding %.6f gives the printed 114.89 too; the truncation check is vacuous", v)
	}
}

// tablePhi is the φ of 003 Table 2 for N processes: every process has
// P(n) = min(5, N) (itself and its four torus neighbours, capped by N), so
// φ = N·min(5,N)/N² (eq. 12).
func tablePhi(t *testing.T, n int) float64 {
	t.Helper()
	deps := make([]int, n)
	for i := range deps {
		deps[i] = min(5, n)
	}
	phi, err := Phi(deps)
	if err != nil {
		t.Fatalf("Phi(N=%d): %v", n, err)
	}
	return phi
}

// 003 Table 2, σ columns: α = 100 s, t_d = 0.5 s, Δ_lr = 0. The printed
// values have two decimals; some are rounded, some truncated (e.g. Fialho
// N = 4: eq. 11 gives 16.305 → "16.30"), so both are accepted: |x − printed| < 0.01.
func TestFialhoTable2(t *testing.T) {
	rows := []struct {
		n                    int
		phi                  float64 // printed, 4 decimals
		tc, tl, lp           float64
		fialho, daly, groppY float64 // printed σ; Gropp = Young
	}{
		{4, 1.0000, 1.630, 1.643, 2.771, 16.30, 16.42, 18.05},
		{9, 0.5556, 1.622, 1.596, 2.763, 22.39, 16.39, 18.01},
		{16, 0.3125, 1.691, 1.610, 2.765, 31.00, 16.70, 18.39},
		{25, 0.2000, 1.650, 1.634, 2.779, 38.70, 16.52, 18.17},
		{16, 0.3125, 4.954, 5.131, 4.188, 50.46, 26.52, 31.48},
		{36, 0.1389, 5.032, 5.199, 4.160, 78.73, 26.69, 31.72},
		{64, 0.0781, 4.981, 5.287, 4.399, 106.06, 26.58, 31.56},
		{100, 0.0500, 5.284, 5.330, 4.328, 137.76, 27.22, 32.51},
	}
	for i, r := range rows {
		phi := tablePhi(t, r.n)
		if math.Round(phi*1e4)/1e4 != r.phi {
			t.Errorf("row %d (N=%d): φ = %.6f, paper prints %.4f", i+1, r.n, phi, r.phi)
		}
		in := IntervalInput{Cost: r.tc, Restart: r.tl, MTTI: 100, Detect: 0.5, Phi: phi, LogProtect: r.lp, LogReplay: 0}
		for _, c := range []struct {
			m    Method
			want float64
		}{
			{MethodFialhoParallel, r.fialho},
			{MethodDalyFirstOrder, r.daly},
			{MethodGroppLusk, r.groppY},
			{MethodYoung, r.groppY},
		} {
			res, err := OptimalInterval(c.m, in, 0)
			if err != nil {
				t.Fatalf("row %d %s: %v", i+1, c.m, err)
			}
			if d := math.Abs(res.Interval - c.want); !(d < 0.01) {
				t.Errorf("row %d (N=%d, t_c=%g) %s: σ = %.5f, paper prints %.2f (off by %.4f)", i+1, r.n, r.tc, c.m, res.Interval, c.want, d)
			}
		}
	}
}

// 003 Table 3 (NAS LU, 8 processes): α = 100, t_d = 0.5, "φ = 0.5625".
func TestFialhoTable3(t *testing.T) {
	rows := []struct {
		class                 string
		tc, tl, lp, lr        float64
		fialho, daly1, groppY float64 // our expected values (see below)
		printedDaly           float64
		fialhoStatedPhi       float64 // eq. 11 with φ = 0.5625, by hand
	}{
		// LU B. Radicand factor: t_c + 2α − 2t_d − 2t_l − 2Δ_lr
		//   = 0.605 + 200 − 1 − 1.118 − 0.010 = 198.477.
		// φ = 1:      √(0.605·198.477) − 0.605 = √120.078585 − 0.605 = 10.958037 − 0.605 = 10.353037 → "10.353" ✓
		// φ = 0.5625: √(0.5625·120.078585)/0.5625 − 0.605 = √213.473040 − 0.605 = 14.610717 − 0.605 = 14.005717
		// daly1: √(2·0.605·100) − 0.605 = 11 − 0.605 = 10.395; Young/Gropp 11.000.
		{"B", 0.605, 0.559, 38.257, 0.005, 10.353, 10.395, 11.000, 10.395, 14.005717},
		// LU C. Factor: 2.057 + 200 − 1 − 4.204 − 0.014 = 196.839.
		// φ = 1:      √(2.057·196.839) − 2.057 = √404.897823 − 2.057 = 20.122073 − 2.057 = 18.065073 → "18.065" ✓
		// φ = 0.5625: √(404.897823/0.5625) − 2.057 = √719.818352 − 2.057 = 26.829431 − 2.057 = 24.772431
		// daly1: √411.4 − 2.057 = 20.282998 − 2.057 = 18.225998. The paper prints
		// 18.065 in the Daly column too — the Fialho value copied over (misprint);
		// its Young/Gropp column (20.283) confirms √(2·t_c·α) = 20.283.
		{"C", 2.057, 2.102, 13.961, 0.007, 18.065, 18.226, 20.283, 18.065, 24.772431},
	}
	for _, r := range rows {
		base := IntervalInput{Cost: r.tc, Restart: r.tl, MTTI: 100, Detect: 0.5, LogProtect: r.lp, LogReplay: r.lr}

		// The printed Fialho σ is eq. 11 with φ = 1, not with the stated φ.
		in1 := base
		in1.Phi = 1
		s1, err := FialhoParallelInterval(in1)
		if err != nil {
			t.Fatal(err)
		}
		checkAbs(t, "LU "+r.class+" fialho-parallel φ=1", s1, r.fialho, 5e-4)

		inStated := base
		inStated.Phi = 0.5625
		s2, err := FialhoParallelInterval(inStated)
		if err != nil {
			t.Fatal(err)
		}
		checkAbs(t, "LU "+r.class+" fialho-parallel φ=0.5625", s2, r.fialhoStatedPhi, 1e-5)
		if math.Abs(s2-r.fialho) < 1 {
			t.Errorf("LU %s: eq. 11 with φ = 0.5625 gives %.3f, unexpectedly close to the printed %.3f", r.class, s2, r.fialho)
		}

		d1 := DalyFirstOrder(r.tc, 100)
		checkAbs(t, "LU "+r.class+" daly1", d1, r.daly1, 5e-4)
		if r.class == "C" && math.Abs(d1-r.printedDaly) < 0.1 {
			t.Errorf("LU C daly1 = %.3f equals the printed (misprinted) 18.065", d1)
		}
		checkAbs(t, "LU "+r.class+" young", Young(r.tc, 100), r.groppY, 5e-4)
		checkAbs(t, "LU "+r.class+" gropp", GroppLusk(r.tc, 100), r.groppY, 5e-4)
	}
}

// 003 eq. 10 with φ = 1 and no message logging is eq. 5: with φ = 1,
// Δ_lp = Δ_lr = 0 the numerator of eq. 10 is
// σ² + σ(2t_d + 2t_l + t_c − t_c) + 2t_c(t_d + t_l + α − t_d − t_l)
// = σ² + 2(σt_d + σt_l + αt_c), the numerator of eq. 5, over the same 2(σ + t_c).
func TestFialhoParallelReducesToSerial(t *testing.T) {
	inputs := []IntervalInput{
		{Cost: 5, Restart: 5, MTTI: 1440},
		{Cost: 1.63, Restart: 1.643, MTTI: 100, Detect: 0.5},
		{Cost: 300, Restart: 120, MTTI: 86400, Detect: 30},
	}
	for _, in := range inputs {
		in.Phi = 1
		for _, sigma := range []float64{0.1, 1, 10, 55, 114.89, 1000, 1e5} {
			checkRel(t, "eq10(φ=1) vs eq5", FialhoParallelOverhead(sigma, in), FialhoOverhead(sigma, in), 1e-13)
		}
		s5, err5 := FialhoInterval(in)
		s11, err11 := FialhoParallelInterval(in)
		if err5 != nil || err11 != nil {
			t.Fatal(err5, err11)
		}
		checkRel(t, "eq11(φ=1) vs eq6", s11, s5, 1e-13)
	}
	// Hand value of eq. 5: σ = 10, t_c = 2, t_l = 3, t_d = 1, α = 100:
	// (100 + 2(10 + 30 + 200)) / (2·12) = 580/24 = 24.1666…
	checkRel(t, "eq5 by hand", FialhoOverhead(10, IntervalInput{Cost: 2, Restart: 3, Detect: 1, MTTI: 100}), 580.0/24, 1e-15)
	// Hand value of eq. 10: σ = 10, φ = 0.5, t_c = 2, t_d = 1, t_l = 3, Δ_lr = 1, Δ_lp = 4, α = 100:
	//   φσ² = 50
	//   σ(2φt_d + 2φt_l + φt_c + 2φΔ_lr − t_c + 2Δ_lp) = 10(1 + 3 + 1 + 1 − 2 + 8) = 120
	//   2t_c(φt_d + φt_l + φΔ_lr + α − t_d − t_l − Δ_lr + Δ_lp) = 4(0.5 + 1.5 + 0.5 + 100 − 1 − 3 − 1 + 4) = 4·101.5 = 406
	//   (50 + 120 + 406) / (2·10 + 2·2) = 576/24 = 24
	in := IntervalInput{Cost: 2, Restart: 3, Detect: 1, MTTI: 100, Phi: 0.5, LogReplay: 1, LogProtect: 4}
	checkRel(t, "eq10 by hand", FialhoParallelOverhead(10, in), 24, 1e-15)
}

// The closed forms eq. 6 and eq. 11 are the minima of eq. 5 and eq. 10: a
// golden-section search of the overhead in the test finds the same σ, and at
// the optimum the overhead is, by hand (f' = 0 ⇒ f = N'/D'),
// eq. 5: σ + t_d + t_l;  eq. 10: φσ + φ(t_d + t_l + Δ_lr) + (φ − 1)t_c/2 + Δ_lp.
func TestFialhoOptimumIsMinimum(t *testing.T) {
	cases := []IntervalInput{
		{Cost: 5, Restart: 5, MTTI: 1440, Phi: 1},
		{Cost: 5, Restart: 5, MTTI: 360, Phi: 1},
		{Cost: 1.63, Restart: 1.643, MTTI: 100, Detect: 0.5, LogProtect: 2.771, Phi: 1},
		{Cost: 4.954, Restart: 5.131, MTTI: 100, Detect: 0.5, LogProtect: 4.188, Phi: 0.3125},
		{Cost: 5.284, Restart: 5.33, MTTI: 100, Detect: 0.5, LogProtect: 4.328, Phi: 0.05},
		{Cost: 0.605, Restart: 0.559, MTTI: 100, Detect: 0.5, LogProtect: 38.257, LogReplay: 0.005, Phi: 0.5625},
		{Cost: 60, Restart: 600, MTTI: 86400, Detect: 60, LogProtect: 10, LogReplay: 100, Phi: 0.2},
	}
	for i, in := range cases {
		if in.Phi == 1 && in.LogProtect == 0 {
			s6, err := FialhoInterval(in)
			if err != nil {
				t.Fatal(err)
			}
			num := goldenMin(func(s float64) float64 { return FialhoOverhead(s, in) }, 1e-9, 10*in.MTTI)
			checkRel(t, "eq5 numeric argmin vs eq6", num, s6, 1e-6)
			res, err := OptimalInterval(MethodFialho, in, 0)
			if err != nil {
				t.Fatal(err)
			}
			if res.OverheadAt != res.Interval || res.Interval != s6 {
				t.Errorf("case %d: OptimalInterval(fialho) interval %g at %g, want %g at the optimum", i, res.Interval, res.OverheadAt, s6)
			}
			checkRel(t, "eq5 overhead at optimum", res.Overhead, s6+in.Detect+in.Restart, 1e-12)
		}
		s11, err := FialhoParallelInterval(in)
		if err != nil {
			t.Fatal(err)
		}
		num := goldenMin(func(s float64) float64 { return FialhoParallelOverhead(s, in) }, 1e-9, 10*in.MTTI/in.Phi)
		checkRel(t, "eq10 numeric argmin vs eq11", num, s11, 1e-6)
		res, err := OptimalInterval(MethodFialhoParallel, in, 0)
		if err != nil {
			t.Fatal(err)
		}
		if res.OverheadAt != s11 {
			t.Errorf("case %d: OverheadAt = %g, want the optimum %g", i, res.OverheadAt, s11)
		}
		want := in.Phi*s11 + in.Phi*(in.Detect+in.Restart+in.LogReplay) + (in.Phi-1)*in.Cost/2 + in.LogProtect
		checkRel(t, "eq10 overhead at optimum", res.Overhead, want, 1e-12)
		// Overhead away from the optimum is larger, and "at" is honoured.
		for _, f := range []float64{0.5, 0.9, 1.1, 2} {
			r2, err := OptimalInterval(MethodFialhoParallel, in, f*s11)
			if err != nil {
				t.Fatal(err)
			}
			if r2.OverheadAt != f*s11 || r2.Interval != s11 {
				t.Errorf("case %d: at = %g gives interval %g, overhead at %g", i, f*s11, r2.Interval, r2.OverheadAt)
			}
			if r2.Overhead != FialhoParallelOverhead(f*s11, in) || !(r2.Overhead > res.Overhead) {
				t.Errorf("case %d: overhead at %g·σ_opt = %g, at σ_opt = %g; want larger off the optimum", i, f, r2.Overhead, res.Overhead)
			}
		}
	}
	// The other methods carry no overhead.
	res, err := OptimalInterval(MethodYoung, IntervalInput{Cost: 5, MTTI: 100}, 10)
	if err != nil || !math.IsNaN(res.Overhead) || !math.IsNaN(res.OverheadAt) {
		t.Errorf("young: overhead %g at %g, err %v; want NaN, NaN, nil", res.Overhead, res.OverheadAt, err)
	}
}

// A negative radicand (t_l = 300 s, α = 100 s: failures come faster than
// the job recovers) has no optimum: 1 − 2·300 + 200 < 0 for eq. 6 and
// 1 + 200 − 600 < 0 for eq. 11.
func TestFialhoNoOptimum(t *testing.T) {
	in := IntervalInput{Cost: 1, Restart: 300, MTTI: 100, Phi: 0.5}
	if _, err := FialhoInterval(in); !errors.Is(err, ErrNoOptimum) {
		t.Errorf("FialhoInterval: err = %v, want ErrNoOptimum", err)
	}
	if _, err := FialhoParallelInterval(in); !errors.Is(err, ErrNoOptimum) {
		t.Errorf("FialhoParallelInterval: err = %v, want ErrNoOptimum", err)
	}
	for _, m := range []Method{MethodFialho, MethodFialhoParallel} {
		if _, err := OptimalInterval(m, in, 0); !errors.Is(err, ErrNoOptimum) {
			t.Errorf("OptimalInterval(%s): err = %v, want ErrNoOptimum", m, err)
		}
	}
	// The first-order formulas still answer (they ignore t_l).
	if _, err := OptimalInterval(MethodYoung, in, 0); err != nil {
		t.Errorf("young: %v", err)
	}
	// A real but non-positive σ is no optimum either: eq. 6's radicand exactly
	// 0 (t_c = 2, α = 100, t_l = 101: 4 − 404 + 400 = 0) gives σ = −t_c, and
	// t_d + t_l = α gives σ = 0; eq. 5 then only grows on σ > 0.
	for _, in := range []IntervalInput{{Cost: 2, Restart: 101, MTTI: 100}, {Cost: 100, Restart: 10, MTTI: 10}} {
		if s, err := FialhoInterval(in); !errors.Is(err, ErrNoOptimum) {
			t.Errorf("%+v: σ = %g, err %v; want ErrNoOptimum", in, s, err)
		}
	}
	// Just inside: t_d + t_l slightly below α leaves a small positive optimum.
	if s, err := FialhoInterval(IntervalInput{Cost: 2, Restart: 99, MTTI: 100}); err != nil || !(s > 0) {
		t.Errorf("t_l = 99: σ = %g, err %v; want a positive optimum", s, err)
	}
}

// 000 eq. 2 (Daly's higher-order estimate).
func TestDalyHigherOrder(t *testing.T) {
	// δ = 5 min, M = 24 h = 1440 min: δ/2M = 5/2880 = 1/576, √(δ/2M) = 1/24, √(2δM) = √14400 = 120.
	// τ = 120(1 + (1/24)/3 + (1/576)/9) − 5 = 120 + 5/3 + 5/216 − 5 = 115 + 365/216 = 116.689814814…
	checkRel(t, "Daly(5 min, 24 h)", Daly(5, 1440), 115+365.0/216, 1e-14)
	checkRel(t, "Daly(300 s, 86400 s)", Daly(300, 86400), 60*(115+365.0/216), 1e-14)
	// Higher order exceeds first order whenever δ < 2M.
	if !(Daly(5, 1440) > DalyFirstOrder(5, 1440)) {
		t.Error("Daly higher order should exceed the first-order estimate")
	}

	// τ = M exactly for δ ≥ 2M.
	for _, c := range []struct{ cost, mtti float64 }{{200, 100}, {201, 100}, {1e6, 1}, {2, 1}} {
		if got := Daly(c.cost, c.mtti); got != c.mtti {
			t.Errorf("Daly(%g, %g) = %g, want M = %g", c.cost, c.mtti, got, c.mtti)
		}
	}
	// Just below 2M: δ/2M → 1, so τ → 2M(1 + 1/3 + 1/9) − 2M = 2M·4/9 = 8M/9.
	// Eq. 2 itself jumps by M/9 at δ = 2M; the value just below is 8M/9, not M.
	for _, M := range []float64{1, 100, 86400} {
		below := Daly(2*M*(1-1e-12), M)
		checkRel(t, "Daly just below 2M", below, 8*M/9, 1e-9)
		if !(below < M) {
			t.Errorf("Daly just below 2M = %g, want < M = %g", below, M)
		}
	}
	// Increasing in δ below 2M (dense check).
	prev := 0.0
	for d := 0.01; d < 199.99; d += 0.37 {
		v := Daly(d, 100)
		if !(v > prev) {
			t.Fatalf("Daly(%g, 100) = %g not above the previous %g", d, v, prev)
		}
		prev = v
	}

	// Daly's first order is negative for δ > 2M: √(2·300·100) − 300 = 244.95 − 300 = −55.05.
	checkRel(t, "DalyFirstOrder(300, 100)", DalyFirstOrder(300, 100), math.Sqrt(60000)-300, 1e-15)
	if !(DalyFirstOrder(300, 100) < 0) || DalyFirstOrder(200, 100) != 0 {
		t.Errorf("DalyFirstOrder: %g at δ = 3M, %g at δ = 2M; want < 0 and 0", DalyFirstOrder(300, 100), DalyFirstOrder(200, 100))
	}
	// As an optimum it is outside its domain there: no interval, an error.
	for _, cost := range []float64{300, 200} {
		res, err := OptimalInterval(MethodDalyFirstOrder, IntervalInput{Cost: cost, MTTI: 100}, 0)
		if !errors.Is(err, ErrNoOptimum) {
			t.Errorf("OptimalInterval(daly1, δ = %g, M = 100) = %g, %v; want ErrNoOptimum", cost, res.Interval, err)
		}
	}
	if res, err := OptimalInterval(MethodDalyFirstOrder, IntervalInput{Cost: 199, MTTI: 100}, 0); err != nil || !(res.Interval > 0) {
		t.Errorf("OptimalInterval(daly1, δ just below 2M) = %g, %v; want a positive interval", res.Interval, err)
	}
	res, err := OptimalInterval(MethodDaly, IntervalInput{Cost: 300, MTTI: 100}, 0)
	if err != nil || res.Interval != 100 {
		t.Errorf("OptimalInterval(daly, δ = 3M) = %g, %v; want M", res.Interval, err)
	}
}

func TestParseMethodAndValidate(t *testing.T) {
	for _, m := range Methods {
		got, err := ParseMethod(string(m))
		if err != nil || got != m {
			t.Errorf("ParseMethod(%q) = %q, %v", m, got, err)
		}
	}
	if len(Methods) != 6 {
		t.Errorf("len(Methods) = %d, want 6", len(Methods))
	}
	for _, s := range []string{"", "Young", "fialho_parallel", "daly2"} {
		if _, err := ParseMethod(s); err == nil {
			t.Errorf("ParseMethod(%q): no error", s)
		}
	}
	if _, err := OptimalInterval(Method("bogus"), IntervalInput{Cost: 1, MTTI: 1}, 0); err == nil {
		t.Error("OptimalInterval(bogus): no error")
	}

	ok := IntervalInput{Cost: 1, MTTI: 100, Restart: 1, Detect: 0.5, Phi: 0.5, LogProtect: 1, LogReplay: 1}
	nan, inf := math.NaN(), math.Inf(1)
	cases := []struct {
		name  string
		m     Method
		mod   func(*IntervalInput)
		param string
	}{
		{"zero cost", MethodYoung, func(in *IntervalInput) { in.Cost = 0 }, "cost"},
		{"negative cost", MethodFialho, func(in *IntervalInput) { in.Cost = -1 }, "cost"},
		{"NaN cost", MethodDaly, func(in *IntervalInput) { in.Cost = nan }, "cost"},
		{"zero mtti", MethodGroppLusk, func(in *IntervalInput) { in.MTTI = 0 }, "mtti"},
		{"Inf mtti", MethodYoung, func(in *IntervalInput) { in.MTTI = inf }, "mtti"},
		{"negative restart", MethodFialho, func(in *IntervalInput) { in.Restart = -1 }, "restart"},
		{"NaN detect", MethodFialho, func(in *IntervalInput) { in.Detect = nan }, "detect"},
		{"negative log-protect", MethodFialhoParallel, func(in *IntervalInput) { in.LogProtect = -0.1 }, "log-protect"},
		{"Inf log-replay", MethodFialhoParallel, func(in *IntervalInput) { in.LogReplay = inf }, "log-replay"},
		{"phi 0", MethodFialhoParallel, func(in *IntervalInput) { in.Phi = 0 }, "phi"},
		{"phi > 1", MethodFialhoParallel, func(in *IntervalInput) { in.Phi = 1.0001 }, "phi"},
		{"phi NaN", MethodFialhoParallel, func(in *IntervalInput) { in.Phi = nan }, "phi"},
	}
	for _, c := range cases {
		in := ok
		c.mod(&in)
		_, err := OptimalInterval(c.m, in, 0)
		checkParamErr(t, c.name, err, c.param)
	}
	// φ is only checked for fialho-parallel.
	in := ok
	in.Phi = 0
	if _, err := OptimalInterval(MethodFialho, in, 0); err != nil {
		t.Errorf("fialho with φ = 0: %v (φ is unused)", err)
	}
	if _, err := FialhoParallelInterval(in); paramOf(err) != "phi" {
		t.Errorf("FialhoParallelInterval(φ = 0): err = %v, want phi", err)
	}
	if err := ValidatePhi(1); err != nil {
		t.Errorf("ValidatePhi(1): %v", err)
	}
}

// Every method has a source, and only Fialho's read the optional inputs.
func TestMethodSourceAndUses(t *testing.T) {
	optional := []string{"restart", "detect", "phi", "log-protect", "log-replay", "interval"}
	for _, m := range Methods {
		if m.Source() == "" {
			t.Errorf("%s: no source", m)
		}
		n := 0
		for _, in := range optional {
			if m.Uses(in) {
				n++
			}
		}
		want := map[Method]int{MethodFialho: 3, MethodFialhoParallel: 6}[m]
		if n != want {
			t.Errorf("%s uses %d optional inputs, want %d", m, n, want)
		}
	}
}
