package flush

import (
	"math"
	"time"

	"github.com/ckpt/ckpt/internal/policy"
)

// Busy policies: what a non-blocking flush that falls due does while the
// previous one still runs.
const (
	Skip = "skip" // skip this flush; the next due one goes
	Wait = "wait" // wait for the previous one, then start
)

// Config is what a Scheduler decides from.
type Config struct {
	Every       policy.FlushEvery
	NonBlocking bool          // a staging server pulls the checkpoints (Sato et al. 2012)
	Busy        string        // Skip (default) or Wait
	Level1MTTI  time.Duration // the job's MTTI, the λ1 of the Markov model
	// Prior is what the job's earlier launches measured: auto-K chooses
	// from it and from this launch's measurements together.
	Prior Stats
	// Clock is the time (default time.Now); tests give a fake one.
	Clock func() time.Time
}

// Scheduler decides which checkpoints go to the shared tier and keeps the
// statistics of what their flushes did. It is pure: it sends nothing and
// copies nothing, so every rank, fed the same numbers, decides alike; the
// caller pools the ranks' Inputs and runs the transfers.
//
// A fixed K flushes every K-th checkpoint ID (counted across launches, so
// a job relaunched often still flushes one in K). With auto, K is the one
// that maximises the two-level Markov model's efficiency (Sato et al.
// 2012; policy.ChooseK) for what the job measured, and a flush is due K
// checkpoints after the last one started (a skipped one is tried again at
// the next checkpoint).
type Scheduler struct {
	cfg   Config
	k     int    // K in force (auto: last chosen)
	last  uint64 // ID of the last checkpoint a flush started for
	stats Stats
	track Tracker

	start     time.Time // of the launch
	taken     int       // checkpoints committed by this launch
	ckptAt    time.Time // when the checkpoint under way began
	lastEnd   time.Time // when the last checkpoint ended
	stepAt    time.Time // when the step under way began (zero: none yet)
	stepBusy  bool
	stepCkpt  bool // the step under way took a checkpoint
	stepsSeen bool
}

// NewScheduler returns a scheduler whose launch begins now.
func NewScheduler(cfg Config) *Scheduler {
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Busy == "" {
		cfg.Busy = Skip
	}
	now := cfg.Clock()
	return &Scheduler{cfg: cfg, k: max(cfg.Every.K, 1), start: now, lastEnd: now}
}

// Stats is what this launch's flushes did so far.
func (s *Scheduler) Stats() Stats { return s.stats }

// K is the K in force.
func (s *Scheduler) K() int { return s.k }

// Auto tells whether K is chosen from measurements (the caller then pools
// the ranks' Inputs before Due).
func (s *Scheduler) Auto() bool { return s.cfg.Every.Auto }

// WhenBusy is the busy policy: Skip or Wait.
func (s *Scheduler) WhenBusy() string { return s.cfg.Busy }

// Step accounts the step that just ended (the time since the previous
// call) to the busy or idle steps, by whether a flush of this node ran
// when it began (busy says whether one runs now, as the next begins): the
// overhead factor α of the background copy, measured in the run itself.
// Steps that took a checkpoint are left out.
func (s *Scheduler) Step(busy bool) {
	now := s.cfg.Clock()
	if s.stepsSeen && !s.stepCkpt {
		dt := now.Sub(s.stepAt).Seconds()
		if s.stepBusy {
			s.stats.BusySteps++
			s.stats.BusySeconds += dt
		} else {
			s.stats.IdleSteps++
			s.stats.IdleSeconds += dt
		}
	}
	s.stepsSeen, s.stepAt, s.stepCkpt, s.stepBusy = true, now, false, busy
}

// CheckpointBegins marks the start of a checkpoint (the level-1 write).
func (s *Scheduler) CheckpointBegins() {
	s.stepCkpt = true
	s.ckptAt = s.cfg.Clock()
}

// Committed accounts the level-1 checkpoint just committed (its blocking
// time, and the computation since the previous one).
func (s *Scheduler) Committed() {
	s.stats.Level1++
	s.stats.Level1Seconds += s.cfg.Clock().Sub(s.ckptAt).Seconds()
	if s.taken > 0 {
		s.stats.Spans++
		s.stats.SpanSeconds += s.ckptAt.Sub(s.lastEnd).Seconds()
	}
	s.taken++
}

// CheckpointEnds marks the end of the checkpoint, flush included.
func (s *Scheduler) CheckpointEnds() { s.lastEnd = s.cfg.Clock() }

// Inputs are one rank's measurements for choosing K (seconds, finite).
type Inputs struct {
	C1, Flush, Alpha, Interval float64
}

