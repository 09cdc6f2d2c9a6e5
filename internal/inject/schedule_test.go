package inject

import (
	"math"
	"reflect"
	"testing"
	"time"
)

func mustSchedule(t *testing.T, c Config) *Schedule {
	t.Helper()
	s, err := NewSchedule(c)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func events(s *Schedule, n int, live func(i int) int) []Event {
	out := make([]Event, n)
	for i := range out {
		out[i] = s.Next(live(i))
	}
	return out
}

func TestReproducible(t *testing.T) {
	c := Config{MTTI: time.Minute, Dist: Dist{Family: Weibull, Shape: 0.7}, Kind: Node, Seed: 42}
	live := func(i int) int { return 1 + i%13 }
	a := events(mustSchedule(t, c), 1000, live)
	b := events(mustSchedule(t, c), 1000, live)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two schedules with the same seed differ")
	}
	c.Seed = 43
	if d := events(mustSchedule(t, c), 1000, live); reflect.DeepEqual(a, d) {
		t.Fatal("seeds 42 and 43 give the same schedule")
	}
	// The times do not depend on the live counts.
	c.Seed = 42
	other := events(mustSchedule(t, c), 1000, func(int) int { return 100_000 })
	for i := range a {
		if a[i].At != other[i].At || a[i].Seq != int64(i) {
			t.Fatalf("event %d: at %v with small live counts, %v with large ones (seq %d)", i, a[i].At, other[i].At, a[i].Seq)
		}
	}
	// Shape 1 is the exponential, draw for draw.
	e := events(mustSchedule(t, Config{MTTI: time.Minute, Seed: 42}), 1000, live)
	w := events(mustSchedule(t, Config{MTTI: time.Minute, Dist: Dist{Family: Weibull, Shape: 1}, Seed: 42}), 1000, live)
	if !reflect.DeepEqual(e, w) {
		t.Fatal("weibull:1 differs from exp")
	}
}

// TestGolden pins the first events of one seed, so that a change to the
// sampling (which would change every seeded experiment) is noticed.
func TestGolden(t *testing.T) {
	s := mustSchedule(t, Config{MTTI: time.Minute, Seed: 1})
	got := events(s, 4, func(int) int { return 10 })
	want := []Event{
		{0, 3*time.Minute + 57913495005, 4},
		{1, 3*time.Minute + 59470810502, 0},
		{2, 4*time.Minute + 1175975679, 0},
		{3, 4*time.Minute + 2628546034, 7},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("seed 1: %v, want %v", got, want)
	}
}

// moments are the sample mean, the sample standard deviation, and the
// standard deviation of the logarithm of inter-arrival times.
func moments(t *testing.T, c Config, n int) (mean, sd, logSD float64) {
	t.Helper()
	s := mustSchedule(t, c)
	var sum, sum2, lsum, lsum2 float64
	prev := time.Duration(0)
	for range n {
		e := s.Next(1)
		x := (e.At - prev).Seconds() / c.MTTI.Seconds() // in units of the MTTI
		prev = e.At
		sum += x
		sum2 += x * x
		l := math.Log(x)
		lsum += l
		lsum2 += l * l
	}
	fn := float64(n)
	mean = sum / fn
	sd = math.Sqrt((sum2 - fn*mean*mean) / (fn - 1))
	lm := lsum / fn
	logSD = math.Sqrt((lsum2 - fn*lm*lm) / (fn - 1))
	return mean, sd, logSD
}

// weibullMoments returns the central moments 2 to 4 of a Weibull of shape k
// and mean 1, from its raw moments E[X^r] = λ^r Γ(1 + r/k).
func weibullMoments(k float64) (m2, m3, m4 float64) {
	lam := 1 / math.Gamma(1+1/k)
	raw := func(r float64) float64 { return math.Pow(lam, r) * math.Gamma(1+r/k) }
	r2, r3, r4 := raw(2), raw(3), raw(4)
	m2 = r2 - 1
	m3 = r3 - 3*r2 + 2
	m4 = r4 - 4*r3 + 6*r2 - 3
	return m2, m3, m4
}

