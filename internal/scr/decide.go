package scr

import "time"

// Interval is when SCR_Need_checkpoint says yes (SCR's
// SCR_CHECKPOINT_INTERVAL, _SECONDS and _OVERHEAD); zero fields are off,
// and with all off it says no unless the job is to halt.
type Interval struct {
	Every    int           // every Every-th call
	Seconds  time.Duration // this long after the last checkpoint ended
	Overhead float64       // percent of the run spent checkpointing, at most
}

// Decider keeps what Need_checkpoint decides from: the calls so far and
// the checkpoints' times. It is pure: the caller passes the clock.
type Decider struct {
	Interval
	calls     int
	start     time.Time // of the run (the first call)
	lastEnd   time.Time // of the last checkpoint, or start
	spent     time.Duration
	taken     int
	openStart time.Time
}

// Need is Need_checkpoint's answer at now; halting (the job is to stop)
// always says yes, so that the last state is saved.
func (d *Decider) Need(now time.Time, halting bool) bool {
	if d.start.IsZero() {
		d.start, d.lastEnd = now, now
	}
	d.calls++
	need := halting
	if d.Every > 0 && d.calls%d.Every == 0 {
		need = true
	}
	if d.Seconds > 0 && now.Sub(d.lastEnd) >= d.Seconds {
		need = true
	}
	if d.Overhead > 0 {
		// The first checkpoint measures the cost; then one is taken once
		// its average cost is at most Overhead percent of the time since
		// the last one ended plus itself.
		if d.taken == 0 {
			need = true
		} else {
			avg := d.spent / time.Duration(d.taken)
			since := now.Sub(d.lastEnd)
			if since > 0 && 100*float64(avg) <= d.Overhead*float64(since+avg) {
				need = true
			}
		}
	}
	return need
}

// Started records that a checkpoint began at now; Ended that it ended.
func (d *Decider) Started(now time.Time) { d.openStart = now }

func (d *Decider) Ended(now time.Time) {
	if !d.openStart.IsZero() {
		d.spent += now.Sub(d.openStart)
		d.taken++
	}
	d.lastEnd, d.openStart = now, time.Time{}
}

// HaltSoon says whether the job is within haltBefore of its end (both
// known: end non-zero, haltBefore positive).
func HaltSoon(now, end time.Time, haltBefore time.Duration) bool {
	return !end.IsZero() && haltBefore > 0 && end.Sub(now) <= haltBefore
}
