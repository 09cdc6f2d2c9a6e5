package ckpt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/coord"
	"github.com/ckpt/ckpt/internal/coordnet"
	"github.com/ckpt/ckpt/internal/engine"
	"github.com/ckpt/ckpt/internal/jobenv"
	"github.com/ckpt/ckpt/internal/testwait"
)

func TestSoloJob(t *testing.T) {
	ctx := t.Context()
	t.Setenv(jobenv.VarCoord, "")
	dir := t.TempDir()
	join := func() *Job {
		j, err := Join(ctx, JobOptions{Store: Options{CacheDir: dir, Node: "solo"}, Interval: "3steps"})
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	j := join()
	if j.Rank() != 0 || j.Size() != 1 {
		t.Fatalf("rank %d of %d", j.Rank(), j.Size())
	}
	if _, err := j.Restart(ctx); !errors.Is(err, ErrNoCheckpoint) {
		t.Fatalf("restart of a fresh job: %v", err)
	}
	var taken []int64
	for step := int64(1); step <= 10; step++ {
		need, err := j.NeedCheckpoint(ctx, step)
		if err != nil {
			t.Fatal(err)
		}
		if need {
			taken = append(taken, step)
			if err := j.Checkpoint(ctx, fmt.Sprintf("s%d", step), func(c *Checkpoint) error {
				return writeString(c, "state", fmt.Sprint(step))
			}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if fmt.Sprint(taken) != "[3 6 9]" {
		t.Errorf("checkpoints at %v, want every 3 steps", taken)
	}
	if all, err := j.AllGather(ctx, []byte("x")); err != nil || len(all) != 1 || string(all[0]) != "x" {
		t.Errorf("AllGather of one rank: %q %v", all, err)
	}
	if err := j.Send(ctx, 0, 1, nil); err == nil {
		t.Error("a job of one rank sent a message")
	}
	if err := j.Finish(ctx, "done"); err != nil {
		t.Fatal(err)
	}
	j.Close()

	j = join()
	defer j.Close()
	res, err := j.Restart(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := readString(t, res, "state"); got != "9" {
		t.Errorf("restored state %q, want the newest checkpoint's 9", got)
	}
}

func TestJoinWithoutCoordinator(t *testing.T) {
	t.Setenv(jobenv.VarCoord, "")
	_, err := Join(t.Context(), JobOptions{Store: Options{Rank: 1, Size: 2, CacheDir: t.TempDir()}})
	if err == nil || !strings.Contains(err.Error(), "ckpt run") {
		t.Errorf("rank 1 of 2 without a coordinator: %v", err)
	}
	_, err = Join(t.Context(), JobOptions{Interval: "sometimes", Store: Options{CacheDir: t.TempDir()}})
	if err == nil || !strings.Contains(err.Error(), "sometimes") {
		t.Errorf("a bad interval: %v", err)
	}
}

func writeString(c *Checkpoint, file, s string) error {
	f, err := c.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.WriteString(f, s); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func readString(t *testing.T, res *Restored, file string) string {
	t.Helper()
	rd, err := res.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	b, err := io.ReadAll(rd)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// netJob runs ranks as goroutines joined through a real coordinator and
// real TCP between ranks; each launch gets a new coordinator, as under
// `ckpt run`.
type netJob struct {
	t     *testing.T
	ranks int
	root  string
	inc   uint64
	// What the last launch's coordinator knew at its end.
	result, restored string
	status           coord.Status
}

func (n *netJob) launch(fn func(j *Job) error) {
	n.t.Helper()
	token := fmt.Sprint("token-", n.inc)
	co, err := coordnet.StartCoordinator("127.0.0.1:0", coord.Config{Size: n.ranks, Token: token, Incarnation: n.inc}, coordnet.Options{})
	if err != nil {
		n.t.Fatal(err)
	}
	defer co.Close()
	ctx, cancel := context.WithTimeout(n.t.Context(), time.Minute)
	defer cancel()
	errs := make([]error, n.ranks)
	var wg sync.WaitGroup
	for r := range n.ranks {
		wg.Go(func() {
			node := fmt.Sprintf("node%d", r%2)
			j, err := Join(ctx, JobOptions{Coord: co.Addr(), Token: token, Incarnation: n.inc, Interval: "none",
				Store: Options{Rank: r, Size: n.ranks, Node: node, CacheDir: filepath.Join(n.root, node),
					Redundancy: "partner", BlockSize: 4096}})
			if err != nil {
				errs[r] = err
				return
			}
			defer j.Close()
			errs[r] = fn(j)
		})
	}
	testwait.Group(n.t, &wg, "the ranks")
	n.inc++
	v, _ := co.Value(jobenv.KeyResult)
	n.result = string(v)
	v, _ = co.Value(jobenv.KeyRestored)
	n.restored = string(v)
	n.status = co.Status()
	for r, err := range errs {
		if err != nil {
			n.t.Fatalf("rank %d: %v", r, err)
		}
	}
}

// TestJobMessagesInFlight sends a message around a ring of ranks that is
// still in flight when the checkpoint is taken: the application receives
// it after the checkpoint all the same, and again after a restart from
// that checkpoint on new ports.
func TestJobMessagesInFlight(t *testing.T) {
	n := &netJob{t: t, ranks: 4, root: t.TempDir()}
	msg := func(from int) string { return fmt.Sprintf("from %d before the checkpoint", from) }
	n.launch(func(j *Job) error {
		ctx := context.Background()
		next, prev := (j.Rank()+1)%j.Size(), (j.Rank()+j.Size()-1)%j.Size()
		if err := j.Send(ctx, next, 7, []byte(msg(j.Rank()))); err != nil {
			return err
		}
		if err := j.Checkpoint(ctx, "c1", func(c *Checkpoint) error {
			return writeString(c, "state", fmt.Sprint("rank ", j.Rank()))
		}); err != nil {
			return err
		}
		got, err := j.Recv(ctx, prev, 7, nil)
		if err != nil || string(got) != msg(prev) {
			return fmt.Errorf("after the checkpoint: received %q, %v; want %q", got, err, msg(prev))
		}
		return j.Finish(ctx, "ok")
	})
	if n.result != "ok" {
		t.Errorf("rank 0's result: %q", n.result)
	}
	if n.status.Committed != "c1" || n.status.Phase != coord.Finished {
		t.Errorf("coordinator status %+v: want c1 committed and the job finished", n.status)
	}
	n.launch(func(j *Job) error {
		ctx := context.Background()
		res, err := j.Restart(ctx)
		if err != nil {
			return err
		}
		if got := readString(t, res, "state"); got != fmt.Sprint("rank ", j.Rank()) {
			return fmt.Errorf("state %q", got)
		}
		for _, f := range res.Files() {
			if f == engine.MessagesFile {
				return fmt.Errorf("Files lists ckpt's own %s", f)
			}
		}
		prev := (j.Rank() + j.Size() - 1) % j.Size()
		got, err := j.Recv(ctx, prev, 7, nil)
		if err != nil || string(got) != msg(prev) {
			return fmt.Errorf("after the restart: received %q, %v; want %q", got, err, msg(prev))
		}
		// The ranks reach each other on their new ports.
		if err := j.Send(ctx, (j.Rank()+1)%j.Size(), 8, []byte("again")); err != nil {
			return err
		}
		if got, err := j.Recv(ctx, prev, 8, nil); err != nil || string(got) != "again" {
			return fmt.Errorf("new message: %q %v", got, err)
		}
		return j.Finish(ctx, "")
	})
	if n.restored != "cache c1" {
		t.Errorf("restored key %q, want \"cache c1\"", n.restored)
	}
}

func TestCheckpointFileNameReserved(t *testing.T) {
	s, err := Open(Options{CacheDir: t.TempDir(), Node: "n"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, err := s.Start("c")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(engine.MessagesFile); err == nil || !strings.Contains(err.Error(), "reserved") {
		t.Errorf("Create(%q): %v, want a reserved-name error", engine.MessagesFile, err)
	}
}

// TestJobCheckpointFailsOnEveryRank: a rank whose save fails (its node's
// disk is full) fails the checkpoint on every rank, none left waiting for
// it, and the job goes on to commit the next one.
func TestJobCheckpointFailsOnEveryRank(t *testing.T) {
	n := &netJob{t: t, ranks: 4, root: t.TempDir()}
	n.launch(func(j *Job) error {
		ctx := context.Background()
		err := j.Checkpoint(ctx, "c1", func(c *Checkpoint) error {
			if j.Rank() == 1 {
				return fmt.Errorf("write state: %w", syscall.ENOSPC)
			}
			return writeString(c, "state", fmt.Sprint("rank ", j.Rank()))
		})
		switch {
		case err == nil:
			return errors.New("c1 committed, which rank 1 could not write")
		case j.Rank() == 1 && !errors.Is(err, syscall.ENOSPC):
			return fmt.Errorf("rank 1's error %v does not say why", err)
		case !errors.Is(err, ErrCheckpointFailed):
			return fmt.Errorf("error %v is not ErrCheckpointFailed: the rank cannot know the job may go on", err)
		case !strings.Contains(err.Error(), syscall.ENOSPC.Error()):
			return fmt.Errorf("error %v does not say why", err)
		}
		if err := j.Checkpoint(ctx, "c2", func(c *Checkpoint) error {
			return writeString(c, "state", fmt.Sprint("rank ", j.Rank()))
		}); err != nil {
			return err
		}
		return j.Finish(ctx, "ok")
	})
	if n.result != "ok" || n.status.Committed != "c2" {
		t.Errorf("result %q, committed %q: want ok and c2", n.result, n.status.Committed)
	}
}
