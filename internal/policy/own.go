package policy

import (
	"time"

	"github.com/ckpt/ckpt/model"
)

// Own decides when one rank checkpoints under the uncoordinated strategy
// (docs/MESSAGE-LOGGING.md): alone, from its own measurements, without
// asking the coordinator or the other ranks. It is pure: the runtime
// gives it the step and the time.
//
//   - Steps: at every positive multiple of Steps, as the coordinated
//     policy (every rank alike, but nobody waits for anybody).
//   - Time: once Period has passed since the end of the rank's previous
//     checkpoint (or its start).
//   - Auto: once the interval of Fialho et al. 2011 eq. 11 has passed,
//     σ_opt = √(φ t_c (t_c + 2α − 2t_d − 2t_l − 2Δ_lr)) / φ − t_c, from
//     this rank's own measured checkpoint cost t_c (AssumedCost until the
//     first), its own load time t_l and log replay Δ_lr after a lone
//     recovery, t_d = 0 (the launcher sees a killed process at once), and
//     φ = 1: the dependency factor is not measured yet, and φ = 1 (every
//     rank waits for the failed one) is the model's worst case, which
//     checkpoints most often. α is the policy's MTTI, or EstimateMTTI
//     from the rank's own run time and failures. Where eq. 11 has no
//     optimum (recovery longer than the MTTI), Daly's interval is used.
//     Δ_lp, the logging time, enters eq. 10's overhead, not σ_opt: it is
//     measured and reported (log_protect_seconds), not used here.
type Own struct {
	p        Policy
	start    time.Duration // when the rank started (its clock)
	lastEnd  time.Duration // the end of its last checkpoint, or start
	lastStep int64         // the step of its last checkpoint (Steps: not twice)
	cost     time.Duration // the last checkpoint's cost, 0 before one
	failures int64         // failures this rank recovered from
	load     time.Duration // t_l of its last recovery
	replay   time.Duration // Δ_lr of its last recovery
}

// NewOwn starts deciding for a rank that starts (or restarts) at step
// after failures of its own, at time now.
func NewOwn(p Policy, step int64, now time.Duration, failures int64) *Own {
	return &Own{p: p, start: now, lastEnd: now, lastStep: step, failures: failures}
}

// Recovered records what the rank's lone recovery cost: loading its
// checkpoint (t_l) and replaying its log (Δ_lr).
func (o *Own) Recovered(load, replay time.Duration) { o.load, o.replay = load, replay }

// Checkpointed records a checkpoint the rank took at step, from start to
// end (its cost t_c).
func (o *Own) Checkpointed(step int64, start, end time.Duration) {
	o.lastStep, o.lastEnd, o.cost = step, end, end-start
}

// Need tells whether the rank checkpoints at step, at time now.
func (o *Own) Need(step int64, now time.Duration) bool {
	switch o.p.Kind {
	case Steps:
		return o.p.Steps > 0 && step > 0 && step%o.p.Steps == 0 && step != o.lastStep
	case Time:
		return now-o.lastEnd >= o.p.Period
	case Auto:
		return now-o.lastEnd >= o.Interval(now)
	}
	return false
}

// Interval is the compute time Auto leaves between two checkpoints at time
// now (eq. 11; see Own); 0 for the other kinds.
func (o *Own) Interval(now time.Duration) time.Duration {
	if o.p.Kind != Auto {
		return 0
	}
	cost := o.cost
	if cost <= 0 {
		cost = o.p.AssumedCost
		if cost <= 0 {
			cost = DefaultAssumedCost
		}
	}
	mtti := o.p.MTTI
	if mtti <= 0 {
		mtti = EstimateMTTI(now-o.start, o.failures)
	}
	in := model.IntervalInput{Cost: cost.Seconds(), MTTI: mtti.Seconds(), Restart: o.load.Seconds(),
		Phi: 1, LogReplay: o.replay.Seconds()}
	if s, err := model.FialhoParallelInterval(in); err == nil {
		return fromSeconds(s)
	}
	return AutoInterval(cost, mtti)
}
