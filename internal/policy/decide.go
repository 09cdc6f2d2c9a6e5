package policy

import (
	"fmt"
	"math"
	"time"

	"github.com/ckpt/ckpt/model"
)

// Never is the NextDecisionStep of a policy that has no more decision rounds.
const Never int64 = math.MaxInt64

// Report is what one rank contributes to a decision round. All times are
// measured on the rank's own monotonic clock.
type Report struct {
	Step            int64         // the step being decided; equal on every rank
	Elapsed         time.Duration // since this launch started on this rank
	SinceCheckpoint time.Duration // since this rank's last checkpoint ended, or since the launch started
	StepTime        time.Duration // mean step time over the last Window steps, checkpoint time excluded; 0 = not measured
	Window          int64         // steps StepTime was measured over
	CheckpointCost  time.Duration // duration of the checkpoint completed since the previous report; 0 = none
	Halt            bool          // the rank asks the job to checkpoint and stop
}

// Validate checks that the report's values are in range: no negative step,
// duration or window, and a StepTime exactly when Window > 0.
func (r Report) Validate() error {
	bad := func(field string, v any) error {
		return fmt.Errorf("%w: report for step %d: %s %v out of range", ErrInvalid, r.Step, field, v)
	}
	switch {
	case r.Step < 0:
		return bad("step", r.Step)
	case r.Elapsed < 0:
		return bad("elapsed", r.Elapsed)
	case r.SinceCheckpoint < 0:
		return bad("since-checkpoint", r.SinceCheckpoint)
	case r.StepTime < 0:
		return bad("step time", r.StepTime)
	case r.Window < 0, (r.Window > 0) != (r.StepTime > 0):
		return bad("window", r.Window)
	case r.CheckpointCost < 0:
		return bad("checkpoint cost", r.CheckpointCost)
	}
	return nil
}

// CheckReports checks what a coordinator received for one decision round,
// indexed by rank: at least one report, each valid, all for the same step.
// An error names the rank whose report is wrong.
func CheckReports(reports []Report) error {
	if len(reports) == 0 {
		return fmt.Errorf("%w: no reports", ErrInvalid)
	}
	for i, r := range reports {
		if err := r.Validate(); err != nil {
			return fmt.Errorf("rank %d: %w", i, err)
		}
		if r.Step != reports[0].Step {
			return fmt.Errorf("%w: rank %d's report is for step %d, rank 0's for step %d", ErrInvalid, i, r.Step, reports[0].Step)
		}
	}
	return nil
}

// Decision is the answer of a decision round; every rank receives the same.
type Decision struct {
	Checkpoint       bool          // checkpoint at this step
	Halt             bool          // stop after this step (after the checkpoint, if any)
	NextDecisionStep int64         // the next decision round's step, > this step; Never if none
	Interval         time.Duration // the checkpoint interval in force, for reporting; 0 if unknown
}

// State is what Decide carries from one round to the next. The zero value
// starts a job. The first three fields outlive a launch: the launcher keeps
// them and starts the next launch's coordinator with NextLaunch.
type State struct {
	Cost        time.Duration // smoothed measured checkpoint cost δ; 0 until one has been measured
	Failures    int64         // failures the job has seen in earlier launches
	PastRuntime time.Duration // run time of the earlier launches (see EstimateMTTI)

	Decisions   int64 // decision rounds in this launch
	Checkpoints int64 // checkpoints decided in this launch
}

// NextLaunch returns the state that starts the next launch after one that
// ran for ran (its wall time, from start to the failure or stop) and ended
// by a failure or not. It keeps the measured cost and adds to the failure
// history; the per-launch counters restart at zero.
func (s State) NextLaunch(ran time.Duration, failed bool) State {
	n := State{Cost: s.Cost, Failures: s.Failures, PastRuntime: addSat(s.PastRuntime, max(ran, 0))}
	if failed {
		n.Failures++
	}
	return n
}

// costWeight is the weight of a new cost measurement in the smoothed cost:
// δ ← δ + w(measured − δ). A half weight follows a changed cost within a few
// checkpoints (the error halves with each) while one odd checkpoint moves the
// interval by at most √1.5 or so.
const costWeight = 0.5

