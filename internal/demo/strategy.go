package demo

import (
	"math"

	"github.com/ckpt/ckpt/internal/jobenv"
	"github.com/ckpt/ckpt/internal/policy"
	"github.com/ckpt/ckpt/model"
)

// Fialho is Fialho, Rexachs and Luque 2011's model of one run under the
// uncoordinated strategy (pessimistic receiver-based message logging):
// eq. 10's inputs as the run measured them, the interval the ranks
// used, and the efficiency eq. 10 predicts from them.
type Fialho struct {
	// Cost is t_c, a rank's mean checkpoint time; Load is t_l, the mean
	// time a rank recovering alone took to load its checkpoint (0 without
	// one); Detect is t_d (0: the launcher sees a killed process at
	// once, as policy.Own assumes).
	Cost, Load, Detect float64
	// LogProtect is Δ_lp, a rank's logging time per MTTI window: its
	// share of the run's logging time over the windows the run spans;
	// LogReplay is Δ_lr, the log replay per recovery.
	LogProtect, LogReplay float64
	// Phi is the dependency factor measured from who waited on whom
	// (eq. 12).
	Phi float64
	// MTTI is α; Interval is σ, the compute time between a rank's
	// checkpoints as its policy sets it (Interval: under auto:MTTI eq. 11
	// at φ = 1, the rule the ranks follow, policy.Own).
	MTTI, Interval float64
	// Overhead is eq. 10's overhead per MTTI window; Efficiency the
	// useful share of the window, (α − Overhead)/α (model.FialhoRuntime's
	// form of eq. 5, for eq. 10).
	Overhead, Efficiency float64
}

// FialhoEfficiency is (α − O)/α for O, 003 eq. 10's overhead per MTTI
// window α at interval σ:
//
//	O = [φσ² + σ(2φt_d + 2φt_l + φt_c + 2φΔ_lr − t_c + 2Δ_lp)
//	     + 2t_c(φt_d + φt_l + φΔ_lr + α − t_d − t_l − Δ_lr + Δ_lp)] / (2σ + 2t_c)
//
// (model.FialhoParallelOverhead); 0 when the overhead fills the window,
// NaN when an input is missing.
func FialhoEfficiency(sigma float64, in model.IntervalInput) (overhead, efficiency float64) {
	if !(sigma > 0) || !(in.Cost > 0) || !(in.MTTI > 0) || model.ValidatePhi(in.Phi) != nil {
		return math.NaN(), math.NaN()
	}
	o := model.FialhoParallelOverhead(sigma, in)
	if o >= in.MTTI {
		return o, 0
	}
	return o, (in.MTTI - o) / in.MTTI
}

// CompareFialho feeds eq. 10 with what an uncoordinated run of ranks
// ranks measured over runSecs seconds at MTTI mtti: the ranks' summed
// statistics (jobenv.MsgLogStats), the lone recoveries they made, and
// the dependency factor phi the launcher measured. The interval is the
// one the ranks' policy p left them (Interval): where it is not known,
// or eq. 11 has no optimum, it is NaN and so is the efficiency.
func CompareFialho(st jobenv.MsgLogStats, ranks, recoveries int, phi, runSecs, mtti float64, p policy.Policy) Fialho {
	f := Fialho{Phi: phi, MTTI: mtti, Cost: math.NaN(), LogProtect: math.NaN(), Interval: math.NaN(),
		Overhead: math.NaN(), Efficiency: math.NaN()}
	if st.Checkpoints > 0 {
		f.Cost = st.CheckpointTime.Seconds() / float64(st.Checkpoints)
	}
	if st.Loads > 0 {
		f.Load = st.LoadTime.Seconds() / float64(st.Loads)
	}
	if recoveries > 0 {
		f.LogReplay = st.Replay.Seconds() / float64(recoveries)
	}
	if ranks > 0 && runSecs > 0 && mtti > 0 {
		// eq. 8's Δ_lp is per window between faults: a rank's logging
		// over the run, over the run's windows.
		f.LogProtect = st.Protect.Seconds() / float64(ranks) * mtti / runSecs
	}
	in := model.IntervalInput{Cost: f.Cost, MTTI: mtti, Restart: f.Load, Detect: f.Detect, Phi: 1, LogReplay: f.LogReplay}
	f.Interval = Interval(p, in)
	in.Phi, in.LogProtect = phi, f.LogProtect
	f.Overhead, f.Efficiency = FialhoEfficiency(f.Interval, in)
	return f
}

// Interval is σ, the compute time a rank's own policy (policy.Own) leaves
// between its checkpoints under p, for eq. 10: at Auto with an MTTI, eq.
// 11 at φ = 1 from in's t_c, t_l and Δ_lr and the policy's MTTI (which
// may differ from the failures' α); at Time, the period. NaN where p does
// not fix it: Steps (a time only the steps' length gives), Auto without
// an MTTI (each rank estimates its own as it runs), None; and where eq.
// 11 has no optimum.
func Interval(p policy.Policy, in model.IntervalInput) float64 {
	switch p.Kind {
	case policy.Time:
		return p.Period.Seconds()
	case policy.Auto:
		if p.MTTI <= 0 {
			return math.NaN()
		}
		in.MTTI, in.Phi = p.MTTI.Seconds(), 1
		if s, err := model.FialhoParallelInterval(in); err == nil {
			return s
		}
	}
	return math.NaN()
}
