package model

import (
	"math"
	"math/big"
	"testing"
)

// The building blocks of SPEC-markov §2–§3, checked against every number of
// the two tables of the worked example (§7): λ1 = 2e-4, λ2 = 5e-5, t = 600,
// v = 4, c1 = 30, c2 = 400, r1 = 40, r2 = 500; non-blocking ℓ2 = 1500, α = 0.05.

var (
	exRates = []float64{2e-4, 5e-5}
	exTotal = 2.5e-4
)

// blockRow is one row of a §7 table; NaN marks a column the table omits.
type blockRow struct {
	name string
	b    block
	p, a [3]float64
}

func checkBlock(t *testing.T, r blockRow) {
	t.Helper()
	for e := 0; e < 3; e++ {
		for _, q := range []struct {
			col       string
			got, want float64
		}{{"p", r.b.p[e], r.p[e]}, {"a", r.b.a[e], r.a[e]}} {
			if math.IsNaN(q.want) {
				continue
			}
			if q.want == 0 {
				if math.Abs(q.got) > 1e-15 {
					t.Errorf("%s %s[%d] = %.15g, want 0", r.name, q.col, e, q.got)
				}
				continue
			}
			checkRel(t, r.name+" "+q.col+"["+string(rune('0'+e))+"]", q.got, q.want, 1e-9)
		}
	}
	// Exit probabilities always sum to 1.
	sum := r.b.p[0] + r.b.p[1] + r.b.p[2]
	if math.Abs(sum-1) > 1e-14 {
		t.Errorf("%s: Σp = %.17g", r.name, sum)
	}
}

func TestMarkovWorkedExampleBlocking(t *testing.T) {
	S1 := seg(630, exRates, exTotal)
	R1 := seg(40, exRates, exTotal)
	W1 := wrap(S1, 1, 40, exRates, exTotal)
	// SPEC §7 labels this row "S2 = seg(1030)", but S2 = seg(t + c2) = seg(600 + 400)
	// and its printed numbers are those of seg(1000): p[0] = e^{−0.25} = 0.778800783071,
	// a[0] = 1000·e^{−0.25}. The label is a typo; the numbers are right.
	S2 := seg(600+400, exRates, exTotal)
	W2 := wrap(S2, 1, 40, exRates, exTotal)
	period := seq(seq(S1, pow(W1, 3)), W2) // S1 ; W1³ ; W2 (v = 4)

	rows := []blockRow{
		{"S1", S1, [3]float64{0.854276813608, 0.116578549113, 0.0291446372783}, [3]float64{538.194392573, 35.7586823942, 8.93967059855}},
		{"R1", R1, [3]float64{0.990049833749, 0.00796013300067, 0.00199003325017}, [3]float64{39.60199335, 0.158937322689, 0.0397343306722}},
		{"W1", W1, [3]float64{0.965741296048, 0, 0.034258703952}, [3]float64{652.10841561, 0, 12.0844235394}},
		{"S2", S2, [3]float64{0.778800783071, 0.176959373543, 0.0442398433857}, [3]float64{778.800783071, 84.7968677144, 21.1992169286}},
		{"W2", W2, [3]float64{0.944228248788, 0, 0.0557717512124}, [3]float64{1048.35999547, 0, 32.9184391681}},
		{"period", period, [3]float64{0.72653746842, 0.116578549113, 0.156883982466}, [3]float64{2736.1446917, 35.7586823942, 287.544190073}},
	}
	for _, r := range rows {
		checkBlock(t, r)
	}

	// D2 = (e^{0.125} − 1)/2.5e-4 = 532.593812267: R2 retried until success.
	checkRel(t, "D2", math.Expm1(0.125)/exTotal, 532.593812267, 1e-11)

	// E = a[0] of wrap(period, 2) = 4411.46142586; also by §4.4's explicit formula
	// E = (a0 + a1 + a2 + (p1 + p2)·D2)/p0 with the printed numbers:
	// (2736.1446917 + 35.7586823942 + 287.544190073 + 0.273462531579·532.593812267)/0.72653746842.
	E := wrap(period, 2, 500, exRates, exTotal)
	checkRel(t, "E (blocking)", E.a[0], 4411.46142586, 1e-9)
	if E.p[0] != 1 {
		t.Errorf("wrap(·, L).p[0] = %.17g, want 1", E.p[0])
	}
	byHand := (2736.1446917 + 35.7586823942 + 287.544190073 + 0.273462531579*532.593812267) / 0.72653746842
	checkRel(t, "§4.4 formula with printed numbers", byHand, 4411.46142586, 1e-9)
	checkRel(t, "efficiency (blocking)", 3000/E.a[0], 0.680046748775, 1e-9)

	// L1-protected first interval: W1 ; W1³ ; W2 = W1⁴ ; W2.
	Eprot := wrap(seq(pow(W1, 4), W2), 2, 500, exRates, exTotal)
	checkRel(t, "E (L1-protected)", Eprot.a[0], 4333.23928787, 1e-9)
	checkRel(t, "efficiency (L1-protected)", 3000/Eprot.a[0], 0.692322717649, 1e-9)
}

