// Package flushstats holds the statistics of a job's flushes to the
// shared tier (what ckpt.Job.FlushStats returns, ckpt.FlushStats being
// this package's Stats) and their one JSON form: what a job's rank 0
// publishes for its launcher, what the launcher hands a relaunch, and what
// `ckpt run --json` and `ckpt status --json` show.
//
// It is a leaf: it imports nothing of ckpt, so that the public API and the
// runtime's packages share the one definition.
package flushstats

import (
	"encoding/json"
	"math"
)

// Stats count what a job's flushes did in one launch, as rank 0 saw them
// (every rank takes the same decisions; finished non-blocking flushes are
// those of rank 0's node). The launcher sums the launches' (Add) and reads
// the same fields, in the same JSON form (Encode).
type Stats struct {
	Mode    string  `json:"mode"`    // "blocking" or "nonblocking"
	K       int     `json:"k"`       // the K in force at the last checkpoint (auto: the last chosen)
	Due     int     `json:"due"`     // checkpoints due for the shared tier
	Started int     `json:"started"` // blocking: completed; non-blocking: announced
	Skipped int     `json:"skipped"` // non-blocking, skip: the previous flush still ran
	Waited  float64 `json:"waited_seconds"`
	// Seconds is the time the application spent in blocking flushes.
	Seconds float64 `json:"seconds"`
	// Durable and Failed count non-blocking flushes finished; Latency is
	// their summed time from announcement to durable.
	Durable int     `json:"durable"`
	Failed  int     `json:"failed"`
	Latency float64 `json:"latency_seconds"`
	// LastFailure is the reason the last failed flush gave.
	LastFailure string `json:"last_failure,omitempty"`
	// KError says why --flush-every auto could not choose K at the last
	// checkpoint (the K before stayed in force); empty when it could.
	KError string `json:"k_error,omitempty"`
	// Level1 and Level1Seconds count the checkpoints taken and the time
	// they blocked the application before any flush (the level-1 cost).
	Level1        int     `json:"level1"`
	Level1Seconds float64 `json:"level1_seconds"`
	// Spans and SpanSeconds count the stretches of computation between
	// consecutive checkpoints and their summed durations: the interval in
	// force when the application decides itself when to checkpoint.
	Spans       int     `json:"spans"`
	SpanSeconds float64 `json:"span_seconds"`
	// Steps while a flush of rank 0's node ran (Busy) and while none did
	// (Idle), and their summed durations, as Job.NeedCheckpoint saw them
	// (steps that took a checkpoint excluded): the slowdown of computation
	// by the background copy, the overhead factor α of Sato et al. 2012,
	// measured in the run itself. The idle steps are counted in every
	// mode, with no flush at all too (StepSeconds).
	BusySteps   int     `json:"busy_steps"`
	BusySeconds float64 `json:"busy_seconds"`
	IdleSteps   int     `json:"idle_steps"`
	IdleSeconds float64 `json:"idle_seconds"`
}

// Mode values.
const (
	ModeBlocking    = "blocking"
	ModeNonBlocking = "nonblocking"
)

// Encode is the statistics' JSON form (an error for a NaN or infinite
// time).
func (f Stats) Encode() ([]byte, error) { return json.Marshal(f) }

// Decode reads Encode's form.
func Decode(b []byte) (Stats, error) {
	var f Stats
	err := json.Unmarshal(b, &f)
	return f, err
}

// Add returns the statistics of two launches (f the earlier) together:
// counts and times summed; the mode, K and the last failure those of g
// where it has them.
func (f Stats) Add(g Stats) Stats {
	if g.Mode != "" {
		f.Mode = g.Mode
	}
	if g.K > 0 {
		f.K = g.K
	}
	if g.LastFailure != "" {
		f.LastFailure = g.LastFailure
	}
	f.KError = g.KError
	f.Due += g.Due
	f.Started += g.Started
	f.Skipped += g.Skipped
	f.Waited += g.Waited
	f.Seconds += g.Seconds
	f.Durable += g.Durable
	f.Failed += g.Failed
	f.Latency += g.Latency
	f.Level1 += g.Level1
	f.Level1Seconds += g.Level1Seconds
	f.Spans += g.Spans
	f.SpanSeconds += g.SpanSeconds
	f.BusySteps += g.BusySteps
	f.BusySeconds += g.BusySeconds
	f.IdleSteps += g.IdleSteps
	f.IdleSeconds += g.IdleSeconds
	return f
}

// Spacing is the mean computation between consecutive checkpoints (NaN
// before two were taken).
func (f Stats) Spacing() float64 {
	if f.Spans == 0 {
		return math.NaN()
	}
	return f.SpanSeconds / float64(f.Spans)
}

// Alpha is the overhead factor the steps measured: the mean step while a
// flush ran over the mean step while none did, less one (NaN without
// steps of both kinds).
func (f Stats) Alpha() float64 {
	if f.BusySteps == 0 || f.IdleSteps == 0 || f.IdleSeconds <= 0 {
		return math.NaN()
	}
	return (f.BusySeconds/float64(f.BusySteps))/(f.IdleSeconds/float64(f.IdleSteps)) - 1
}

// StepSeconds is the mean step while no flush of rank 0's node ran,
// steps that took a checkpoint excluded: the job's speed measured in the
// run itself, in every mode (NaN without such a step).
func (f Stats) StepSeconds() float64 {
	if f.IdleSteps == 0 {
		return math.NaN()
	}
	return f.IdleSeconds / float64(f.IdleSteps)
}

// Level1Cost is the mean time a checkpoint blocked the application before
// any flush (NaN if none was taken).
func (f Stats) Level1Cost() float64 {
	if f.Level1 == 0 {
		return math.NaN()
	}
	return f.Level1Seconds / float64(f.Level1)
}

// MeanSeconds is the mean time the application spent in one blocking
// flush (NaN if none ran).
func (f Stats) MeanSeconds() float64 {
	if f.Mode != ModeBlocking || f.Started == 0 {
		return math.NaN()
	}
	return f.Seconds / float64(f.Started)
}

// MeanLatency is the mean time from announcing a non-blocking flush to its
// part being durable (NaN if none finished).
func (f Stats) MeanLatency() float64 {
	if f.Durable == 0 {
		return math.NaN()
	}
	return f.Latency / float64(f.Durable)
}
