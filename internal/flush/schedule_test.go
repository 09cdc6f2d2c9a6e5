package flush

import (
	"math"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/policy"
)

// fakeClock is the time a test sets.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

func newFake(cfg Config) (*Scheduler, *fakeClock) {
	c := &fakeClock{t: time.Unix(1700000000, 0)}
	cfg.Clock = c.now
	return NewScheduler(cfg), c
}

// A fixed K flushes every K-th checkpoint ID, counted across launches
// (IDs, not this launch's checkpoints), and counts a blocking flush's time.
func TestSchedulerEveryK(t *testing.T) {
	s, clk := newFake(Config{Every: policy.FlushEvery{K: 3}})
	if s.Auto() || s.K() != 3 || s.WhenBusy() != Skip {
		t.Fatalf("auto %v, K %d, busy %q: want fixed 3, skip", s.Auto(), s.K(), s.WhenBusy())
	}
	var due []uint64
	for id := uint64(4); id <= 12; id++ { // a relaunch restored ID 3
		if s.Due(id, nil) {
			due = append(due, id)
			start := s.Begin()
			clk.advance(250 * time.Millisecond)
			s.Flushed(id, start)
		}
	}
	if len(due) != 3 || due[0] != 6 || due[1] != 9 || due[2] != 12 {
		t.Fatalf("due at %v, want [6 9 12]", due)
	}
	f := s.Stats()
	if f != (Stats{Mode: ModeBlocking, K: 3, Due: 3, Started: 3, Seconds: 0.75}) {
		t.Errorf("stats %+v", f)
	}
	if f.MeanSeconds() != 0.25 {
		t.Errorf("mean blocking flush %v s, want 0.25", f.MeanSeconds())
	}
}

// checkpoint runs one level-1 checkpoint of cost c1 after compute of
// computation, on the fake clock.
func checkpoint(s *Scheduler, clk *fakeClock, compute, c1 time.Duration) {
	clk.advance(compute)
	s.CheckpointBegins()
	clk.advance(c1)
	s.Committed()
}

