package jobdir

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/ckpt/ckpt/internal/storage/local"
)

// Status is what a running job publishes about itself in status.json,
// for `ckpt status`. It says only what the runner knows: a field it does
// not know is left out (nil), never guessed.
type Status struct {
	Job   string `json:"job"`
	PID   int    `json:"pid"`
	State string `json:"state"` // starting, running, restarting, finished, halted, failed
	// Attempt counts the launches so far (1 for the first); Incarnation
	// is the current one's (0 for the first).
	Attempt     int       `json:"attempt"`
	Incarnation uint64    `json:"incarnation"`
	Started     time.Time `json:"started"`
	Updated     time.Time `json:"updated"`
	Interval    string    `json:"interval"` // the checkpoint policy
	// Step is the step of the job's last decision round (the ranks agree
	// on whether to checkpoint every so many steps); nil before the first.
	Step *int64 `json:"step,omitempty"`
	// Restored is where the current attempt restored from.
	Restored *Restored `json:"restored,omitempty"`
	// LastCheckpoint is the newest checkpoint the job committed.
	LastCheckpoint *Checkpoint `json:"last_checkpoint,omitempty"`
	Checkpoints    int         `json:"checkpoints"` // committed, all attempts
	Failures       int         `json:"failures"`    // attempts that failed
	LastFailure    string      `json:"last_failure,omitempty"`
	HaltRequested  bool        `json:"halt_requested"`
	// CheckpointRequests counts the 'ckpt checkpoint' requests the job
	// took; each makes its next decision round checkpoint.
	CheckpointRequests int `json:"checkpoint_requests"`
	// Flush is what rank 0 last reported of its flushes to the shared
	// tier (the store's FlushStats), if anything.
	Flush json.RawMessage `json:"flush,omitempty"`
}

// Restored is where an attempt restored from.
type Restored struct {
	Source     string `json:"source"` // cache, rebuild, shared, none
	Checkpoint string `json:"checkpoint,omitempty"`
}

// Checkpoint is a committed checkpoint.
type Checkpoint struct {
	Name string `json:"name"`
	// Step is the decision round's step that called for it; nil when the
	// application checkpointed of its own accord.
	Step *int64 `json:"step,omitempty"`
	// Level is where it is: "cache", the node-local level, protected
	// across nodes by Redundancy (a checkpoint commits there first;
	// Status.Flush says what went on to the shared tier).
	Level       string    `json:"level"`
	Redundancy  string    `json:"redundancy"`
	Incarnation uint64    `json:"incarnation"`
	Committed   time.Time `json:"committed"`
}

// WriteStatus replaces the job's status whole.
func (d Dir) WriteStatus(s Status) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return local.WriteFile(d.file(StatusFile), append(b, '\n'), fileMode)
}

// ReadStatus reads the job's last status.
func (d Dir) ReadStatus() (Status, error) {
	var s Status
	b, err := os.ReadFile(d.file(StatusFile))
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("%s: %w", d.file(StatusFile), err)
	}
	return s, nil
}

// Request leaves a request (HaltFile or CheckpointFile) for the running
// job, in its own directory and nowhere else.
func (d Dir) Request(name string) error {
	if name != HaltFile && name != CheckpointFile {
		return fmt.Errorf("jobdir: %q is not a request", name)
	}
	return os.WriteFile(d.file(name), nil, fileMode)
}

// Take consumes a request: true if it was there.
func (d Dir) Take(name string) bool {
	return os.Remove(d.file(name)) == nil
}

// Pending says whether a request waits to be taken.
func (d Dir) Pending(name string) bool { return fileExists(d.file(name)) }

// ErrEnded is WaitCommit's error when the job stops running before it
// commits a checkpoint.
var ErrEnded = errors.New("job ended")

// ErrNoCommit is WaitCommit's error when the job committed no checkpoint
// within the time given.
var ErrNoCommit = errors.New("no checkpoint committed in time")

// waitPoll is how often WaitCommit reads the job's status.
const waitPoll = 50 * time.Millisecond

// WaitCommit waits until the job's status counts more than after
// checkpoints committed, and returns the last one. It fails with ErrEnded
// when no process holds the job's lock any more, with ErrNoCommit after
// limit, or with ctx's error.
func (d Dir) WaitCommit(ctx context.Context, after int, limit time.Duration) (*Checkpoint, error) {
	deadline := time.Now().Add(limit)
	tick := time.NewTicker(waitPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
		if st, err := d.ReadStatus(); err == nil && st.Checkpoints > after && st.LastCheckpoint != nil {
			return st.LastCheckpoint, nil
		}
		if _, running, _ := d.Holder(); !running {
			return nil, ErrEnded
		}
		if time.Now().After(deadline) {
			return nil, ErrNoCommit
		}
	}
}
