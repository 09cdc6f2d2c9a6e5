package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/ckpt/ckpt/internal/jobdir"
	"github.com/ckpt/ckpt/internal/jobenv"
	"github.com/ckpt/ckpt/internal/launch"
	"github.com/ckpt/ckpt/internal/policy"
)

// A job's identity and directory on the side of `ckpt run`: which
// directory it runs in, the lock it holds there, and the status it
// publishes for `ckpt status` (the directory's layout is package jobdir's).

// jobSpec is what defines the job: what its checkpoints belong to.
func (s runSpec) jobSpec() jobdir.Spec {
	args := s.args
	if args == nil {
		args = []string{}
	}
	return jobdir.Spec{Program: s.program, Args: args, Ranks: s.ranks, Nodes: s.nodes,
		Redundancy: s.redundancy, Shared: s.shared}
}

// dir is the job's directory: its cache root.
func (s runSpec) dir() jobdir.Dir {
	d := jobdir.At(s.cacheRoot)
	if s.job != "" {
		d.Name = s.job
	}
	return d
}

// runJobDir chooses a run's job name and directory from --job and
// --cache-root: --job NAME is ROOT/NAME under the default root, --cache-root
// DIR is DIR itself, and without either the name is derived from
// everything that defines the job.
func runJobDir(job, cacheRoot string, spec jobdir.Spec) (name, dir string, err error) {
	switch {
	case job != "" && cacheRoot != "":
		return "", "", usagef("--job %s and --cache-root %s: give one (--cache-root is the job's directory itself)", job, cacheRoot)
	case cacheRoot != "":
		d := jobdir.At(cacheRoot)
		return d.Name, d.Path, nil
	case job == "":
		job = spec.DefaultName(os.Getenv)
	}
	d, err := jobdir.Named(jobdir.DefaultRoot(), job)
	if err != nil {
		return "", "", usagef("--job: %v", err)
	}
	return d.Name, d.Path, nil
}

// claim takes the job's directory for this run: its lock, and the record
// of its configuration. A job running already, a directory of another
// configuration or one holding what no job made is refused.
func (s *runSpec) claim() error {
	if s.lock != nil {
		return nil
	}
	l, err := s.dir().Acquire(s.jobSpec())
	switch {
	case errors.Is(err, jobdir.ErrNotJobDir):
		return usagef("--cache-root: %v; give a new or empty directory", err)
	case errors.Is(err, jobdir.ErrOtherSpec):
		return usageError{err}
	case err != nil:
		return err
	}
	s.lock = l
	return nil
}

// jobTracker keeps the job's status file up to date from the launcher's
// and the coordinator's events, and hands the coordinators the requests
// to checkpoint now that 'ckpt checkpoint' leaves in the directory.
type jobTracker struct {
	dir    jobdir.Dir
	coords *launch.Coordinators

	mu      sync.Mutex
	st      jobdir.Status
	dirty   bool
	pending *int64             // the step of a checkpoint decided, not yet committed
	cur     launch.Coordinator // the current attempt's
	flush   []byte

	quit, done chan struct{}
}

// trackerPoll is how often the tracker looks for requests and writes a
// changed status: often enough for a person, rarely enough to cost nothing.
const trackerPoll = 50 * time.Millisecond

// track starts the job's tracker and hooks it into the launcher's
// configuration and the coordinators (after whatever hooks they have).
func (s runSpec) track(cfg *launch.Config, coords *launch.Coordinators) *jobTracker {
	redundancy := s.redundancy
	if redundancy == "" {
		redundancy = "default"
	}
	t := &jobTracker{dir: s.dir(), coords: coords, quit: make(chan struct{}), done: make(chan struct{})}
	now := time.Now()
	t.st = jobdir.Status{Job: t.dir.Name, PID: os.Getpid(), State: "starting", Started: now, Updated: now,
		Interval: s.interval.String()}
	t.write()

	newCoord := cfg.NewCoordinator
	cfg.NewCoordinator = func(inc uint64, token string) (launch.Coordinator, error) {
		c, err := newCoord(inc, token)
		if err == nil {
			t.mu.Lock()
			t.cur, t.flush, t.pending = c, nil, nil
			t.mu.Unlock()
		}
		return c, err
	}
	event := cfg.Event
	cfg.Event = func(e launch.Event) {
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

func (t *jobTracker) event(e launch.Event) {
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
func (t *jobTracker) loop() {
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
func (t *jobTracker) write() {
	t.mu.Lock()
	t.st.Updated = time.Now()
	st := t.st
	t.dirty = false
	t.mu.Unlock()
	t.dir.WriteStatus(st)
}

// finish stops the tracker and writes the job's last status.
func (t *jobTracker) finish(rep launch.Report, err error) {
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

// statusLine says in a few words what a job's status is.
func statusLine(st jobdir.Status) string {
	line := fmt.Sprintf("%s, attempt %d", st.State, st.Attempt)
	if st.Step != nil {
		line += fmt.Sprintf(", step %d", *st.Step)
	}
	return line
}

// jobRef is how the other commands name this job: --job NAME when it
// lives under the default root, else --cache-root DIR.
func (s runSpec) jobRef() string {
	d := s.dir()
	if filepath.Dir(d.Path) == filepath.Clean(jobdir.DefaultRoot()) && d.Name == filepath.Base(d.Path) {
		return "--job " + d.Name
	}
	return "--cache-root " + d.Path
}