// Auto-K: until a flush is measured, K is 1 (so that one is); once the
// level-1 cost, the flush cost and the interval are measured, K is the
// Markov model's choice for the pooled measurements (the largest of each
// rank's), and the next flush is due K checkpoints after the last one.
func TestSchedulerAutoK(t *testing.T) {
	mtti := time.Hour
	s, clk := newFake(Config{Every: policy.FlushEvery{Auto: true, Level2MTTI: mtti}})
	checkpoint(s, clk, 0, 10*time.Millisecond)
	in := s.Measured(0)
	if in.Flush != 0 || in.Interval != 0 || math.Abs(in.C1-0.01) > 1e-9 {
		t.Fatalf("measured before any flush or span: %+v", in)
	}
	if !s.Due(1, []Inputs{in}) || s.K() != 1 {
		t.Fatalf("nothing measured: want K 1 and the first checkpoint due, K %d", s.K())
	}
	start := s.Begin()
	clk.advance(2 * time.Second) // a slow shared tier
	s.Flushed(1, start)
	s.CheckpointEnds()

	checkpoint(s, clk, 5*time.Second, 10*time.Millisecond)
	mine := s.Measured(0) // the application decides when: the span stands for the interval
	if mine.Flush != 2 || mine.Interval != 5 {
		t.Fatalf("measured %+v: want a flush of 2 s, an interval of 5 s", mine)
	}
	other := Inputs{C1: 0.02, Flush: 3, Interval: 4} // a slower rank
	due := s.Due(2, []Inputs{mine, other})
	want, err := policy.ChooseK(policy.FlushInputs{Interval: 5 * time.Second, Level1Cost: 20 * time.Millisecond,
		Level2MTTI: mtti, FlushCost: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if want <= 2 {
		t.Fatalf("the model chose K %d: the test needs a costly flush", want)
	}
	if s.K() != want || s.Stats().K != want || s.Stats().KError != "" {
		t.Fatalf("K %d (stats %+v), want the model's %d from the pooled maxima", s.K(), s.Stats(), want)
	}
	if due {
		t.Error("checkpoint 2 due one after the last flush")
	}
	for id := uint64(3); id < 1+uint64(want); id++ {
		if s.Due(id, []Inputs{mine, other}) {
			t.Fatalf("checkpoint %d due, want the next at %d", id, 1+want)
		}
	}
	if !s.Due(1+uint64(want), []Inputs{mine, other}) {
		t.Errorf("checkpoint %d not due", 1+want)
	}
}

// A choice of K that fails (no interval known) keeps the K before and
// says why.
func TestSchedulerAutoKError(t *testing.T) {
	s, _ := newFake(Config{Every: policy.FlushEvery{Auto: true, Level2MTTI: time.Hour}})
	s.Due(1, []Inputs{{C1: 0.01, Flush: 2}})
	if f := s.Stats(); s.K() != 1 || f.K != 1 || f.KError == "" {
		t.Errorf("K %d, stats %+v: want K 1 kept and the reason", s.K(), f)
	}
}

// The prior launches' statistics count as measured: a relaunched job
// chooses K from them at once, counting from the checkpoint it restored.
func TestSchedulerPrior(t *testing.T) {
	prior := Stats{Mode: ModeBlocking, K: 12, Due: 2, Started: 2, Seconds: 4, Level1: 4, Level1Seconds: 0.04,
		Spans: 3, SpanSeconds: 15}
	s, _ := newFake(Config{Every: policy.FlushEvery{Auto: true, Level2MTTI: time.Hour}, Prior: prior})
	in := s.Measured(0)
	if in != (Inputs{C1: 0.01, Flush: 2, Interval: 5}) {
		t.Fatalf("measured from the prior launches: %+v", in)
	}
	want, _ := policy.ChooseK(policy.FlushInputs{Interval: 5 * time.Second, Level1Cost: 10 * time.Millisecond,
		Level2MTTI: time.Hour, FlushCost: 2 * time.Second})
	if s.Due(20, []Inputs{in}) != (want <= 1) || s.K() != want {
		t.Fatalf("K %d, want %d", s.K(), want)
	}
	if !s.Due(19+uint64(want), []Inputs{in}) {
		t.Errorf("restored at 20: checkpoint %d not due", 19+want)
	}
	if f := s.Stats(); f.Due != 0 || f.Mode != "" {
		t.Errorf("this launch's stats %+v hold the prior's", f)
	}
}

// Busy → skip: the flush is skipped, counted, and (auto) tried again at
// the next checkpoint, since none started.
func TestSchedulerBusySkip(t *testing.T) {
	s, _ := newFake(Config{Every: policy.FlushEvery{Auto: true, Level2MTTI: time.Hour}, NonBlocking: true})
	if s.WhenBusy() != Skip {
		t.Fatalf("default busy policy %q", s.WhenBusy())
	}
	if !s.Due(1, nil) {
		t.Fatal("checkpoint 1 not due")
	}
	s.Begin()
	s.Started(1)
	s.Announced("c1")
	if !s.Due(2, nil) {
		t.Fatal("checkpoint 2 not due at K 1")
	}
	s.Begin()
	s.Skipped() // c1 still pending
	if !s.Due(3, nil) {
		t.Fatal("checkpoint 3 not due after a skip")
	}
	if f := s.Stats(); f != (Stats{Mode: ModeNonBlocking, K: 1, Due: 2, Started: 1, Skipped: 1}) {
		t.Errorf("stats %+v", f)
	}
}

// Busy → wait: the time waited for the previous flush is counted; a wait
// that fails counts the flush failed and moves the next due one on, as on
// the ranks that started it.
func TestSchedulerBusyWait(t *testing.T) {
	s, clk := newFake(Config{Every: policy.FlushEvery{K: 1}, NonBlocking: true, Busy: Wait})
	if s.WhenBusy() != Wait {
		t.Fatalf("busy policy %q", s.WhenBusy())
	}
	s.Due(1, nil)
	start := s.Begin()
	clk.advance(1500 * time.Millisecond)
	s.Waited(start)
	s.Started(1)
	s.Due(2, nil)
	s.Begin()
	s.Abandoned(2, "stage: the staging server refused this client: token")
	f := s.Stats()
	if f.Waited != 1.5 || f.Started != 1 || f.Failed != 1 || f.LastFailure == "" || f.Due != 2 {
		t.Errorf("stats %+v", f)
	}
}

// A failed announcement counts as a failed flush; announced flushes are
// counted as they finish, with their latency.
func TestSchedulerFailedFlush(t *testing.T) {
	s, _ := newFake(Config{Every: policy.FlushEvery{Auto: true, Level2MTTI: time.Hour}, NonBlocking: true})
	states := scriptedStates{}
	s.Due(1, nil)
	s.Begin()
	s.Started(1)
	s.Failed("stage: announce: refused")
	s.Due(2, nil)
	s.Begin()
	s.Started(2)
	s.Announced("c2")
	states["c2"] = scripted{st: Pending}
	s.Refresh(states)
	if f := s.Stats(); f.Durable != 0 || f.Failed != 1 {
		t.Fatalf("c2 pending: %+v", f)
	}
	states["c2"] = scripted{st: Failed, reason: "shared tier: disk full", latency: time.Second}
	s.Refresh(states)
	f := s.Stats()
	if f.Failed != 2 || f.LastFailure != "shared tier: disk full" || f.Durable != 0 || !math.IsNaN(f.MeanLatency()) {
		t.Errorf("stats %+v", f)
	}
	if in := s.Measured(time.Second); in.Flush != 0 {
		t.Errorf("a failed flush measured as a cost: %+v", in)
	}
}

// The steps NeedCheckpoint sees are timed busy or idle by whether a flush
// ran as each began; a step that took a checkpoint is left out (α).
func TestSchedulerSteps(t *testing.T) {
	s, clk := newFake(Config{Every: policy.FlushEvery{K: 1}, NonBlocking: true})
	s.Step(false) // the first step begins: nothing ended
	clk.advance(time.Second)
	s.Step(true) // an idle step ended; a flush runs as the next begins
	clk.advance(3 * time.Second)
	s.Step(true) // a busy step ended
	s.CheckpointBegins()
	clk.advance(10 * time.Second)
	s.Committed()
	s.CheckpointEnds()
	s.Step(false) // the step that took the checkpoint: left out
	clk.advance(time.Second)
	s.Step(false)
	f := s.Stats()
	if f.IdleSteps != 2 || f.IdleSeconds != 2 || f.BusySteps != 1 || f.BusySeconds != 3 {
		t.Fatalf("steps %+v", f)
	}
	if f.Alpha() != 2 {
		t.Errorf("α %v, want 3/1 - 1", f.Alpha())
	}
	if f.Level1 != 1 || f.Level1Seconds != 10 || f.Spans != 0 {
		t.Errorf("level 1 %+v", f)
	}
	clk.advance(4 * time.Second)
	s.CheckpointBegins()
	clk.advance(time.Second)
	s.Committed()
	if f := s.Stats(); f.Spans != 1 || f.SpanSeconds != 5 || f.Spacing() != 5 || f.Level1Cost() != 5.5 {
		t.Errorf("after a second checkpoint: %+v", f)
	}
}