// EstimateMTTI estimates the mean time to interrupt from the job's history:
// failures seen over runtime of exposure (the wall time of all launches so
// far, the current one included),
//
//	M̂ = runtime / (failures + 1).
//
// With failures arriving as a Poisson process of rate λ, (F + 1)/T is the
// posterior mean of λ under a flat prior (a Gamma(F+1, T) posterior). Unlike
// the maximum-likelihood T/F it exists before the first failure, and it needs
// no guess of the MTTI, which a prior with real weight would; a user with a
// good guess gives it (auto:MTTI) instead. It errs low, as if a failure
// were about to happen: early in a run it checkpoints more often than
// needed, which costs checkpoints but never loses work. Without failures
// Daly's interval then grows like √(2δT), so the share of time spent
// checkpointing falls like √(2δ/T) (2.4 % after an hour for δ = 1 s); with
// failures at rate 1/M the estimate tends to M·F/(F+1) → M. The result is
// at least 1 ns.
func EstimateMTTI(runtime time.Duration, failures int64) time.Duration {
	m := runtime / time.Duration(max(failures, 0)+1)
	return max(m, 1)
}

// AutoInterval is Daly's higher-order optimal interval (000 eq. 2) for a
// checkpoint cost and an MTTI, computed by model.Daly: compute time between
// the end of one checkpoint and the start of the next. It is at least 1 ns.
func AutoInterval(cost, mtti time.Duration) time.Duration {
	return fromSeconds(model.Daly(cost.Seconds(), mtti.Seconds()))
}

// FirstDecisionStep is the first decision step of a launch that starts
// after step start (≥ 0; the step of the checkpoint it restarted from, or
// 0): the first positive multiple of Steps after start, start+1 for Time
// and Auto (the first round measures the step time), and Never for None.
// Every rank computes it alike, so the first round needs no agreement.
func FirstDecisionStep(p Policy, start int64) int64 {
	start = max(start, 0)
	switch p.Kind {
	case Steps:
		if p.Steps <= 0 {
			return Never
		}
		return nextMultiple(start, p.Steps)
	case Time, Auto:
		return addStep(start, 1)
	}
	return Never
}

// Decide computes a round's answer from the policy, the state after the
// previous round and every rank's report (CheckReports should pass; the
// order of the reports does not matter). It is pure: the same arguments give
// the same result. The coordinator calls it once per round and sends every
// rank the one answer, so ranks never compute it themselves.
//
// It takes the slowest rank's view of everything: the largest elapsed
// times, step time and checkpoint cost. Halt in any report halts the job
// after a checkpoint (no checkpoint for None).
//
// Steps: every round falls on a due step, so it always checkpoints, and the
// next round is the next multiple of Steps; there are no other rounds.
//
// Time and Auto: the interval is Period, or AutoInterval(δ, M) with δ the
// smoothed measured cost and M the configured MTTI or
// EstimateMTTI(PastRuntime + Elapsed, Failures); until a cost is measured,
// the smaller of AutoInterval(AssumedCost, M) and the DecisionPeriod. It
// checkpoints when SinceCheckpoint is within half a step of the interval or
// beyond it. The next round is the step at which the DecisionPeriod or the
// time left until the next checkpoint is due, whichever is sooner, will have
// passed at the measured step time (rounded up, so a due round is never
// early at a steady pace), at least one step on, and at most twice the
// measured window on, so that a step time measured over few steps is
// trusted for few steps.
func Decide(p Policy, st State, reports []Report) (Decision, State) {
	return decide(p, st, reports, false)
}

// DecideNow is Decide for a round at which the job was asked to checkpoint
// at once (ckpt checkpoint): it checkpoints at this step, as a halt does,
// but does not stop, and for Time and Auto the interval starts again from
// this checkpoint. None has no rounds, so it never checkpoints.
func DecideNow(p Policy, st State, reports []Report) (Decision, State) {
	return decide(p, st, reports, true)
}

