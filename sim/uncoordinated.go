package sim

import "sync/atomic"

// uncoordinated simulates uncoordinated checkpointing with pessimistic
// receiver-based message logging (003 §3.2): N processes, each with its own
// checkpoints; failures of the whole application arrive at rate 1/α and
// each strikes one process chosen uniformly.
//
// A process's progress is its position: the failure-free execution time it
// has behind it, cycles of σ(1+κ) of computation (logging included) and t_c
// of checkpoint. Between two events touching a process its position grows
// with wall-clock time, so only failures are events: checkpoints and
// interval ends are read off the position.
//
// When process n fails it rolls back to its last checkpoint and recovers:
// detection t_d, loading t_l, replaying its log Δ_lr, then re-executing the
// lost computation at plain speed (its messages come from the log, nothing
// is logged again). The processes that depend on n stop at the failure and
// resume when n has caught up, that is, when its recovery ends. Dependence
// is direct, as in 003 §3.3: a waiting process makes nobody wait. A failure
// during a recovery starts it again.
type uncoordinated struct {
	n        int
	k        int64
	sigma    float64 // σ, the work of an interval
	last     float64 // work of the last interval
	grow     float64 // 1 + κ
	cycle    float64 // σ(1+κ) + t_c
	posEnd   float64 // the position at which a process is done
	rec      float64 // t_d + t_l + Δ_lr
	ckpt     float64 // t_c
	depStart []int32 // dependents of n: deps[depStart[n]:depStart[n+1]]
	deps     []int32
	procs    []proc
}

type proc struct {
	pos0       float64 // position at time resume
	resume     float64 // the process executes from then on (frozen before)
	recoverEnd float64 // end of its current or last recovery
	blockEnd   float64 // it waits for others until then
	reworkTo   float64 // position its last recovery re-executed up to
	exec       float64 // time spent executing, up to min(now, resume)
	recovery   float64 // time spent recovering (re-execution included)
	lost       float64 // execution discarded by rollbacks
}

func newUncoordinated(cfg *Config) *uncoordinated {
	s := &uncoordinated{n: len(cfg.Dependents), sigma: cfg.Interval, grow: 1 + cfg.LogOverhead,
		rec: cfg.Detect + cfg.Restart[0] + cfg.LogReplay, ckpt: cfg.Cost[0]}
	s.k, s.last = cfg.intervals()
	s.cycle = s.sigma*s.grow + s.ckpt
	s.posEnd = float64(s.k-1)*s.cycle + s.last*s.grow + s.ckpt
	s.depStart = make([]int32, s.n+1)
	for i, ds := range cfg.Dependents {
		s.depStart[i+1] = s.depStart[i] + int32(len(ds))
		for _, d := range ds {
			s.deps = append(s.deps, int32(d))
		}
	}
	s.procs = make([]proc, s.n)
	return s
}

// done is the time process p finishes if nothing touches it again.
func (s *uncoordinated) done(p *proc) float64 { return p.resume + s.posEnd - p.pos0 }

func (s *uncoordinated) run(c *clock, out *sample, stop *atomic.Bool, budget int64) bool {
	for i := range s.procs {
		s.procs[i] = proc{}
	}
	jobEnd := s.posEnd
	var events int64
	N := uint64(s.n)
	for c.at < jobEnd {
		tf := c.at
		n := c.uniform(N)
		c.consume()
		events++
		p := &s.procs[n]
		if s.done(p) <= tf {
			continue // the failed node's process had finished
		}
		out.failures[0]++
		pos := p.pos0
		if tf >= p.resume {
			p.exec += tf - p.resume
			pos += tf - p.resume
		} else if tf < p.recoverEnd {
			// A failure during a recovery: the attempt is lost.
			p.recovery -= p.recoverEnd - tf
			out.restarts[0]--
		}
		kc := min(int64(pos/s.cycle), s.k-1)
		posC := float64(kc) * s.cycle
		wk := s.sigma
		if kc == s.k-1 {
			wk = s.last
		}
		compLen := wk * s.grow
		var redo, target float64 // work to re-execute, position it leads back to
		if e := pos - posC; e < compLen {
			redo, target = e/s.grow, pos
		} else {
			redo, target = wk, posC+compLen // the checkpoint is written again
		}
		if l := pos - max(posC, p.reworkTo); l > 0 {
			p.lost += l
		}
		p.reworkTo, p.pos0 = target, target
		cost := s.rec + redo
		p.recovery += cost
		p.recoverEnd = tf + cost
		p.resume = max(p.blockEnd, p.recoverEnd)
		out.restarts[0]++
		jobEnd = max(jobEnd, s.done(p))
		for _, d := range s.deps[s.depStart[n]:s.depStart[n+1]] {
			q := &s.procs[d]
			if s.done(q) <= tf {
				continue
			}
			events++
			if tf >= q.resume {
				q.exec += tf - q.resume
				q.pos0 += tf - q.resume
				q.resume = tf
			}
			q.blockEnd = max(q.blockEnd, p.recoverEnd)
			q.resume = max(q.resume, q.blockEnd)
			jobEnd = max(jobEnd, s.done(q))
		}
		if events%1024 == 0 && (events > budget || stop.Load()) {
			return false
		}
	}
	var sum, lost, recovery, wait float64
	for i := range s.procs {
		p := &s.procs[i]
		end := s.done(p)
		exec := p.exec + end - p.resume
		sum += end
		lost += p.lost
		recovery += p.recovery
		wait += end - exec - p.recovery
	}
	fn := float64(s.n)
	out.seconds = jobEnd
	out.process = sum / fn
	out.lost = lost / fn
	out.restart = recovery / fn
	out.wait = wait / fn
	out.checkpoint = float64(s.k) * s.ckpt
	out.events = events
	return true
}
