package launch

import (
	"bytes"
	"os"
	"sync"
	"time"

	"github.com/ckpt/ckpt/internal/jobdir"
	"github.com/ckpt/ckpt/internal/jobenv"
	"github.com/ckpt/ckpt/internal/policy"
)

// Tracker keeps the job's status file up to date from the launcher's
// and the coordinator's events, and hands the coordinators the requests
// to checkpoint now that 'ckpt checkpoint' leaves in the directory. Track
// starts it; Finish stops it.
type Tracker struct {
	dir    jobdir.Dir
	coords *Coordinators

	mu      sync.Mutex
	st      jobdir.Status
	dirty   bool
	pending *int64      // the step of a checkpoint decided, not yet committed
	cur     Coordinator // the current attempt's
	flush   []byte

	quit, done chan struct{}
}

// trackerPoll is how often the tracker looks for requests and writes a
// changed status: often enough for a person, rarely enough to cost nothing.
const trackerPoll = 50 * time.Millisecond

// Track starts the tracker of the job in dir and hooks it into the
// launcher's configuration and the coordinators (after whatever hooks
// they have). interval is the job's checkpoint policy as the status shows
// it, redundancy the level its commits are reported at.
func Track(dir jobdir.Dir, interval, redundancy string, cfg *Config, coords *Coordinators) *Tracker {
	t := &Tracker{dir: dir, coords: coords, quit: make(chan struct{}), done: make(chan struct{})}
	now := time.Now()
	t.st = jobdir.Status{Job: t.dir.Name, PID: os.Getpid(), State: "starting", Started: now, Updated: now,
		Interval: interval}
	t.write()

	newCoord := cfg.NewCoordinator
	cfg.NewCoordinator = func(inc uint64, token string) (Coordinator, error) {
		c, err := newCoord(inc, token)
		if err == nil {
			t.mu.Lock()
			t.cur, t.flush, t.pending = c, nil, nil
			t.mu.Unlock()
		}
		return c, err
	}
	event := cfg.Event
	cfg.Event = func(e Event) {
		t.event(e)
		if event != nil {
			event(e)
		}
	}
	onCommit := coords.OnCommit
	coords.OnCommit = func(inc uint64, name string) {
		t.mu.Lock()
		t.st.Checkpoints++
		t.st.LastCheckpoint = &jobdir.Checkpoint{Name: name, Step: t.pending, Level: "cache",
			Redundancy: redundancy, Incarnation: inc, Committed: time.Now()}
		t.pending = nil
		t.dirty = true
		t.mu.Unlock()
		if onCommit != nil {
			onCommit(inc, name)
		}
	}
	onDecision := coords.OnDecision
	coords.OnDecision = func(step int64, d policy.Decision) {
		t.mu.Lock()
		t.st.Step = &step
		if d.Checkpoint {
			t.pending = &step
		}
		t.dirty = true
		t.mu.Unlock()
		if onDecision != nil {
			onDecision(step, d)
		}
	}
	go t.loop()
	return t
}

func (t *Tracker) event(e Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch e.Kind {
	case "launch":
		t.st.Attempt = int(e.Incarnation) + 1
		t.st.Incarnation = e.Incarnation
		t.st.State = "running"
		t.st.Restored = nil
	case "restored":
		t.st.Restored = &jobdir.Restored{Source: e.Source, Checkpoint: e.Checkpoint}
	case "fail":
		t.st.Failures++
		t.st.LastFailure = e.Reason
		t.st.State = "restarting"
	case "halt":
		t.st.HaltRequested = true
	case "finish":
		t.st.State = "finished"
	default:
		return
	}
	t.dirty = true
}

// loop takes requests and writes the status when it changed.
func (t *Tracker) loop() {
	defer close(t.done)
	tick := time.NewTicker(trackerPoll)
	defer tick.Stop()
	for {
		select {
		case <-t.quit:
			return
		case <-tick.C:
		}
		if t.dir.Take(jobdir.CheckpointFile) {
			t.coords.CheckpointNow()
			t.mu.Lock()
			t.st.CheckpointRequests++
			t.dirty = true
			t.mu.Unlock()
		}
		t.mu.Lock()
		cur := t.cur
		t.mu.Unlock()
		var flush []byte
		if cur != nil {
			// Not under t.mu: the hooks the coordinator's loop calls take it.
			flush, _ = cur.Value(jobenv.KeyFlush)
		}
		t.mu.Lock()
		if flush != nil && cur == t.cur && !bytes.Equal(flush, t.flush) {
			t.flush = flush
			t.st.Flush = append([]byte(nil), flush...)
			t.dirty = true
		}
		dirty := t.dirty
		t.mu.Unlock()
		if dirty {
			t.write()
		}
	}
}

// write writes the status if it changed. A status that cannot be written
// costs 'ckpt status' its news, not the job its run.
func (t *Tracker) write() {
	t.mu.Lock()
	t.st.Updated = time.Now()
	st := t.st
	t.dirty = false
	t.mu.Unlock()
	t.dir.WriteStatus(st)
}

// Finish stops the tracker and writes the job's last status.
func (t *Tracker) Finish(rep Report, err error) {
	close(t.quit)
	<-t.done
	t.mu.Lock()
	switch {
	case err != nil:
		t.st.State = "failed"
		t.st.LastFailure = err.Error()
	case rep.Halted:
		t.st.State = "halted"
	default:
		t.st.State = "finished"
	}
	t.mu.Unlock()
	t.write()
}
