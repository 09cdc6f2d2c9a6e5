package demo

import (
	"math"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/jobenv"
	"github.com/ckpt/ckpt/internal/policy"
	"github.com/ckpt/ckpt/model"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Max(1, math.Abs(b)) }

// Fialho et al. 2011 eq. 10 by hand: φ = 0.5, σ = 10, t_c = 1, t_d = 0,
// t_l = 1, Δ_lr = 0, Δ_lp = 2, α = 100. The numerator is
// 0.5·100 + 10(1 + 0.5 − 1 + 4) + 2(0.5 + 100 − 1 + 2) = 298, over 22.
// The same from eq. 9: T_r = 1 + 5 = 6 (eq. 7), Q = 94/11 (eq. 4),
// T_c = 94/11 + 2 (eq. 8), O = 0.5·6 + T_c.
func TestFialhoEfficiencyByHand(t *testing.T) {
	in := model.IntervalInput{Cost: 1, MTTI: 100, Restart: 1, Phi: 0.5, LogProtect: 2}
	o, eff := FialhoEfficiency(10, in)
	if !near(o, 298.0/22) || !near(o, 0.5*6+94.0/11+2) {
		t.Errorf("overhead %v, want 298/22 = %v", o, 298.0/22)
	}
	if !near(eff, (100-298.0/22)/100) {
		t.Errorf("efficiency %v, want %v", eff, (100-298.0/22)/100)
	}
	// φ = 1 without logging is the serial model, eq. 5.
	in = model.IntervalInput{Cost: 2, MTTI: 50, Restart: 3, Detect: 0.5, Phi: 1}
	if o, _ := FialhoEfficiency(7, in); !near(o, model.FialhoOverhead(7, in)) {
		t.Errorf("φ = 1: overhead %v, eq. 5 gives %v", o, model.FialhoOverhead(7, in))
	}
	// An overhead that fills the window leaves nothing.
	if _, eff := FialhoEfficiency(100, model.IntervalInput{Cost: 50, MTTI: 10, Phi: 1}); eff != 0 {
		t.Errorf("overhead beyond the window: efficiency %v, want 0", eff)
	}
	for name, in := range map[string]model.IntervalInput{
		"no cost": {MTTI: 10, Phi: 1}, "no mtti": {Cost: 1, Phi: 1}, "phi 0": {Cost: 1, MTTI: 10},
	} {
		if _, eff := FialhoEfficiency(1, in); !math.IsNaN(eff) {
			t.Errorf("%s: efficiency %v, want NaN", name, eff)
		}
	}
}

// CompareFialho's inputs from a run's statistics, by hand: 10 checkpoints
// in 5 s (t_c = 0.5), 2 loads in 1 s (t_l = 0.5), 1 s of replay over 2
// recoveries (Δ_lr = 0.5), 6 s of logging over 6 ranks in a 50 s run at
// α = 10 (1 s a rank, over 5 windows: Δ_lp = 0.2); σ is eq. 11 at φ = 1,
// √(0.5(0.5 + 20 − 1 − 1)) − 0.5.
func TestCompareFialho(t *testing.T) {
	st := jobenv.MsgLogStats{Protect: 6 * time.Second, Replay: time.Second, Checkpoints: 10, CheckpointTime: 5 * time.Second,
		Loads: 2, LoadTime: time.Second}
	f := CompareFialho(st, 6, 2, 0.5, 50, 10, policy.Policy{Kind: policy.Auto, MTTI: 10 * time.Second})
	want := Fialho{Cost: 0.5, Load: 0.5, LogReplay: 0.5, LogProtect: 0.2, Phi: 0.5, MTTI: 10, Interval: math.Sqrt(9.25) - 0.5}
	for _, q := range []struct {
		name      string
		got, want float64
	}{{"t_c", f.Cost, want.Cost}, {"t_l", f.Load, want.Load}, {"Δ_lr", f.LogReplay, want.LogReplay},
		{"Δ_lp", f.LogProtect, want.LogProtect}, {"σ", f.Interval, want.Interval}, {"t_d", f.Detect, 0}} {
		if !near(q.got, q.want) {
			t.Errorf("%s = %v, want %v", q.name, q.got, q.want)
		}
	}
	o, eff := FialhoEfficiency(want.Interval, model.IntervalInput{Cost: 0.5, MTTI: 10, Restart: 0.5, Phi: 0.5, LogProtect: 0.2, LogReplay: 0.5})
	if !near(f.Overhead, o) || !near(f.Efficiency, eff) || !(eff > 0 && eff < 1) {
		t.Errorf("overhead %v, efficiency %v; want %v, %v", f.Overhead, f.Efficiency, o, eff)
	}
	// No checkpoint measured: no t_c, no model.
	if f := CompareFialho(jobenv.MsgLogStats{}, 6, 0, 0.5, 50, 10, policy.Policy{Kind: policy.Auto, MTTI: 10 * time.Second}); !math.IsNaN(f.Efficiency) || !math.IsNaN(f.Cost) {
		t.Errorf("nothing measured: %+v", f)
	}
}

// eq. 10 is evaluated at the interval the ranks' policy gave them, not
// at eq. 11 whatever the policy: a period is σ itself; auto:MTTI is eq.
// 11 at φ = 1 at the policy's MTTI, not the failures' α; steps, or auto
// without an MTTI (each rank estimates its own), leave σ unknown and the
// model NaN rather than wrong.
func TestCompareFialhoInterval(t *testing.T) {
	st := jobenv.MsgLogStats{Protect: 6 * time.Second, Replay: time.Second, Checkpoints: 10, CheckpointTime: 5 * time.Second,
		Loads: 2, LoadTime: time.Second}
	in := model.IntervalInput{Cost: 0.5, MTTI: 10, Restart: 0.5, Phi: 0.5, LogProtect: 0.2, LogReplay: 0.5}
	f := CompareFialho(st, 6, 2, 0.5, 50, 10, policy.Policy{Kind: policy.Time, Period: 3 * time.Second})
	if _, eff := FialhoEfficiency(3, in); f.Interval != 3 || !near(f.Efficiency, eff) {
		t.Errorf("time:3s: σ %v, efficiency %v; want 3, %v", f.Interval, f.Efficiency, eff)
	}
	f = CompareFialho(st, 6, 2, 0.5, 50, 10, policy.Policy{Kind: policy.Auto, MTTI: 40 * time.Second})
	if want := math.Sqrt(0.5*(0.5+80-1-1)) - 0.5; !near(f.Interval, want) {
		t.Errorf("auto:40s at α = 10: σ %v, want eq. 11 at the policy's MTTI, %v", f.Interval, want)
	}
	for name, p := range map[string]policy.Policy{"steps": {Kind: policy.Steps, Steps: 10}, "auto": {Kind: policy.Auto}, "none": {}} {
		if f := CompareFialho(st, 6, 2, 0.5, 50, 10, p); !math.IsNaN(f.Interval) || !math.IsNaN(f.Efficiency) {
			t.Errorf("%s: σ %v, efficiency %v; want NaN (σ unknown)", name, f.Interval, f.Efficiency)
		}
	}
}
