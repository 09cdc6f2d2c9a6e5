package location_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/storage/local"
	"github.com/ckpt/ckpt/internal/storage/location"
	"github.com/ckpt/ckpt/internal/storage/retry"
	"github.com/ckpt/ckpt/storage"
	"github.com/ckpt/ckpt/storage/storagetest"
)

// TestStack runs the conformance suite over a directory opened with every
// decorator.
func TestStack(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Backend {
		b, err := location.Open(t.Context(), t.TempDir(), location.Options{Bandwidth: 1e12, CleanTemp: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		return b
	})
}

// marker is an Inject hook that lets a test find where the stack begins.
type marker struct{ storage.Backend }

func (m *marker) Unwrap() storage.Backend { return m.Backend }

// TestOrder checks the documented order: retry, then throttle, then what
// Inject returned, then the backend.
func TestOrder(t *testing.T) {
	var m *marker
	b, err := location.Open(t.Context(), t.TempDir(), location.Options{
		Bandwidth: 1e9,
		Inject:    func(b storage.Backend) storage.Backend { m = &marker{b}; return m },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var layers []string
	for x := b; x != nil; {
		layers = append(layers, fmt.Sprintf("%T", x))
		u, ok := x.(storage.Unwrapper)
		if !ok {
			break
		}
		x = u.Unwrap()
	}
	want := []string{"*retry.Backend", "*throttle.backend", "*location_test.marker", "*local.Backend"}
	if strings.Join(layers, " ") != strings.Join(want, " ") {
		t.Errorf("stack %q, want %q", layers, want)
	}
	if _, ok := storage.As[storage.Locator](b); !ok {
		t.Errorf("As does not find local's Locator through the stack")
	}

	// No bandwidth, no retry: the backend alone.
	b2, err := location.Open(t.Context(), t.TempDir(), location.Options{Retry: retry.Policy{Attempts: 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	if _, ok := b2.(*local.Backend); !ok {
		t.Errorf("Open with no decorators = %T, want *local.Backend", b2)
	}
}

func TestMistypedScheme(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for _, loc := range []string{"S3://bucket/p", "s3:bucket/p", "s3:/bucket", "S3:"} {
		b, err := location.Open(t.Context(), loc, location.Options{})
		if err == nil {
			b.Close()
			t.Errorf("Open(%q) succeeded", loc)
			continue
		}
		if !strings.Contains(err.Error(), "s3://BUCKET/PREFIX") {
			t.Errorf("Open(%q) = %v, want it to show the right form", loc, err)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("mistyped locations created %d entries", len(ents))
	}
	if _, err := location.Open(t.Context(), "s3://", location.Options{}); err == nil {
		t.Errorf("Open(s3://) with no bucket succeeded")
	}
}

// transient fails the first n calls of Stat with an error that is not
// permanent.
type transient struct {
	storage.Backend
	n     int64
	calls atomic.Int64
}

func (f *transient) Stat(ctx context.Context, name string) (storage.Info, error) {
	if f.calls.Add(1) <= f.n {
		return storage.Info{}, &storage.Error{Op: "stat", Name: name, Err: errors.New("stale file handle (injected)")}
	}
	return f.Backend.Stat(ctx, name)
}

// TestRetriesInjectedFaults: faults planted through Inject meet the retry
// decorator, with the policy Options give.
func TestRetriesInjectedFaults(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "obj"), []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		fails    int64
		attempts int
		ok       bool
	}{
		{2, 3, true},
		{3, 3, false},
		{1, 1, false}, // retrying off
	} {
		f := &transient{n: tc.fails}
		b, err := location.Open(t.Context(), dir, location.Options{
			Retry:  retry.Policy{Attempts: tc.attempts, Base: time.Millisecond},
			Inject: func(b storage.Backend) storage.Backend { f.Backend = b; return f },
		})
		if err != nil {
			t.Fatal(err)
		}
		info, err := b.Stat(t.Context(), "obj")
		if (err == nil) != tc.ok || (err == nil && info.Size != 4) {
			t.Errorf("%d failures, %d attempts: Stat = %+v, %v", tc.fails, tc.attempts, info, err)
		}
		b.Close()
	}
	// The default policy retries.
	f := &transient{n: 1}
	b, err := location.Open(t.Context(), dir, location.Options{
		Inject: func(b storage.Backend) storage.Backend { f.Backend = b; return f },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.Stat(t.Context(), "obj"); err != nil || f.calls.Load() != 2 {
		t.Errorf("default policy: Stat = %v after %d calls", err, f.calls.Load())
	}
}

// plant makes a temp file as a dead writer leaves it, last modified age ago.
func plant(t *testing.T, dir, name string, age time.Duration) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("torn"), 0o644); err != nil {
		t.Fatal(err)
	}
	when := time.Now().Add(-age)
	if err := os.Chtimes(p, when, when); err != nil {
		t.Fatal(err)
	}
	return p
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func TestCleanAtOpen(t *testing.T) {
	dir := t.TempDir()
	old := plant(t, dir, "ckpt.1/rank-0/"+storage.TempPrefix+"0123-state", 2*time.Hour)
	young := plant(t, dir, "ckpt.2/rank-0/"+storage.TempPrefix+"4567-state", time.Minute)
	committed := plant(t, dir, "ckpt.0/rank-0/state", 3*time.Hour)

	// Without CleanTemp, nothing is touched.
	b, err := location.Open(t.Context(), dir, location.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	if !exists(old) || !exists(young) {
		t.Fatalf("Open without CleanTemp removed temp files")
	}

	var removed int
	var cleanErr error
	calls := 0
	b, err = location.Open(t.Context(), dir, location.Options{
		Bandwidth: 1e9,
		CleanTemp: time.Hour,
		OnClean:   func(n int, err error) { removed, cleanErr = n, err; calls++ },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if calls != 1 || removed != 1 || cleanErr != nil {
		t.Errorf("OnClean called %d times with %d, %v; want once with 1, nil", calls, removed, cleanErr)
	}
	if exists(old) {
		t.Errorf("the temp file older than CleanTemp is still there")
	}
	if exists(filepath.Dir(old)) {
		t.Errorf("the directory the old temp file left empty is still there")
	}
	if !exists(young) {
		t.Errorf("the temp file younger than CleanTemp was removed")
	}
	if !exists(committed) {
		t.Errorf("a committed object was removed")
	}
}

// failingCleaner is a backend whose CleanTemp fails.
type failingCleaner struct{ storage.Backend }

var errClean = errors.New("cannot list (injected)")

func (failingCleaner) CleanTemp(context.Context, time.Duration) (int, error) { return 2, errClean }

// TestCleanFailureDoesNotFailOpen: a cleanup that fails is reported, and the
// tier is open all the same.
func TestCleanFailureDoesNotFailOpen(t *testing.T) {
	var gotN int
	var gotErr error
	b, err := location.Open(t.Context(), t.TempDir(), location.Options{
		CleanTemp: time.Hour,
		Inject:    func(b storage.Backend) storage.Backend { return failingCleaner{b} },
		OnClean:   func(n int, err error) { gotN, gotErr = n, err },
	})
	if err != nil {
		t.Fatalf("Open with a failing cleanup = %v", err)
	}
	defer b.Close()
	if gotN != 2 || !errors.Is(gotErr, errClean) {
		t.Errorf("OnClean got %d, %v; want 2, %v", gotN, gotErr, errClean)
	}
	if _, err := storage.Save(t.Context(), b, "obj", strings.NewReader("x")); err != nil {
		t.Errorf("Save after the failed cleanup: %v", err)
	}
}

// TestCleanNoCleaner: a backend without a Cleaner has nothing to clean.
func TestCleanNoCleaner(t *testing.T) {
	n, err := location.Clean(t.Context(), struct{ storage.Backend }{}, time.Hour)
	if n != 0 || err != nil {
		t.Errorf("Clean of a backend with no Cleaner = %d, %v", n, err)
	}
}

func TestOpenError(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := location.Open(t.Context(), filepath.Join(file, "sub"), location.Options{}); err == nil {
		b.Close()
		t.Errorf("Open under a file succeeded")
	}
}
