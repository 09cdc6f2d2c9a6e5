package bench

import (
	"context"
	"math"
	"testing"
)

func TestFitSlope(t *testing.T) {
	// Points on α = 0.5·x fit exactly; noise symmetric about the line
	// cancels; without a non-zero x there is no slope.
	if c := FitSlope([]float64{0.1, 0.2, 0.4}, []float64{0.05, 0.1, 0.2}); math.Abs(c-0.5) > 1e-12 {
		t.Errorf("exact points: c = %g, want 0.5", c)
	}
	if c := FitSlope([]float64{1, 1}, []float64{0.4, 0.6}); math.Abs(c-0.5) > 1e-12 {
		t.Errorf("symmetric noise: c = %g, want 0.5", c)
	}
	// Σxy/Σx²: (1·1 + 2·3) / (1 + 4) = 1.4.
	if c := FitSlope([]float64{1, 2}, []float64{1, 3}); math.Abs(c-1.4) > 1e-12 {
		t.Errorf("c = %g, want 1.4", c)
	}
	if c := FitSlope([]float64{0, 0}, []float64{1, 2}); !math.IsNaN(c) {
		t.Errorf("no x: c = %g, want NaN", c)
	}
}

// TestRunStageQuick runs every figure at tiny sizes: the checkpoints are
// staged and committed, every throughput is positive, the ratios are over
// the run's own best raw write, and α comes from the run's own pairs of
// times.
func TestRunStageQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("writes tens of MiB")
	}
	cfg := QuickStageConfig()
	cfg.Dir = t.TempDir()
	cfg.Progress = func(s string) { t.Log(s) }
	r, err := RunStage(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Writers) != len(cfg.Writers) || len(r.Servers) != len(cfg.Servers) || len(r.Alpha) != len(cfg.Rates) {
		t.Fatalf("points: %d writers, %d servers, %d rates", len(r.Writers), len(r.Servers), len(r.Alpha))
	}
	best := 0.0
	for i, p := range r.RawWriters {
		if p.N != cfg.Writers[i] || !(p.BytesPerSecond > 0) {
			t.Errorf("raw point %d: %+v", i, p)
		}
		best = max(best, p.BytesPerSecond)
	}
	if r.RawWrite != best {
		t.Errorf("RawWrite %g, the best raw point is %g", r.RawWrite, best)
	}
	for _, p := range append(append([]StagePoint(nil), r.Writers...), r.Servers...) {
		if !(p.BytesPerSecond > 0) || math.Abs(p.Ratio-p.BytesPerSecond/r.RawWrite) > 1e-12 {
			t.Errorf("point %+v: want a positive throughput over raw %g", p, r.RawWrite)
		}
	}
	if !(r.HimenoSeconds > 0) || r.HimenoIterations < 2 {
		t.Errorf("Himeno alone: %gs, %d iterations", r.HimenoSeconds, r.HimenoIterations)
	}
	for _, p := range r.Alpha {
		if !(p.Seconds > 0) || p.Measured < 0 || p.Baseline < r.HimenoSeconds || math.Abs(p.Alpha-(p.Seconds/p.Baseline-1)) > 1e-12 {
			t.Errorf("alpha point %+v (fastest alone %gs)", p, r.HimenoSeconds)
		}
	}
}
