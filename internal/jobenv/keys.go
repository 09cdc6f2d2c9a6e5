package jobenv

import (
	"encoding/json"
	"strings"
)

// Keys rank 0 publishes for the launcher in the coordinator's key–value
// service.
const (
	// KeyRestored: after Restart, where the rank restored from (Restored).
	KeyRestored = "ckpt/restored"
	// KeyResult: the job's result line, before rank 0 leaves (plain text).
	KeyResult = "ckpt/result"
	// KeyFlush: what the launch's flushes to the shared tier did
	// (FlushStats), after each one that fell due.
	KeyFlush = "ckpt/flush"
)

// Exit statuses of a rank, which tell the launcher whether a relaunch can
// help (the values of sysexits.h).
const (
	// ExitConfig (EX_CONFIG): a configuration error (a redundancy scheme
	// the nodes cannot hold, an unusable shared tier, a problem that does
	// not fit the number of ranks). A relaunch would fail the same way:
	// the launcher gives up at once.
	ExitConfig = 78
	// ExitJobFailed (EX_TEMPFAIL): the rank stopped because the job
	// failed elsewhere (the coordinator aborted it, or a peer or the
	// coordinator was lost). It is a symptom, never the cause.
	ExitJobFailed = 75
)

// Restored is the payload of KeyRestored: where a launch restored from.
type Restored struct {
	Source     string // cache, rebuild, shared, or none (a start from scratch)
	Checkpoint string // its name ("" with none)
}

// Sources of Restored.
const (
	SourceCache   = "cache"
	SourceRebuild = "rebuild"
	SourceShared  = "shared"
	SourceNone    = "none"
)

// Encode is "SOURCE NAME", or the source alone without a checkpoint.
func (r Restored) Encode() []byte {
	if r.Checkpoint == "" {
		return []byte(r.Source)
	}
	return []byte(r.Source + " " + r.Checkpoint)
}

// DecodeRestored reads Encode's form; whatever follows the first blank is
// the checkpoint's name.
func DecodeRestored(b []byte) Restored {
	src, name, _ := strings.Cut(string(b), " ")
	return Restored{Source: src, Checkpoint: name}
}

// FlushStats count what a job's flushes did in one launch, as rank 0 saw
// them (every rank takes the same decisions; finished non-blocking flushes
// are those of rank 0's node): the payload of KeyFlush and VarFlushPrior,
// one JSON form (Encode). The store's ckpt.FlushStats has the same fields
// and converts to it.
type FlushStats struct {
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
	// checkpoint; empty when it could.
	KError string `json:"k_error,omitempty"`
	// Level1 and Level1Seconds: checkpoints taken and the time they
	// blocked the application before any flush.
	Level1        int     `json:"level1"`
	Level1Seconds float64 `json:"level1_seconds"`
	// Spans and SpanSeconds: stretches of computation between consecutive
	// checkpoints and their summed durations.
	Spans       int     `json:"spans"`
	SpanSeconds float64 `json:"span_seconds"`
	// Steps while a flush of rank 0's node ran (Busy) and while none did
	// (Idle), and their summed durations.
	BusySteps   int     `json:"busy_steps"`
	BusySeconds float64 `json:"busy_seconds"`
	IdleSteps   int     `json:"idle_steps"`
	IdleSeconds float64 `json:"idle_seconds"`
}

// Encode is the statistics' JSON form (an error for a NaN or infinite
// time).
func (f FlushStats) Encode() ([]byte, error) { return json.Marshal(f) }

// DecodeFlushStats reads Encode's form.
func DecodeFlushStats(b []byte) (FlushStats, error) {
	var f FlushStats
	err := json.Unmarshal(b, &f)
	return f, err
}

// Add returns the statistics of two launches (f the earlier) together:
// counts and times summed; the mode, K and the last failure those of g
// where it has them.
func (f FlushStats) Add(g FlushStats) FlushStats {
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
