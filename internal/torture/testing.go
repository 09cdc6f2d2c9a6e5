package torture

import (
	"context"
	"fmt"
	"time"
)

// Fake is a Runner of scripted jobs, for tests of the campaign and of what
// reads its Result: a job starts from scratch, commits a checkpoint every
// Every steps up to Steps, the state at step s having checksum Sum(s),
// and ends. After a fault that forces a restart it restores what Restore
// says (nil: the newest committed checkpoint, from the cache, correct).
type Fake struct {
	Steps, Every int64
	Sum          func(step int64) string
	Restore      func(f Fault, committed int64) (step int64, checksum, from string)
	// Skip says a fault finds nothing to hit; Stall, that the job is
	// silent after it; Fail, that its launcher ends without finishing
	// (Resume then restores the newest checkpoint). Nil: none.
	Skip, Stall, Fail func(Fault) bool
	// Resumed counts the calls of Resume.
	Resumed int
	// Injected is every fault injected, in order; Between, for every
	// fault the job was asked to inject (skipped ones too), how many
	// checkpoints it committed since the one before.
	Injected []Fault
	Between  []int
}

var _ Runner = (*Fake)(nil)

// FakeSum is a checksum of step, for Fake.Sum.
func FakeSum(step int64) string { return fmt.Sprintf("%016x", uint64(step)*0x9e3779b97f4a7c15) }

func (r *Fake) sum(step int64) string {
	if r.Sum == nil {
		return FakeSum(step)
	}
	return r.Sum(step)
}

// Reference is the scripted job without faults.
func (r *Fake) Reference(context.Context, Workload) ([]Event, error) {
	j := &fakeJob{r: r}
	var out []Event
	for {
		e := j.step()
		if e.Kind == "exit" {
			return out, nil
		}
		out = append(out, e)
	}
}

// Start starts a scripted job.
func (r *Fake) Start(context.Context, Workload, int) (Job, error) { return &fakeJob{r: r}, nil }

type fakeJob struct {
	r         *Fake
	step0     int64 // the state's step
	begun     bool
	done      bool
	exited    bool
	committed int64
	restore   *Event // the restore a fault made due
	count     int    // checkpoints since the last fault
	stalled   bool
	failed    bool // the launcher ended without finishing; Resume starts it again
}

func (j *fakeJob) step() Event {
	now := time.Now()
	switch {
	case j.restore != nil:
		e := *j.restore
		j.restore, j.step0, j.committed = nil, e.Step, e.Step
		e.At = now
		return e
	case !j.begun:
		j.begun = true
		return Event{Kind: "started", Step: 0, Checksum: j.r.sum(0), At: now}
	case j.step0 < j.r.Steps:
		j.step0 = min(j.step0+j.r.Every, j.r.Steps)
		j.committed = j.step0
		j.count++
		return Event{Kind: "checkpoint", Step: j.step0, Checksum: j.r.sum(j.step0), At: now}
	case !j.done:
		j.done = true
		return Event{Kind: "done", Step: j.step0, Checksum: j.r.sum(j.step0), At: now}
	}
	j.exited = true
	return Event{Kind: "exit", At: now}
}

func (j *fakeJob) Next(ctx context.Context) (Event, error) {
	if err := ctx.Err(); err != nil {
		return Event{}, err
	}
	if j.exited || j.stalled {
		<-ctx.Done() // nothing more will happen
		return Event{}, ctx.Err()
	}
	if j.failed {
		j.exited = true
		return Event{Kind: "exit", At: time.Now(), Err: "the launcher failed"}, nil
	}
	return j.step(), nil
}

func (j *fakeJob) Inject(_ context.Context, f Fault) (time.Time, error) {
	j.r.Between = append(j.r.Between, j.count)
	j.count = 0
	if j.r.Skip != nil && j.r.Skip(f) {
		return time.Time{}, fmt.Errorf("%w: a fake's fault", ErrNothingToHit)
	}
	j.r.Injected = append(j.r.Injected, f)
	j.stalled = j.r.Stall != nil && j.r.Stall(f)
	j.failed = j.r.Fail != nil && j.r.Fail(f)
	if f.Kind.Restarts() {
		step, sum, from := j.committed, j.r.sum(j.committed), "cache"
		if j.r.Restore != nil {
			step, sum, from = j.r.Restore(f, j.committed)
		}
		j.restore = &Event{Kind: "restored", Step: step, Checksum: sum, From: from}
	}
	return time.Now(), nil
}

func (j *fakeJob) Heal(context.Context, Fault) error { return nil }
func (j *fakeJob) Resume(context.Context) error {
	j.r.Resumed++
	j.failed, j.exited = false, false
	return nil
}
func (j *fakeJob) Close() error { return nil }