func decide(p Policy, st State, reports []Report, now bool) (Decision, State) {
	a := aggregate(reports)
	st.Decisions++
	if a.cost > 0 {
		if st.Cost <= 0 {
			st.Cost = a.cost
		} else {
			st.Cost += time.Duration(math.Round(costWeight * float64(a.cost-st.Cost)))
		}
	}
	d := Decision{Halt: a.halt, NextDecisionStep: Never}
	switch p.Kind {
	case Steps:
		d.Checkpoint = true
		if p.Steps > 0 {
			d.NextDecisionStep = nextMultiple(a.step, p.Steps)
			d.Interval = mulSat(a.stepTime, p.Steps)
		}
	case Time, Auto:
		d.Interval = interval(p, st, a)
		since := a.since
		if a.halt || now || addSat(since, a.stepTime/2) >= d.Interval {
			d.Checkpoint = true
			since = 0
		}
		horizon := min(p.decisionPeriod(), d.Interval-since)
		gap := int64(1)
		if a.stepTime > 0 && a.window > 0 {
			gap = ceilDiv(horizon, a.stepTime)
			gap = max(1, min(gap, mulSat(a.window, 2)))
		}
		d.NextDecisionStep = addStep(a.step, gap)
	}
	if (a.halt || now) && p.Kind != None {
		d.Checkpoint = true
	}
	if d.Checkpoint {
		st.Checkpoints++
	}
	return d, st
}

// interval is the Time or Auto interval in force.
func interval(p Policy, st State, a agg) time.Duration {
	if p.Kind == Time {
		return p.Period
	}
	mtti := p.MTTI
	if mtti <= 0 {
		mtti = EstimateMTTI(addSat(st.PastRuntime, a.elapsed), st.Failures)
	}
	if st.Cost > 0 {
		return AutoInterval(st.Cost, mtti)
	}
	// No cost measured yet (a job's first launch, or a relaunch of one that
	// never finished a checkpoint): the first checkpoint is what measures it,
	// so it comes no later than one decision period in. Daly's interval for
	// the assumed cost alone was 2–3 times the interval of the measured
	// cost in the demo (1.6 s against 0.6–0.85 s at M = 2.5 s), and every
	// failure before it lost the work since the start, a term outside the
	// models (docs/MODELS.md, "Failures before the first checkpoint"). The
	// price is at most one checkpoint per launch earlier than needed.
	return min(AutoInterval(p.assumedCost(), mtti), p.decisionPeriod())
}

// agg is the slowest rank's view of a round.
type agg struct {
	step                           int64
	elapsed, since, stepTime, cost time.Duration
	window                         int64
	halt                           bool
	haveWindow                     bool
}

func aggregate(reports []Report) agg {
	var a agg
	for _, r := range reports {
		a.step = max(a.step, r.Step)
		a.elapsed = max(a.elapsed, r.Elapsed)
		a.since = max(a.since, r.SinceCheckpoint)
		a.stepTime = max(a.stepTime, r.StepTime)
		a.cost = max(a.cost, r.CheckpointCost)
		a.halt = a.halt || r.Halt
		if !a.haveWindow || r.Window < a.window {
			a.window, a.haveWindow = r.Window, true
		}
	}
	return a
}

// nextMultiple is the first positive multiple of n (> 0) greater than s, or
// Never if it does not fit.
func nextMultiple(s, n int64) int64 {
	q := max(s, 0)/n + 1
	if q > Never/n {
		return Never
	}
	return q * n
}

// addStep is s + gap (gap ≥ 0) saturating at Never.
func addStep(s, gap int64) int64 {
	if s > Never-gap {
		return Never
	}
	return s + gap
}

// addSat is a + b for non-negative durations, saturating.
func addSat(a, b time.Duration) time.Duration {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// mulSat is a·b for non-negative values, saturating.
func mulSat[T ~int64](a T, b int64) T {
	if a == 0 || b == 0 {
		return 0
	}
	if a > T(math.MaxInt64/b) {
		return T(math.MaxInt64)
	}
	return a * T(b)
}

// ceilDiv is ⌈a/b⌉ in steps for a ≥ 0, b > 0.
func ceilDiv(a, b time.Duration) int64 {
	q := int64(a / b)
	if a%b != 0 {
		q++
	}
	return q
}

// fromSeconds converts seconds to a duration of at least 1 ns, saturating.
func fromSeconds(s float64) time.Duration {
	ns := math.Round(s * 1e9)
	switch {
	case !(ns >= 1):
		return 1
	case ns >= math.MaxInt64:
		return math.MaxInt64
	}
	return time.Duration(ns)
}