func TestMarkovWorkedExampleNonBlocking(t *testing.T) {
	// T_I = (1 + 0.05)·600 + 30 = 660, m = ceil(1500/660) = ceil(2.27) = 3.
	SI := seg(660, exRates, exTotal)
	WI := wrap(SI, 1, 40, exRates, exTotal)
	I := pow(WI, 3)
	W1 := wrap(seg(630, exRates, exTotal), 1, 40, exRates, exTotal)
	C := pow(W1, 2)
	PR := pow(W1, 5)
	nan := math.NaN()
	rows := []blockRow{
		{"SI", SI, [3]float64{0.847893704088, 0.12168503673, 0.0304212591824}, [3]float64{559.609844698, 39.0522711602, 9.76306779006}},
		{"WI", WI, [3]float64{0.964035111488, 0, 0.0359648885117}, [3]float64{683.923876432, 0, 13.3477262458}},
		{"I = WI³", I, [3]float64{0.895939234462, 0, 0.104060765538}, [3]float64{1906.84206512, 0, 110.642758686}},
		{"C = W1²", C, [3]float64{0.932656250892, 0, 0.0673437491075}, [3]float64{1259.53605291, 0, 46.0952395452}},
		{"PR = W1⁵", PR, [3]float64{0.840047828097, nan, 0.159952171903}, [3]float64{2836.17496973, nan, 264.90811075}},
	}
	for _, r := range rows {
		checkBlock(t, r)
	}
	// §5.4 by hand from these blocks:
	// E_R = (PR.a0 + PR.a2 + PR.p2·D2)/PR.p0,
	// E_N = [I.a0 + I.a2 + I.p2(D2 + E_R) + I.p0(C.a0 + C.a2 + C.p2(D2 + E_R))]/I.p0.
	D2 := math.Expm1(exTotal*500) / exTotal
	ER := (PR.a[0] + PR.a[2] + PR.p[2]*D2) / PR.p[0]
	EN := (I.a[0] + I.a[2] + I.p[2]*(D2+ER) + I.p[0]*(C.a[0]+C.a[2]+C.p[2]*(D2+ER))) / I.p[0]
	checkRel(t, "E_R", ER, 3792.96572281, 1e-9)
	checkRel(t, "E_N", EN, 4351.14187328, 1e-9)
	checkRel(t, "efficiency (non-blocking)", 3000/EN, 0.689474185712, 1e-9)
}

// seg by the formulas of §2, evaluated independently: p[i] = (λi/λ)(1 − e^{−λT}),
// a[i] = p[i]·t_i with Sato's t_i = (1 − (λT+1)e^{−λT})/(λ(1 − e^{−λT})).
func TestSegFormulas(t *testing.T) {
	rates := []float64{1e-3, 3e-4, 7e-5}
	total := 1e-3 + 3e-4 + 7e-5
	for _, T := range []float64{50, 630, 5000, 1e5} {
		b := seg(T, rates, total)
		x := total * T
		checkRel(t, "p0", b.p[0], math.Exp(-x), 1e-14)
		checkRel(t, "a0", b.a[0], T*math.Exp(-x), 1e-14)
		ti := (1 - (x+1)*math.Exp(-x)) / (total * (1 - math.Exp(-x)))
		for i, r := range rates {
			pi := r / total * (1 - math.Exp(-x))
			checkRel(t, "p_i", b.p[i+1], pi, 1e-13)
			checkRel(t, "a_i", b.a[i+1], pi*ti, 1e-12)
		}
	}
	// λ = 0: completes surely in T.
	b := seg(123, []float64{0, 0}, 0)
	if b.p[0] != 1 || b.a[0] != 123 || b.p[1] != 0 || b.p[2] != 0 || b.a[1] != 0 || b.a[2] != 0 {
		t.Errorf("seg with λ = 0: %+v, want p = [1 0 0], a = [123 0 0]", b)
	}
	// A level of rate 0 next to others gets no exits.
	b = seg(100, []float64{1e-3, 0}, 1e-3)
	if b.p[2] != 0 || b.a[2] != 0 {
		t.Errorf("seg with λ2 = 0: p2 = %g, a2 = %g", b.p[2], b.a[2])
	}
}

func TestSeqPowAlgebra(t *testing.T) {
	W := wrap(seg(630, exRates, exTotal), 1, 40, exRates, exTotal)
	S := seg(1030, exRates, exTotal)
	R := seg(40, exRates, exTotal)
	id := identity(2)
	same := func(name string, x, y block) {
		t.Helper()
		for e := range x.p {
			if relDiff(x.p[e], y.p[e]) > 1e-13 || relDiff(x.a[e], y.a[e]) > 1e-13 {
				t.Errorf("%s: exit %d: (%g, %g) vs (%g, %g)", name, e, x.p[e], x.a[e], y.p[e], y.a[e])
			}
		}
	}
	same("identity ; B", seq(id, S), S)
	same("B ; identity", seq(S, id), S)
	same("associativity", seq(seq(W, S), R), seq(W, seq(S, R)))
	same("B⁰", pow(S, 0), id)
	same("B¹", pow(S, 1), S)
	naive := id
	for n := 1; n <= 13; n++ {
		naive = seq(naive, W)
		same("binary pow vs repeated seq", pow(W, n), naive)
	}
	// Sequencing two fixed-length pieces is a fixed-length piece: seg(T1);seg(T2) = seg(T1+T2).
	same("seg(600);seg(430) = seg(1030)", seq(seg(600, exRates, exTotal), seg(430, exRates, exTotal)), S)
}

