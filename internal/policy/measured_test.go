package policy

import (
	"math"
	"reflect"
	"testing"

	"github.com/ckpt/ckpt/model"
)

// The assumptions of Measured, one by one.
func TestMeasuredLevels(t *testing.T) {
	nan := math.NaN()
	for _, c := range []struct {
		name string
		m    Measured
		want model.Levels
	}{
		{"blocking, no restart measured: recoveries cost the writes",
			Measured{Level1Cost: 2, FlushCost: 10, Restart: nan, Level1MTTI: 100, Level2MTTI: 1000},
			model.Levels{Rates: []float64{0.01, 0.001}, Cost: []float64{2, 12}, Restart: []float64{2, 12}}},
		{"non-blocking: level 2 blocks as level 1 does",
			Measured{Level1Cost: 2, FlushCost: 10, NonBlocking: true, Restart: nan, Level1MTTI: 100, Level2MTTI: 1000},
			model.Levels{Rates: []float64{0.01, 0.001}, Cost: []float64{2, 2}, Restart: []float64{2, 12}}},
		{"restart measured, no level-2 failures",
			Measured{Level1Cost: 2, FlushCost: 10, Restart: 5, Level1MTTI: 100},
			model.Levels{Rates: []float64{0.01, 0}, Cost: []float64{2, 12}, Restart: []float64{5, 5}}},
		{"a cost below 1 µs",
			Measured{Level1Cost: 0, FlushCost: 1, Restart: nan, Level1MTTI: 100, Level2MTTI: 1000},
			model.Levels{Rates: []float64{0.01, 0.001}, Cost: []float64{1e-6, 1 + 1e-6}, Restart: []float64{1e-6, 1 + 1e-6}}},
	} {
		if got := c.m.Levels(); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
	for _, a := range []struct{ in, want float64 }{{0.05, 0.05}, {-0.01, 0}, {nan, 0}} {
		if got := (Measured{Alpha: a.in}).ModelAlpha(); got != a.want {
			t.Errorf("α %g: the model takes %g, want %g", a.in, got, a.want)
		}
	}
}

func TestMeasuredDaly(t *testing.T) {
	tau, eff := Measured{Level1Cost: 300, Level1MTTI: 6 * 3600, Restart: nan()}.Daly()
	want := model.Daly(300, 6*3600)
	_, weff := model.DalyRuntime(model.RuntimeInput{Work: 1, Interval: want, Cost: 300, MTTI: 6 * 3600})
	if tau != want || eff != weff {
		t.Errorf("Daly() = %g, %g; want %g, %g", tau, eff, want, weff)
	}
	if tau, eff := (Measured{Level1MTTI: 10}).Daly(); !math.IsNaN(tau) || !math.IsNaN(eff) {
		t.Errorf("no cost: %g, %g", tau, eff)
	}
}

func nan() float64 { return math.NaN() }
