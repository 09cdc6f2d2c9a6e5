package policy

import (
	"testing"
	"time"
)

// sim drives a bulk-synchronous job of several ranks through Locals and
// Decide, as the rank API and the coordinator would, on a simulated clock.
type sim struct {
	policy Policy
	ranks  int
	start  int64 // the launch starts after this step
	steps  int64 // steps to run (fewer if the job halts)
	state  State

	// stepTime is how long rank r takes for step s, ending at global time
	// now; a step ends when the slowest rank is done.
	stepTime func(r int, s int64, now time.Duration) time.Duration
	// cost is the duration of the job's n-th checkpoint (0-based).
	cost func(n int) time.Duration
	// haltAfter makes rank 1 (or 0) request a halt after that step; 0 = never.
	haltAfter int64
}

type ckptEvent struct {
	step     int64
	at       time.Duration // global time of the decision
	since    time.Duration // compute time since the previous checkpoint ended (or the launch started)
	interval time.Duration // the Decision's Interval
}

type simResult struct {
	decisions []int64
	ckpts     []ckptEvent
	last      Decision
	state     State
	halted    int64 // step at which the job halted, 0 if it did not
	end       time.Duration
}

// skew is rank r's clock offset and launch delay: clocks read differently
// and ranks start a little apart, as real ones do.
func skew(r int) (offset, delay time.Duration) {
	return time.Duration(r) * 7 * time.Hour, time.Duration(r) * 3 * time.Millisecond
}

func (s sim) run(t testing.TB) simResult {
	t.Helper()
	if s.ranks == 0 {
		s.ranks = 1
	}
	var now time.Duration
	clock := func(r int, at time.Duration) time.Duration { off, _ := skew(r); return at + off }
	locals := make([]*Local, s.ranks)
	for r := range locals {
		_, delay := skew(r)
		locals[r] = NewLocal(s.policy, s.start, clock(r, delay))
	}
	_, now = skew(s.ranks - 1) // the job starts when the last rank is up
	var res simResult
	st := s.state
	lastEnd := now
	reports := make([]Report, s.ranks)
	for step := s.start + 1; step <= s.start+s.steps; step++ {
		var dt time.Duration
		for r := range s.ranks {
			dt = max(dt, s.stepTime(r, step, now))
		}
		now += dt
		if s.haltAfter > 0 && step == s.haltAfter {
			locals[min(1, s.ranks-1)].RequestHalt()
		}
		need := locals[0].Need(step)
		for r, l := range locals {
			if l.Need(step) != need {
				t.Fatalf("step %d: rank %d disagrees on the decision step", step, r)
			}
		}
		if !need {
			continue
		}
		for r, l := range locals {
			rep := l.Report(step, clock(r, now))
			b, _ := rep.MarshalBinary()
			if err := reports[r].UnmarshalBinary(b); err != nil {
				t.Fatal(err)
			}
		}
		if err := CheckReports(reports); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		var d Decision
		d, st = Decide(s.policy, st, reports)
		if d.NextDecisionStep <= step {
			t.Fatalf("step %d: next decision step %d is not later", step, d.NextDecisionStep)
		}
		b, _ := d.MarshalBinary()
		var got Decision
		if err := got.UnmarshalBinary(b); err != nil || got != d {
			t.Fatalf("decision %+v does not round-trip: %+v, %v", d, got, err)
		}
		for _, l := range locals {
			l.Apply(d)
		}
		res.decisions = append(res.decisions, step)
		res.last = d
		if d.Checkpoint {
			res.ckpts = append(res.ckpts, ckptEvent{step: step, at: now, since: now - lastEnd, interval: d.Interval})
			t0 := now
			now += s.cost(len(res.ckpts) - 1)
			for r, l := range locals {
				l.Checkpointed(clock(r, t0), clock(r, now))
			}
			lastEnd = now
		}
		if d.Halt {
			res.halted = step
			break
		}
	}
	res.state, res.end = st, now
	return res
}

func constStep(d time.Duration) func(int, int64, time.Duration) time.Duration {
	return func(int, int64, time.Duration) time.Duration { return d }
}

func constCost(d time.Duration) func(int) time.Duration {
	return func(int) time.Duration { return d }
}
