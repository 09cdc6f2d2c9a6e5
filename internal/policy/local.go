package policy

import (
	"sync/atomic"
	"time"
)

// Local is a rank's side of the checkpoint decision. It knows the next
// decision step, measures the step time and the checkpoint cost, and builds
// the rank's Report. Times are offsets on the rank's monotonic clock (for
// example time.Since of a fixed instant), passed in by the caller.
//
// A Local is used by the rank's main goroutine; only RequestHalt may be
// called from other goroutines.
type Local struct {
	next int64
	// costDue makes the step after a checkpoint a decision step, so that
	// the checkpoint's cost reaches the coordinator's State at once: a
	// launch cut short by a failure before its next regular round would
	// otherwise take the measurement with it (Time and Auto; Steps rounds
	// always checkpoint and use no cost).
	costDue    bool
	costReport bool // the next report is the one right after a checkpoint

	start   time.Duration // when the launch started
	ckptEnd time.Duration // when the last checkpoint ended, or start
	cost    time.Duration // cost of a checkpoint not yet reported

	// The step time is measured over the current window (since the last
	// report) and the previous one, with checkpoint time taken out.
	lastStep  int64
	lastAt    time.Duration
	ckptTime  time.Duration // checkpoint time inside the current window
	prevSteps int64
	prevBusy  time.Duration

	halt atomic.Bool
}

// NewLocal returns the Local of a launch that starts after step start (the
// step of the checkpoint it restarted from, or 0) at time now. Every rank
// must build its Local from the same policy and start step, so that all
// ranks agree on the first decision step (FirstDecisionStep).
func NewLocal(p Policy, start int64, now time.Duration) *Local {
	return &Local{
		next:     FirstDecisionStep(p, start),
		costDue:  p.Kind == Time || p.Kind == Auto,
		start:    now,
		ckptEnd:  now,
		lastStep: max(start, 0),
		lastAt:   now,
	}
}

// Need reports whether step is a decision step: whether the rank must now
// build a Report, take part in the decide collective and Apply its answer.
// Between decision steps it returns false and costs nothing.
func (l *Local) Need(step int64) bool { return step >= l.next }

// Next is the next decision step (Never if there is none).
func (l *Local) Next() int64 { return l.next }

// Report builds this rank's report for a decision at step, taken at time
// now. Call it once per decision step, before the collective. It starts a
// new step-time window and hands over the cost of the checkpoint completed
// since the previous report.
func (l *Local) Report(step int64, now time.Duration) Report {
	steps := step - l.lastStep
	busy := max(now-l.lastAt-l.ckptTime, 0)
	r := Report{
		Step:            step,
		Elapsed:         max(now-l.start, 0),
		SinceCheckpoint: max(now-l.ckptEnd, 0),
		CheckpointCost:  l.cost,
		Halt:            l.halt.Load(),
	}
	if steps > 0 {
		if w := steps + l.prevSteps; w > 0 {
			r.Window = w
			r.StepTime = max((busy+l.prevBusy)/time.Duration(w), 1)
		}
	}
	l.cost = 0
	if l.costReport {
		// The round right after a checkpoint is for its cost: the
		// step-time window stays open, so that one step does not become
		// a window of its own.
		l.costReport = false
		return r
	}
	if steps > 0 {
		l.prevSteps, l.prevBusy = steps, busy
	}
	l.lastStep, l.lastAt, l.ckptTime = step, now, 0
	return r
}

// Apply records a round's answer. It never moves the next decision step to
// or before the step just decided.
func (l *Local) Apply(d Decision) {
	l.next = max(d.NextDecisionStep, addStep(l.lastStep, 1))
}

// Checkpointed records a checkpoint that ran from start to end (after the
// decision that asked for it). Its duration is the cost the next report
// carries, and it is left out of the step time. For Time and Auto the next
// report comes at the next step. Every rank checkpoints at the same step,
// so all agree on it.
func (l *Local) Checkpointed(start, end time.Duration) {
	c := max(end-start, 0)
	l.cost = c
	l.ckptTime += c
	l.ckptEnd = end
	if l.costDue {
		l.next = min(l.next, addStep(l.lastStep, 1))
		l.costReport = true
	}
}

// RequestHalt asks the job to checkpoint and stop at the next decision
// round; the request travels in this rank's reports from then on. Safe for
// concurrent use.
func (l *Local) RequestHalt() { l.halt.Store(true) }
