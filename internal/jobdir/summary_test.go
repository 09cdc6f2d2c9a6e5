package jobdir

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// Summarize reports each job's holder, spec and what the counter found;
// a missing root holds no jobs, and a counter's error stays with its job.
func TestSummarize(t *testing.T) {
	root := t.TempDir()
	if s, err := Summarize(filepath.Join(root, "missing"), nil); err != nil || len(s) != 0 {
		t.Fatalf("missing root: %v, %v", s, err)
	}
	held, err := At(filepath.Join(root, "a")).Acquire(testSpec())
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	l, err := At(filepath.Join(root, "b")).Acquire(testSpec())
	if err != nil {
		t.Fatal(err)
	}
	l.Release()
	bad := errors.New("unreadable cache")
	s, err := Summarize(root, func(dir string) (int, string, error) {
		if filepath.Base(dir) == "b" {
			return 0, "", bad
		}
		return 2, "ckpt-9", nil
	})
	if err != nil || len(s) != 2 {
		t.Fatalf("Summarize = %v, %v", s, err)
	}
	if a := s[0]; a.Name != "a" || !a.Running || a.PID != os.Getpid() || a.Checkpoints != 2 || a.Newest != "ckpt-9" || a.CountErr != nil ||
		a.Spec == nil || !reflect.DeepEqual(*a.Spec, testSpec()) {
		t.Errorf("job a: %+v", a)
	}
	if b := s[1]; b.Name != "b" || b.Running || b.CountErr != bad {
		t.Errorf("job b: %+v", b)
	}
}

// Only picks the one job, or the one running when asked; none and several
// are errors, the latter naming the jobs.
func TestOnly(t *testing.T) {
	root := t.TempDir()
	if _, err := Only(filepath.Join(root, "missing"), false); !errors.Is(err, ErrNoJob) {
		t.Errorf("missing root: %v, want ErrNoJob", err)
	}
	l, err := At(filepath.Join(root, "a")).Acquire(testSpec())
	if err != nil {
		t.Fatal(err)
	}
	l.Release()
	if d, err := Only(root, true); err != nil || d.Name != "a" {
		t.Errorf("one job: %v, %v", d, err)
	}
	held, err := At(filepath.Join(root, "b")).Acquire(testSpec())
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	var ae *AmbiguousError
	if _, err := Only(root, false); !errors.As(err, &ae) || !reflect.DeepEqual(ae.Names, []string{"a", "b"}) {
		t.Errorf("two jobs: %v", err)
	}
	if d, err := Only(root, true); err != nil || d.Name != "b" {
		t.Errorf("two jobs, one running: %v, %v", d, err)
	}
}

// WaitCommit returns the checkpoint committed after the count given; it
// fails when the job ends, when the time runs out, and when ctx ends.
func TestWaitCommit(t *testing.T) {
	d := At(filepath.Join(t.TempDir(), "job"))
	l, err := d.Acquire(testSpec())
	if err != nil {
		t.Fatal(err)
	}
	if err := d.WriteStatus(Status{Checkpoints: 1, LastCheckpoint: &Checkpoint{Name: "c1"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.WaitCommit(context.Background(), 1, 100*time.Millisecond); !errors.Is(err, ErrNoCommit) {
		t.Errorf("no new commit: %v, want ErrNoCommit", err)
	}
	if lc, err := d.WaitCommit(context.Background(), 0, time.Minute); err != nil || lc.Name != "c1" {
		t.Errorf("a commit after 0: %v, %v", lc, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := d.WaitCommit(ctx, 1, time.Minute); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	l.Release()
	if _, err := d.WaitCommit(context.Background(), 1, time.Minute); !errors.Is(err, ErrEnded) {
		t.Errorf("job not running: %v, want ErrEnded", err)
	}
}