func TestInterArrivalStatistics(t *testing.T) {
	const n = 200_000
	const z = 5 // tolerance in standard errors; a false alarm has odds below 1e-6
	for _, c := range []struct {
		dist  Dist
		shape float64 // as a Weibull
	}{
		{Dist{Family: Exponential}, 1},
		{Dist{Family: Weibull, Shape: 0.7}, 0.7},
		{Dist{Family: Weibull, Shape: 1.5}, 1.5},
	} {
		cfg := Config{MTTI: 90 * time.Second, Dist: c.dist, Seed: 2024}
		mean, sd, logSD := moments(t, cfg, n)
		m2, m3, m4 := weibullMoments(c.shape)
		cv := c.dist.CV()
		if math.Abs(cv*cv-m2) > 1e-9 {
			t.Fatalf("%v: CV() = %g, but the raw moments give %g", c.dist, cv, math.Sqrt(m2))
		}

		// Mean: standard error σ/√n.
		if se := math.Sqrt(m2 / n); math.Abs(mean-1) > z*se {
			t.Errorf("%v: mean %.4f MTTI, want 1 ± %.4f", c.dist, mean, z*se)
		}

		// CV = s/m̄: delta-method standard error from the moments,
		// Var ≈ (c⁴ + (μ4 − σ⁴)/(4σ²) − c·μ3/σ)/n with mean 1.
		sigma := math.Sqrt(m2)
		varCV := (cv*cv*cv*cv + (m4-m2*m2)/(4*m2) - cv*m3/sigma) / n
		if got := sd / mean; math.Abs(got-cv) > z*math.Sqrt(varCV) {
			t.Errorf("%v: CV %.4f, want %.4f ± %.4f", c.dist, got, cv, z*math.Sqrt(varCV))
		}

		// Shape: ln X = ln λ + (1/k) ln E has variance π²/(6k²); ln E is
		// Gumbel, of excess kurtosis 12/5, so the sample variance has a
		// relative standard error √(4.4/n), and k̂ half that.
		kHat := math.Pi / (math.Sqrt(6) * logSD)
		if se := 0.5 * math.Sqrt(4.4/n) * c.shape; math.Abs(kHat-c.shape) > z*se {
			t.Errorf("%v: shape estimated as %.4f, want %.4f ± %.4f", c.dist, kHat, c.shape, z*se)
		}
	}
}

func TestTheoreticalCV(t *testing.T) {
	for _, c := range []struct {
		d    Dist
		want float64
	}{
		{Dist{}, 1},
		{Dist{Family: Weibull, Shape: 1}, 1},
		{Dist{Family: Weibull, Shape: 0.7}, 1.4624},
		{Dist{Family: Weibull, Shape: 1.5}, 0.6790},
		{Dist{Family: Weibull, Shape: 0.5}, math.Sqrt(5)},
	} {
		if got := c.d.CV(); math.Abs(got-c.want) > 1e-4 {
			t.Errorf("%v: CV %.5f, want %.5f", c.d, got, c.want)
		}
	}
	// The Weibull scale keeps the mean at the MTTI: λΓ(1 + 1/k) = M.
	for _, k := range []float64{0.3, 0.7, 1, 1.5, 4} {
		d := Dist{Family: Weibull, Shape: k}
		if got := d.Scale(60) * math.Gamma(1+1/k); math.Abs(got-60) > 1e-9 {
			t.Errorf("shape %g: scale × Γ(1+1/k) = %g, want 60", k, got)
		}
	}
}

func TestTargetsUniform(t *testing.T) {
	const live, n = 7, 70_000
	s := mustSchedule(t, Config{MTTI: time.Second, Seed: 9})
	var counts [live]int
	for range n {
		e := s.Next(live)
		if e.Target < 0 || e.Target >= live {
			t.Fatalf("target %d out of [0, %d)", e.Target, live)
		}
		counts[e.Target]++
	}
	// χ² with 6 degrees of freedom: mean 6, and P(χ² > 40) ≈ 5e-7.
	exp := float64(n) / live
	chi2 := 0.0
	for _, c := range counts {
		chi2 += (float64(c) - exp) * (float64(c) - exp) / exp
	}
	if chi2 > 40 {
		t.Errorf("χ² = %.1f for counts %v", chi2, counts)
	}
	for _, l := range []int{1, 0, -3} {
		want := 0
		if l <= 0 {
			want = -1
		}
		if e := s.Next(l); e.Target != want {
			t.Errorf("live %d: target %d, want %d", l, e.Target, want)
		}
	}
	// A count that is not a power of two and near 2⁶³ stays in range.
	for range 100 {
		if e := s.Next(math.MaxInt64 - 5); e.Target < 0 {
			t.Fatalf("target %d", e.Target)
		}
	}
}

func TestUniformReference(t *testing.T) {
	// Lemire's method against the slow definition: for a 64-bit x the
	// result is ⌊x·n / 2⁶⁴⌋, except that the few x in the rejection zone
	// draw again; check that no value is out of range and the zone is tiny.
	s := mustSchedule(t, Config{MTTI: time.Second, Seed: 5})
	for _, n := range []uint64{1, 2, 3, 10, 1<<32 + 1, 1 << 63, math.MaxUint64} {
		for range 1000 {
			if v := uniform(s.targets, n); v >= n {
				t.Fatalf("uniform(%d) = %d", n, v)
			}
		}
	}
}

func TestSaturates(t *testing.T) {
	s := mustSchedule(t, Config{MTTI: math.MaxInt64 / 4, Dist: Dist{Family: Weibull, Shape: 0.2}, Seed: 1})
	prev := time.Duration(0)
	for range 200 {
		e := s.Next(3)
		if e.At < prev {
			t.Fatalf("time went back: %v after %v", e.At, prev)
		}
		prev = e.At
	}
	if prev != math.MaxInt64 {
		t.Errorf("job time after 200 huge draws: %v, want saturated", prev)
	}
}

func TestDelay(t *testing.T) {
	e := Event{At: 10 * time.Second}
	for _, c := range []struct{ base, want time.Duration }{
		{0, 10 * time.Second},
		{4 * time.Second, 6 * time.Second},
		{10 * time.Second, 0},
		{12 * time.Second, 0},
	} {
		if got := e.Delay(c.base); got != c.want {
			t.Errorf("Delay(%v) = %v, want %v", c.base, got, c.want)
		}
	}
}