func (in Inputs) finite() Inputs {
	fix := func(x float64) float64 {
		if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
			return 0
		}
		return x
	}
	return Inputs{fix(in.C1), fix(in.Flush), fix(in.Alpha), fix(in.Interval)}
}

// Measured is what this rank measured for choosing K, with what the
// launches before it did; interval is the checkpoint interval in force
// (0 when the application decides itself when to checkpoint: the mean
// computation between its checkpoints stands for it).
func (s *Scheduler) Measured(interval time.Duration) Inputs {
	seen := s.cfg.Prior.Add(s.stats)
	in := Inputs{C1: seen.Level1Cost(), Alpha: seen.Alpha(), Interval: interval.Seconds()}
	if s.cfg.NonBlocking {
		in.Flush = seen.MeanLatency()
	} else {
		in.Flush = seen.MeanSeconds()
	}
	if in.Interval <= 0 {
		in.Interval = seen.Spacing()
	}
	return in.finite()
}

// Due tells whether checkpoint id, just committed, goes to the shared
// tier. With auto, pooled are every rank's Measured: each rank takes the
// largest of each, so all choose the same K (a choice that fails keeps
// the K before, and says why in KError).
func (s *Scheduler) Due(id uint64, pooled []Inputs) bool {
	if !s.cfg.Every.Auto {
		return id%uint64(s.k) == 0
	}
	var agg Inputs
	for _, in := range pooled {
		agg.C1, agg.Flush, agg.Alpha = max(agg.C1, in.C1), max(agg.Flush, in.Flush), max(agg.Alpha, in.Alpha)
		agg.Interval = max(agg.Interval, in.Interval)
	}
	sec := func(x float64) time.Duration { return time.Duration(x * float64(time.Second)) }
	k, err := policy.ChooseK(policy.FlushInputs{Interval: sec(agg.Interval), Level1Cost: sec(agg.C1),
		Level2MTTI: s.cfg.Every.Level2MTTI, NonBlocking: s.cfg.NonBlocking, FlushCost: sec(agg.Flush),
		Alpha: agg.Alpha, Level1MTTI: s.cfg.Level1MTTI})
	s.stats.KError = ""
	if err != nil {
		// Every rank fails alike (the same pooled inputs): K stays.
		s.stats.KError = err.Error()
	} else {
		s.k = k
	}
	s.stats.K = s.k
	if s.last == 0 && id > 1 {
		s.last = id - 1 // a restarted job counts from where it restored
	}
	return id >= s.last+uint64(s.k)
}

// Begin counts a flush due; it returns the time it began.
func (s *Scheduler) Begin() time.Time {
	s.stats.Due++
	s.stats.K = s.k
	if s.cfg.NonBlocking {
		s.stats.Mode = ModeNonBlocking
	} else {
		s.stats.Mode = ModeBlocking
	}
	return s.cfg.Clock()
}

// Flushed counts a blocking flush of checkpoint id that began at start and
// is durable now.
func (s *Scheduler) Flushed(id uint64, start time.Time) {
	s.stats.Started++
	s.stats.Seconds += s.cfg.Clock().Sub(start).Seconds()
	s.last = id
}

// Waited counts the wait, begun at start, for the previous non-blocking
// flush (busy policy Wait).
func (s *Scheduler) Waited(start time.Time) {
	s.stats.Waited += s.cfg.Clock().Sub(start).Seconds()
}

// Skipped counts a flush skipped because the previous one still ran.
func (s *Scheduler) Skipped() { s.stats.Skipped++ }

// Started counts the non-blocking flush of checkpoint id as started: every
// rank does, to agree on when the next one is due, whether or not its node
// announces anything.
func (s *Scheduler) Started(id uint64) {
	s.stats.Started++
	s.last = id
}

// Failed counts a flush that failed for reason (the checkpoint is safe at
// level 1; the job goes on).
func (s *Scheduler) Failed(reason string) {
	s.stats.Failed++
	s.stats.LastFailure = reason
}

// Abandoned counts the flush of checkpoint id as failed for reason before
// it started (waiting for the previous one failed): the next one is due K
// checkpoints on, as on the ranks that did start it, so that all agree.
func (s *Scheduler) Abandoned(id uint64, reason string) {
	s.Failed(reason)
	s.last = id
}

// Announced follows checkpoint name's non-blocking flush until it ends.
func (s *Scheduler) Announced(name string) { s.track.Add(name) }

// Refresh counts the followed flushes that finished, as states tell.
func (s *Scheduler) Refresh(states States) {
	if states != nil {
		s.track.Refresh(states, &s.stats)
	}
}
