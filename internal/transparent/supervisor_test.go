package transparent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/testwait"
)

// ranks runs a supervisor per rank of w until each returns.
type ranks struct {
	w       *world
	runners []*fakeRunner
	reports []Report
	errs    []error
	done    chan struct{}
}

func startRanks(t *testing.T, ctx context.Context, w *world, setup func(r *fakeRunner)) *ranks {
	t.Helper()
	return start(t, ctx, w, setup, nil)
}

// startRanksWith is startRanks with each rank's Config set up by config.
func startRanksWith(t *testing.T, ctx context.Context, w *world, config func(rank int, cfg *Config)) *ranks {
	t.Helper()
	return start(t, ctx, w, nil, config)
}

func start(t *testing.T, ctx context.Context, w *world, setup func(r *fakeRunner), config func(rank int, cfg *Config)) *ranks {
	t.Helper()
	rs := &ranks{w: w, runners: make([]*fakeRunner, w.n), reports: make([]Report, w.n), errs: make([]error, w.n), done: make(chan struct{})}
	var wg sync.WaitGroup
	for r := range int(w.n) {
		rs.runners[r] = &fakeRunner{w: w, rank: r}
		if setup != nil {
			setup(rs.runners[r])
		}
		cfg := Config{Runner: rs.runners[r], Tool: fakeTool(w), Scratch: t.TempDir(), Tick: time.Millisecond}
		if config != nil {
			config(r, &cfg)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			rs.reports[r], rs.errs[r] = Run(ctx, fakeJob{w: w, rank: r}, cfg)
		}()
	}
	go func() { wg.Wait(); close(rs.done) }()
	return rs
}

func (rs *ranks) wait(t *testing.T) {
	t.Helper()
	testwait.Recv(t, rs.done, "the supervisors' end")
}

