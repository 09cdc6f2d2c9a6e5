package sim

import (
	"errors"
	"math"
	"testing"

	"github.com/ckpt/ckpt/model"
)

// Predict picks the model by the strategy and the number of levels, and
// an interval of 0 asks for the model's optimum.
func TestPredictChoosesTheModel(t *testing.T) {
	one := Config{Work: 1e6, Levels: model.Levels{Rates: []float64{1e-4}, Cost: []float64{60}, Restart: []float64{120}},
		Schedule: model.Schedule{Interval: 1000}}
	for _, c := range []struct {
		name, kind string
		cfg        Config
		optimized  bool
	}{
		{"one level", "single-level", one, false},
		{"worked example", "blocking", workedExample(), false},
		{"non-blocking", "nonblocking", nonBlockingExample(), false},
		{"uncoordinated", "uncoordinated", uncoordinatedExample(t), false},
		{"blocking optimum", "blocking", func() Config { c := workedExample(); c.Schedule = model.Schedule{}; return c }(), true},
	} {
		cfg, p, err := Predict(c.cfg, 0)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if p.Kind != c.kind || p.Optimized != c.optimized || !(p.Efficiency > 0 && p.Efficiency < 1) || p.Model == "" {
			t.Errorf("%s: %+v", c.name, p)
		}
		if err := cfg.Validate(); err != nil {
			t.Errorf("%s: the predicted configuration does not validate: %v", c.name, err)
		}
		if ev := EstimatedEvents(cfg, p.Efficiency); !(ev > 0) || math.IsInf(ev, 0) {
			t.Errorf("%s: %g events", c.name, ev)
		}
	}
	// One level, blocking Markov model = Daly's eq. 1 per period.
	_, p, _ := Predict(one, 0)
	res, _ := model.Blocking(one.Levels, one.Schedule, model.BlockingOptions{})
	if p.Efficiency != res.Efficiency {
		t.Errorf("single level: %g, the blocking model %g", p.Efficiency, res.Efficiency)
	}
	// Eq. 11 has no optimum when recovery outlasts the MTTI.
	u := uncoordinatedExample(t)
	u.Interval, u.Restart = 0, []float64{1e9}
	var ie *IntervalError
	if _, _, err := Predict(u, 0); !errors.As(err, &ie) || !errors.Is(err, model.ErrNoOptimum) {
		t.Errorf("no optimum: %v", err)
	}
	if ev := EstimatedEvents(one, 0); !math.IsInf(ev, 1) {
		t.Errorf("efficiency 0: %g events, want +Inf", ev)
	}
}
