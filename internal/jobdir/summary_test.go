package jobdir

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
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
