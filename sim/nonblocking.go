package sim

import "sync/atomic"

// nonBlocking simulates the two-level non-blocking scheme of SPEC-markov §5
// with the rollback rules of §5.3 (001 §V.C).
type nonBlocking struct {
	k          int64 // intervals (segments) in the job
	t, last    float64
	work       float64
	n, m       int64   // segments per period; incomplete segments of a type-N period
	slow       float64 // 1 + α
	c1, c2     float64 // blocking cost of a segment's checkpoint, and of a period's last
	rec1, rec2 float64 // r_1, r_2 plus detection
}

func newNonBlocking(cfg *Config) *nonBlocking {
	s := &nonBlocking{t: cfg.Interval, work: cfg.Work, n: int64(cfg.Segments()),
		m: int64(cfg.nonBlocking().IncompleteSegments(cfg.Interval)), slow: 1 + cfg.Alpha,
		c1: cfg.Cost[0], c2: cfg.Cost[1], rec1: cfg.Restart[0] + cfg.Detect, rec2: cfg.Restart[1] + cfg.Detect}
	s.k, s.last = cfg.intervals()
	return s
}

// run simulates one job; see coordinated.run.
//
// A period is n segments: compute t (slowed to (1+α)t while the previous
// period's copy is in flight, positionally: the first m segments of a
// type-N period) and a blocking level-1 checkpoint (c1, or c2 for the
// period's last segment). A period that starts right after a level-2
// recovery, and the job's first, have no copy in flight (type R).
func (s *nonBlocking) run(c *clock, out *sample, stop *atomic.Bool, budget int64) bool {
	now, lost, restart := 0.0, 0.0, 0.0
	// Execution kept so far, and its value at the start of the current
	// and of the previous period (the rollback targets).
	kept, keptCur, keptPrev := 0.0, 0.0, 0.0
	var j, seg, events int64
	typeN := false
	for j < s.k {
		work := s.t
		if j == s.k-1 {
			work = s.last
		}
		incomplete := typeN && seg < s.m
		dur := work
		if incomplete {
			dur = work * s.slow
		}
		if seg == s.n-1 {
			dur += s.c2
		} else {
			dur += s.c1
		}
		end := now + dur
		if end <= c.at {
			now = end
			kept += dur
			j++
			seg++
			events++
			if seg == s.n {
				// The period's checkpoint starts its copy to level 2.
				seg, typeN = 0, true
				keptPrev, keptCur = keptCur, kept
			}
			if events%checkEvery == 0 && (events > budget || stop.Load()) {
				return false
			}
			continue
		}

		lost += c.at - now
		now = c.at
		lev := c.cat + 1
		out.failures[c.cat]++
		events++
		c.consume()
		if lev == 1 {
			// R1, then redo the segment.
			if now+s.rec1 <= c.at {
				now += s.rec1
				restart += s.rec1
				out.restarts[0]++
				events++
				continue
			}
			// Any failure during R1 is handled as a level-2 failure at
			// the same position.
			restart += c.at - now
			now = c.at
			out.failures[c.cat]++
			events++
			c.consume()
		}
		if incomplete {
			// The copy in flight is lost: back to the last completed
			// level-2 checkpoint, the start of the previous period.
			lost += kept - keptPrev
			kept, keptCur = keptPrev, keptPrev
			j -= seg + s.n
		} else {
			lost += kept - keptCur
			kept = keptCur
			j -= seg
		}
		seg, typeN = 0, false
		for now+s.rec2 > c.at { // R2 is retried after any failure
			restart += c.at - now
			now = c.at
			out.failures[c.cat]++
			events++
			c.consume()
			if events > budget {
				return false
			}
		}
		now += s.rec2
		restart += s.rec2
		out.restarts[1]++
		events++
		if events > budget || stop.Load() {
			return false
		}
	}
	out.seconds = now
	out.lost = lost
	out.restart = restart
	out.checkpoint = now - s.work - lost - restart
	out.process = now
	out.events = events
	return true
}
