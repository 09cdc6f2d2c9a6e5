package launch

import (
	"fmt"
	"time"
)

// DefaultHaltMargin bounds the default halt margin: the job is asked to
// checkpoint and halt this long before its deadline, or a quarter of the
// time it has left at its start when that is shorter.
const DefaultHaltMargin = 60 * time.Second

// TimeLimit is when a job must be over and how long before that it halts
// (Config.Deadline and HaltMargin).
type TimeLimit struct {
	Deadline time.Time     // zero: none
	Margin   time.Duration // how long before Deadline the job halts
	// From says where the deadline came from: "--time-limit",
	// SLURM_JOB_END_TIME or squeue.
	From string
}

// NewTimeLimit is the job's time limit at now: the earlier of now+limit
// (limit > 0: ckpt run --time-limit) and the allocation's end (end, from
// where; zero: none). margin > 0 is the halt margin asked for
// (--halt-before); 0 chooses DefaultHaltMargin, or a quarter of the time
// left when that is shorter. An end already too near to halt in time is
// an error: the job would be killed before it could checkpoint.
func NewTimeLimit(now time.Time, limit time.Duration, end time.Time, from string, margin time.Duration) (TimeLimit, error) {
	t := TimeLimit{}
	if limit > 0 {
		t.Deadline, t.From = now.Add(limit), "--time-limit"
	}
	if !end.IsZero() && (t.Deadline.IsZero() || end.Before(t.Deadline)) {
		t.Deadline, t.From = end, from
	}
	if t.Deadline.IsZero() {
		return t, nil
	}
	left := t.Deadline.Sub(now)
	t.Margin = margin
	if margin <= 0 {
		t.Margin = min(DefaultHaltMargin, left/4)
	}
	if left <= t.Margin {
		return t, fmt.Errorf("the job must end at %s (%s), %s from now: not more than its halt margin of %s, no time to run",
			t.Deadline.Format(time.RFC3339), t.From, left.Round(time.Second), t.Margin)
	}
	return t, nil
}

// HaltAt is when the job is asked to checkpoint and halt.
func (t TimeLimit) HaltAt() time.Time { return t.Deadline.Add(-t.Margin) }