// waitCommits waits until the world committed n checkpoints.
func waitCommits(t *testing.T, w *world, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for w.committed() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d checkpoints committed after 30s, want %d", w.committed(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// endAll ends every rank's current program with code.
func (rs *ranks) endAll(code int) {
	for _, r := range rs.runners {
		r.tree().end(code)
	}
}

// TestCheckpointIsAConsistentCut checks the order of a checkpoint across
// ranks: every tree frozen before any is dumped, every tree dumped before
// any resumes.
func TestCheckpointIsAConsistentCut(t *testing.T) {
	w := newWorld(3, 5)
	rs := startRanks(t, t.Context(), w, nil)
	waitCommits(t, w, 2)
	rs.endAll(0)
	rs.wait(t)
	for r, err := range rs.errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	ev := w.eventList()
	if len(ev) < 18 {
		t.Fatalf("events %q: want at least two checkpoints", ev)
	}
	// The first two checkpoints, taken while every program ran: 9 events
	// each.
	for i := 0; i < 18; i += 9 {
		round := ev[i : i+9]
		for j, e := range round {
			want := []string{"freeze", "dump", "thaw"}[j/3]
			if !strings.HasPrefix(e, want+" ") {
				t.Fatalf("checkpoint %d: events %q: event %d is %q, want a %s (all freezes, then all dumps, then all thaws)", i/9, round, j, e, want)
			}
		}
	}
	for r, rep := range rs.reports {
		if rep.Checkpoints < 2 || rep.ImageBytes == 0 {
			t.Errorf("rank %d: report %+v: want 2 checkpoints or more, with images", r, rep)
		}
	}
	if w.finished != 3 {
		t.Errorf("%d ranks finished, want 3", w.finished)
	}
}

// TestFreezeFailureFailsEveryRank: a rank that cannot freeze its program
// fails the checkpoint on every rank; no tree is dumped, every frozen one
// resumes, no checkpoint is committed.
func TestFreezeFailureFailsEveryRank(t *testing.T) {
	w := newWorld(3, 3)
	rs := startRanks(t, t.Context(), w, func(r *fakeRunner) {
		if r.rank == 1 {
			r.freeze = errors.New("cannot stop")
		}
	})
	rs.wait(t)
	for r, err := range rs.errs {
		if err == nil {
			t.Errorf("rank %d: no error; want the failed checkpoint", r)
		}
	}
	if !strings.Contains(rs.errs[1].Error(), "cannot stop") {
		t.Errorf("rank 1: %v: want its own freeze error", rs.errs[1])
	}
	if !strings.Contains(rs.errs[0].Error(), "another rank could not freeze") {
		t.Errorf("rank 0: %v: want another rank's freeze failure named", rs.errs[0])
	}
	ev := strings.Join(w.eventList(), ",")
	if strings.Contains(ev, "dump") || !strings.Contains(ev, "thaw 0") || !strings.Contains(ev, "thaw 2") {
		t.Errorf("events %s: want no dump, and ranks 0 and 2 thawed", ev)
	}
	if w.committed() != 0 {
		t.Errorf("%d checkpoints committed, want none", w.committed())
	}
}

// TestRestartRestoresEachRank: after a failure, every rank restores its
// tree from the newest checkpoint, with the step and output offsets it
// recorded, and goes on.
func TestRestartRestoresEachRank(t *testing.T) {
	w := newWorld(2, 4)
	ctx, cancel := context.WithCancel(t.Context())
	rs := startRanks(t, ctx, w, nil)
	waitCommits(t, w, 1)
	cancel() // the failure
	w.wake()
	rs.wait(t)
	name := w.names[len(w.names)-1]
	// A relaunch: new supervisors, the same world.
	w.seq = make([]int, 2)
	w.gathers = map[int][][]byte{}
	before := len(w.names)
	rs = startRanks(t, t.Context(), w, nil)
	waitCommits(t, w, before+1)
	rs.endAll(0)
	rs.wait(t)
	for r, run := range rs.runners {
		if rs.errs[r] != nil {
			t.Fatalf("rank %d: %v", r, rs.errs[r])
		}
		if rs.reports[r].Restored != name {
			t.Errorf("rank %d restored %q, want %q", r, rs.reports[r].Restored, name)
		}
		if len(run.restored) != 1 {
			t.Fatalf("rank %d: %d restores, want 1", r, len(run.restored))
		}
		m := run.restored[0]
		if m.Step%4 != 0 || m.Step == 0 || m.Stdout.Offset != int64(10*r) || m.Stdout.Pipe != 100 || len(m.Images) != 1 {
			t.Errorf("rank %d restored from %+v", r, m)
		}
	}
}

// TestRankWhoseProgramEnded: a rank's program that ends before the
// others' is recorded as ended in the checkpoints that follow, and its
// restart only cuts its output back; the job finishes when every program
// has ended.
func TestRankWhoseProgramEnded(t *testing.T) {
	w := newWorld(2, 2)
	ctx, cancel := context.WithCancel(t.Context())
	rs := startRanks(t, ctx, w, nil)
	waitCommits(t, w, 1)
	rs.runners[1].tree().end(0)
	n := w.committed()
	waitCommits(t, w, n+2) // at least one after rank 1's end was seen
	cancel()
	w.wake()
	rs.wait(t)
	w.seq = make([]int, 2)
	w.gathers = map[int][][]byte{}
	before := len(w.names)
	rs = startRanks(t, t.Context(), w, nil)
	waitCommits(t, w, before+1)
	rs.runners[0].tree().end(0)
	rs.wait(t)
	for r, err := range rs.errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	if len(rs.runners[1].ended) != 1 || len(rs.runners[1].restored) != 0 || rs.runners[1].tree() != nil {
		t.Errorf("rank 1: ended %v, restored %v: want its end restored, and no tree", rs.runners[1].ended, rs.runners[1].restored)
	} else if out, errs := fakeEnds(1); rs.runners[1].ended[0].Stdout.Offset != out.Offset || rs.runners[1].ended[0].Stderr.Offset != errs.Offset {
		// Its output is kept whole: cut back to where it ended, not to 0.
		t.Errorf("rank 1's output restored to %+v, %+v: want where it ended, %+v, %+v",
			rs.runners[1].ended[0].Stdout, rs.runners[1].ended[0].Stderr, out, errs)
	}
	if len(rs.runners[0].restored) != 1 {
		t.Errorf("rank 0: %d restores, want 1", len(rs.runners[0].restored))
	}
}

// TestProgramFailureEndsTheRank: a program that fails ends its rank with
// its status, for the launcher to relaunch the job.
func TestProgramFailureEndsTheRank(t *testing.T) {
	w := newWorld(1, 1000)
	rs := startRanks(t, t.Context(), w, nil)
	for rs.runners[0].tree() == nil {
		time.Sleep(time.Millisecond)
	}
	rs.runners[0].tree().end(3)
	rs.wait(t)
	var pe *ProgramError
	if !errors.As(rs.errs[0], &pe) || pe.Code != 3 {
		t.Fatalf("error %v: want the program's status 3", rs.errs[0])
	}
}

// TestCrashedDumpLeftoversRemoved: a supervisor that died in the middle
// of a dump (its node lost, killed with CRIU at work) leaves a
// half-written dump in its scratch directory; the relaunched supervisor
// removes it before anything else, and restores the newest committed
// checkpoint, never the half dump.
func TestCrashedDumpLeftoversRemoved(t *testing.T) {
	w := newWorld(1, 2)
	ctx, cancel := context.WithCancel(t.Context())
	rs := startRanks(t, ctx, w, nil)
	waitCommits(t, w, 1)
	cancel()
	w.wake()
	rs.wait(t)
	name := w.names[len(w.names)-1]
	scratch := t.TempDir()
	for _, d := range []string{"dump-123", "restore-456"} {
		if err := os.MkdirAll(filepath.Join(scratch, d), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(scratch, d, "pages-1.img"), []byte("half"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	w.seq, w.gathers = make([]int, 1), map[int][][]byte{}
	r := &fakeRunner{w: w, rank: 0}
	done := make(chan error, 1)
	var rep Report
	go func() {
		var err error
		rep, err = Run(t.Context(), fakeJob{w: w, rank: 0}, Config{Runner: r, Tool: fakeTool(w), Scratch: scratch, Tick: time.Millisecond})
		done <- err
	}()
	for r.tree() == nil {
		time.Sleep(time.Millisecond)
	}
	r.tree().end(0)
	if err := testwait.Recv(t, done, "the relaunched supervisor's end"); err != nil {
		t.Fatal(err)
	}
	if rep.Restored != name {
		t.Errorf("restored %q, want %q", rep.Restored, name)
	}
	if left, _ := filepath.Glob(filepath.Join(scratch, "*-*")); len(left) != 0 {
		t.Errorf("left in the scratch directory: %v", left)
	}
}
