package sim

import (
	"sync/atomic"

	"github.com/ckpt/ckpt/model"
)

// sample is what one replication measures. Failures and restarts are
// counted per level (index level-1).
type sample struct {
	seconds    float64 // wall-clock time of the job
	lost       float64 // execution discarded by rollbacks
	restart    float64 // recovery attempts, the failed ones included
	checkpoint float64 // checkpoint writes (and flush slowdown) that survived
	wait       float64 // Uncoordinated: per process, waiting for others
	process    float64 // Uncoordinated: mean completion time of the processes
	failures   [model.MaxLevels]float64
	restarts   [model.MaxLevels]float64
	events     int64
	// Single level only: this run's efficiency against Daly's model at the
	// failure rate the run met (see Result.AppliedError).
	appliedErr, appliedAbsErr float64
}

// checkEvery is how many events a replication runs between two looks at
// the stop flag and the event budget.
const checkEvery = 1 << 20

// coordinated simulates blocking multi-level checkpointing (SPEC-markov
// §4.3); one level is Daly's setting. It holds the configuration in the
// form the loop wants; a worker reuses one for all its replications.
type coordinated struct {
	L         int
	k         int64   // intervals in the job
	t, last   float64 // work of an interval and of the last one
	work      float64
	cost      [model.MaxLevels]float64     // c_l at index l-1
	rec       [model.MaxLevels]float64     // r_l + detect at index l-1
	radix     [model.MaxLevels]int64       // v_l + 1 at index l-1, l < L
	period    [model.MaxLevels + 1]int64   // B_l at index l: intervals between level-≥l checkpoints
	costStep  [model.MaxLevels + 1]float64 // c_l − c_{l−1} at index l (c_0 = 0)
	protected bool
}

func newCoordinated(cfg *Config) *coordinated {
	s := &coordinated{L: cfg.L(), t: cfg.Interval, work: cfg.Work, protected: cfg.L1ProtectedFirst}
	s.k, s.last = cfg.intervals()
	s.period[1] = 1
	prev := 0.0
	for l := 1; l <= s.L; l++ {
		s.cost[l-1] = cfg.Cost[l-1]
		s.rec[l-1] = cfg.Restart[l-1] + cfg.Detect
		s.costStep[l] = cfg.Cost[l-1] - prev
		prev = cfg.Cost[l-1]
		if l < s.L {
			s.radix[l-1] = int64(cfg.Counts[l-1]) + 1
			s.period[l+1] = s.period[l] * s.radix[l-1]
		}
	}
	return s
}

// levelOf is the level of the checkpoint after interval x (x ≥ 1), or L for
// x = 0, the job's start: the largest l with B_l dividing x (SPEC §4.1).
func (s *coordinated) levelOf(x int64) int {
	if x == 0 {
		return s.L
	}
	lev := 1
	for l := 2; l <= s.L && x%s.period[l] == 0; l++ {
		lev = l
	}
	return lev
}

// kept is the failure-free execution time of the first x full intervals,
// x·t plus their checkpoints: Σ_l (c_l − c_{l−1})·⌊x/B_l⌋.
func (s *coordinated) kept(x int64, work float64) float64 {
	e := work
	for l := 1; l <= s.L; l++ {
		e += s.costStep[l] * float64(x/s.period[l])
	}
	return e
}

// digits sets the odometer to interval count x: digit i counts level-(i+1)
// checkpoints since the last checkpoint of a higher level.
func (s *coordinated) digits(d *[model.MaxLevels]int64, x int64) {
	for i := 0; i < s.L-1; i++ {
		d[i] = x % s.radix[i]
		x /= s.radix[i]
	}
}

// peek is the level of the checkpoint that ends the next interval.
func (s *coordinated) peek(d *[model.MaxLevels]int64) int {
	lev := 1
	for i := 0; i < s.L-1 && d[i]+1 == s.radix[i]; i++ {
		lev++
	}
	return lev
}

// run simulates one job. It returns false if stop was set or the job took
// more than budget events.
func (s *coordinated) run(c *clock, out *sample, stop *atomic.Bool, budget int64) bool {
	var d [model.MaxLevels]int64
	lev := s.peek(&d)
	now, lost, restart := 0.0, 0.0, 0.0
	var j, events int64
	L := s.L
	for j < s.k {
		work := s.t
		if j == s.k-1 {
			work = s.last
		}
		end := now + work + s.cost[lev-1]
		if end <= c.at {
			// The interval and its checkpoint complete.
			now = end
			j++
			events++
			for i := 0; i < lev-1; i++ {
				d[i] = 0
			}
			if lev-1 < L-1 {
				d[lev-1]++
			}
			lev = s.peek(&d)
			if events%checkEvery == 0 && (events > budget || stop.Load()) {
				return false
			}
			continue
		}

		// A failure strikes the interval: its checkpoint is not taken.
		partial := c.at - now
		now = c.at
		need := c.cat + 1
		out.failures[c.cat]++
		events++
		c.consume()
		var C int64
		for {
			// The most recent checkpoint whose level is ≥ need: every
			// multiple of B_need up to j was (re)written after any
			// rollback behind it. 0 is the job's start, a level-L one.
			C = j / s.period[need] * s.period[need]
			k := s.levelOf(C)
			if s.protected {
				k = need // SPEC §4.4 variant: a level-1 failure recovers at r_1
			}
			cost := s.rec[k-1]
			if now+cost <= c.at {
				now += cost
				restart += cost
				out.restarts[k-1]++
				events++
				break
			}
			// A failure during R_k: retry R_k if k = L or the failure is of
			// a lower level; otherwise escalate (SPEC §4.3).
			restart += c.at - now
			now = c.at
			i2 := c.cat + 1
			out.failures[c.cat]++
			events++
			c.consume()
			if events > budget {
				return false
			}
			if k == L || i2 < k {
				continue
			}
			need = max(i2, k+1)
		}
		lost += partial + s.kept(j, float64(j)*s.t) - s.kept(C, float64(C)*s.t)
		j = C
		s.digits(&d, j)
		lev = s.peek(&d)
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
