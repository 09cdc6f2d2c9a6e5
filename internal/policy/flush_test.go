package policy

import (
	"errors"
	"testing"
	"time"

	"github.com/ckpt/ckpt/model"
)

func TestParseFlushEvery(t *testing.T) {
	for _, c := range []struct {
		in   string
		want FlushEvery
	}{
		{"1", FlushEvery{K: 1}},
		{"12", FlushEvery{K: 12}},
		{"auto:24h", FlushEvery{Auto: true, Level2MTTI: 24 * time.Hour}},
		{"auto:90s", FlushEvery{Auto: true, Level2MTTI: 90 * time.Second}},
	} {
		got, err := ParseFlushEvery(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseFlushEvery(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
		if back, err := ParseFlushEvery(got.String()); err != nil || back != got {
			t.Errorf("%q: String %q parses to %+v, %v", c.in, got.String(), back, err)
		}
	}
	for _, bad := range []string{"", "0", "-3", "x", "auto", "auto:", "auto:-1h", "auto:zz", "1.5"} {
		if _, err := ParseFlushEvery(bad); err == nil {
			t.Errorf("ParseFlushEvery(%q) accepted", bad)
		}
	}
}

// efficiencyAt is the model ChooseK maximises, evaluated directly.
func efficiencyAt(in FlushInputs, v int) (float64, error) {
	t, c1, f := in.Interval.Seconds(), in.Level1Cost.Seconds(), in.FlushCost.Seconds()
	lv := model.Levels{Rates: []float64{1 / in.Level1MTTI.Seconds(), 1 / in.Level2MTTI.Seconds()}}
	s := model.Schedule{Interval: t, Counts: []int{v}}
	if in.NonBlocking {
		lv.Cost, lv.Restart = []float64{c1, c1}, []float64{c1, c1 + f}
		r, err := model.NonBlocking{Levels: lv, FlushLatency: f, Alpha: in.Alpha}.Evaluate(s)
		return r.Efficiency, err
	}
	lv.Cost, lv.Restart = []float64{c1, c1 + f}, []float64{c1, c1 + f}
	r, err := model.Blocking(lv, s, model.BlockingOptions{})
	return r.Efficiency, err
}

// ChooseK's K is the best of every K up to MaxFlushEvery, checked
// exhaustively, across blocking and non-blocking settings.
func TestChooseKIsBest(t *testing.T) {
	for _, in := range []FlushInputs{
		{Interval: time.Second, Level1Cost: 50 * time.Millisecond, Level1MTTI: 3 * time.Second, Level2MTTI: time.Minute, FlushCost: 400 * time.Millisecond},
		{Interval: time.Second, Level1Cost: 50 * time.Millisecond, Level1MTTI: 3 * time.Second, Level2MTTI: time.Minute, FlushCost: 400 * time.Millisecond, NonBlocking: true, Alpha: 0.05},
		{Interval: 10 * time.Minute, Level1Cost: 20 * time.Second, Level1MTTI: 6 * time.Hour, Level2MTTI: 10 * 24 * time.Hour, FlushCost: 30 * time.Minute},
		{Interval: 10 * time.Minute, Level1Cost: 20 * time.Second, Level1MTTI: 6 * time.Hour, Level2MTTI: 10 * 24 * time.Hour, FlushCost: 30 * time.Minute, NonBlocking: true, Alpha: 0.002},
		{Interval: time.Minute, Level1Cost: time.Second, Level1MTTI: time.Hour, Level2MTTI: time.Hour, FlushCost: 5 * time.Second},
	} {
		k, err := ChooseK(in)
		if err != nil {
			t.Fatalf("%+v: %v", in, err)
		}
		got, err := efficiencyAt(in, k-1)
		if err != nil {
			t.Fatalf("%+v: K=%d: %v", in, k, err)
		}
		for v := 0; v < MaxFlushEvery; v++ {
			e, err := efficiencyAt(in, v)
			if errors.Is(err, model.ErrInfeasible) {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			if e > got+1e-12 {
				t.Errorf("%+v: ChooseK = %d (efficiency %.6f), but K = %d gives %.6f", in, k, got, v+1, e)
				break
			}
		}
	}
}

// K follows the costs: a dearer flush or rarer shared-tier failures flush
// less often; nothing measured yet flushes at once.
func TestChooseKResponds(t *testing.T) {
	base := FlushInputs{Interval: time.Second, Level1Cost: 50 * time.Millisecond, Level1MTTI: 3 * time.Second, Level2MTTI: time.Minute, FlushCost: 200 * time.Millisecond}
	k := func(in FlushInputs) int {
		t.Helper()
		k, err := ChooseK(in)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	k0 := k(base)
	dear := base
	dear.FlushCost = 2 * time.Second
	rare := base
	rare.Level2MTTI = time.Hour
	if k(dear) <= k0 || k(rare) <= k0 {
		t.Errorf("K = %d; dearer flush %d, rarer failures %d: both should be larger", k0, k(dear), k(rare))
	}
	none := base
	none.FlushCost = 0
	if k(none) != 1 {
		t.Errorf("nothing measured: K = %d, want 1", k(none))
	}
	bad := base
	bad.Level2MTTI = 0
	if _, err := ChooseK(bad); err == nil {
		t.Error("no level-2 MTTI accepted")
	}
}