// 1 − e^{−x}(1 + x), the series branch (x < 0.01) and the direct branch,
// against a 256-bit evaluation.
func TestOneMinusExpTerm(t *testing.T) {
	ref := func(x float64) float64 {
		const prec = 256
		bx := new(big.Float).SetPrec(prec).SetFloat64(x)
		// e^x by its Taylor series (all terms positive), then e^{−x} = 1/e^x.
		sum := new(big.Float).SetPrec(prec).SetInt64(1)
		term := new(big.Float).SetPrec(prec).SetInt64(1)
		for k := 1; k < 400; k++ {
			term.Mul(term, bx)
			term.Quo(term, new(big.Float).SetPrec(prec).SetInt64(int64(k)))
			sum.Add(sum, term)
		}
		emx := new(big.Float).SetPrec(prec).Quo(big.NewFloat(1).SetPrec(prec), sum)
		onePlusX := new(big.Float).SetPrec(prec).Add(big.NewFloat(1).SetPrec(prec), bx)
		prod := new(big.Float).SetPrec(prec).Mul(emx, onePlusX)
		res := new(big.Float).SetPrec(prec).Sub(big.NewFloat(1).SetPrec(prec), prod)
		f, _ := res.Float64()
		return f
	}
	// At x = 1e-8 the value is x²/2 − x³/3 + … = 5e-17 − 3.3e-25: by hand and by big.Float.
	checkRel(t, "series at 1e-8 vs x²/2 − x³/3", oneMinusExpTerm(1e-8), 5e-17-1e-24/3, 1e-15)
	for _, x := range []float64{1e-300, 1e-12, 1e-8, 1e-5, 1e-3, 0.005, 0.0099999, 0.01, 0.0100001, 0.05, 0.5, 1, 5, 30} {
		tol := 1e-14
		if x >= 0.01 && x < 0.1 {
			tol = 1e-11 // the direct branch cancels ~ log10(2/x²) digits
		}
		checkRel(t, "oneMinusExpTerm", oneMinusExpTerm(x), ref(x), tol)
	}
	// The naive form loses everything at 1e-8 (that is why the series exists).
	if naive := 1 - math.Exp(-1e-8)*(1+1e-8); relDiff(naive, ref(1e-8)) < 1e-3 {
		t.Errorf("naive form at 1e-8 = %g unexpectedly accurate", naive)
	}
	// Continuity at the branch point: series just below, direct at 0.01.
	below := math.Nextafter(0.01, 0)
	direct := -math.Expm1(-below) - below*math.Exp(-below)
	checkRel(t, "series vs direct just below 0.01", oneMinusExpTerm(below), direct, 1e-11)
	checkRel(t, "series(0.01−) vs direct(0.01)", oneMinusExpTerm(below), oneMinusExpTerm(0.01), 1e-11)
	if oneMinusExpTerm(0) != 0 {
		t.Errorf("oneMinusExpTerm(0) = %g", oneMinusExpTerm(0))
	}
}

// wrap(·, k) removes exits 1..k; wrap(·, L) always completes.
func TestWrapExits(t *testing.T) {
	rates := []float64{1e-4, 5e-5, 1e-5}
	total := 1.6e-4
	B := seq(seg(2000, rates, total), seg(500, rates, total))
	for k := 1; k <= 3; k++ {
		w := wrap(B, k, 100*float64(k), rates, total)
		sum := 0.0
		for e := range w.p {
			sum += w.p[e]
			if e >= 1 && e <= k && (w.p[e] != 0 || w.a[e] != 0) {
				t.Errorf("wrap(·, %d): exit %d has p = %g, a = %g", k, e, w.p[e], w.a[e])
			}
		}
		if math.Abs(sum-1) > 1e-14 {
			t.Errorf("wrap(·, %d): Σp = %.17g", k, sum)
		}
		// Protection never raises the chance of leaving through the exits it keeps
		// only by escalation: it takes longer than B's own completion time.
		if !(w.a[0]/w.p[0] > B.a[0]/B.p[0]) {
			t.Errorf("wrap(·, %d): conditional completion time %g not above B's %g", k, w.a[0]/w.p[0], B.a[0]/B.p[0])
		}
	}
	// Single level, by hand (§4.5): wrap(seg(T), 1) with L = 1 has
	// a[0] = e^{λr}(e^{λT} − 1)/λ.
	lam := 1e-4
	w := wrap(seg(1060, []float64{lam}, lam), 1, 120, []float64{lam}, lam)
	checkRel(t, "single-level wrap", w.a[0], math.Exp(lam*120)*math.Expm1(lam*1060)/lam, 1e-13)
}
