package retry_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/storage/local"
	"github.com/ckpt/ckpt/internal/storage/mem"
	"github.com/ckpt/ckpt/internal/storage/retry"
	"github.com/ckpt/ckpt/storage"
	"github.com/ckpt/ckpt/storage/storagetest"
)

// errTransient is what the fakes fail with: not permanent.
var errTransient = errors.New("connection reset (injected)")

// flaky fails every third call of each method with a transient error before
// it reaches the backend, and every third List after reporting two objects,
// so the conformance suite meets failures everywhere the decorator retries.
type flaky struct {
	storage.Backend
	calls atomic.Int64
}

func (f *flaky) Unwrap() storage.Backend { return f.Backend }

func (f *flaky) fail(ctx context.Context, op, name string) error {
	if ctx.Err() != nil {
		return nil // let the backend report the context's error
	}
	if f.calls.Add(1)%3 == 0 {
		return &storage.Error{Op: op, Name: name, Err: errTransient}
	}
	return nil
}

func (f *flaky) Create(ctx context.Context, name string) (storage.Writer, error) {
	if err := f.fail(ctx, "create", name); err != nil {
		return nil, err
	}
	return f.Backend.Create(ctx, name)
}

func (f *flaky) Open(ctx context.Context, name string, off, n int64) (io.ReadCloser, error) {
	if err := f.fail(ctx, "open", name); err != nil {
		return nil, err
	}
	return f.Backend.Open(ctx, name, off, n)
}

func (f *flaky) Stat(ctx context.Context, name string) (storage.Info, error) {
	if err := f.fail(ctx, "stat", name); err != nil {
		return storage.Info{}, err
	}
	return f.Backend.Stat(ctx, name)
}

func (f *flaky) Remove(ctx context.Context, name string) error {
	if err := f.fail(ctx, "remove", name); err != nil {
		return err
	}
	return f.Backend.Remove(ctx, name)
}

func (f *flaky) List(ctx context.Context, prefix string, fn func(storage.Info) error) error {
	if err := f.fail(ctx, "list", prefix); err == nil {
		return f.Backend.List(ctx, prefix, fn)
	}
	n := 0
	err := f.Backend.List(ctx, prefix, func(i storage.Info) error {
		if n == 2 {
			return errTransient
		}
		n++
		return fn(i)
	})
	if err == errTransient {
		return &storage.Error{Op: "list", Name: prefix, Err: errTransient}
	}
	return err
}

var fast = retry.Policy{Attempts: 10}

func TestBackend(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Backend {
		return retry.New(mem.New(), retry.DefaultPolicy)
	})
}

// TestFlakyBackend runs the conformance suite through the decorator over a
// backend that fails a third of the calls: the retries hide every failure.
func TestFlakyBackend(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Backend {
		return retry.New(&flaky{Backend: mem.New()}, fast)
	})
}

func TestFewAttemptsIsNoDecorator(t *testing.T) {
	b := mem.New()
	for _, n := range []int{-1, 0, 1} {
		if got := retry.New(b, retry.Policy{Attempts: n}); got != storage.Backend(b) {
			t.Errorf("New(b, %d attempts) = %T, want b itself", n, got)
		}
	}
}

func TestOptionalInterfaces(t *testing.T) {
	l, err := local.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b := retry.New(l, fast)
	if _, ok := storage.As[storage.Locator](b); !ok {
		t.Errorf("As does not find the Locator under the retry")
	}
	if _, ok := storage.As[storage.Cleaner](b); !ok {
		t.Errorf("As does not find the Cleaner under the retry")
	}
	if got := storage.PropertiesOf(b); got != l.Properties() {
		t.Errorf("PropertiesOf = %+v, want %+v", got, l.Properties())
	}
	// Create hands out the backend's own Writer, with its ReadFrom.
	w, err := b.Create(t.Context(), "obj")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	if _, ok := w.(io.ReaderFrom); !ok {
		t.Errorf("Create returned %T, which hides local's ReadFrom", w)
	}
}

// failing fails the first n calls of every method with err, counting the
// calls, and then passes them on.
type failing struct {
	storage.Backend
	n     int64
	err   error
	calls atomic.Int64
}

func (f *failing) fail(op, name string) error {
	if f.calls.Add(1) <= f.n {
		return &storage.Error{Op: op, Name: name, Err: f.err}
	}
	return nil
}

func (f *failing) Create(ctx context.Context, name string) (storage.Writer, error) {
	if err := f.fail("create", name); err != nil {
		return nil, err
	}
	return f.Backend.Create(ctx, name)
}

func (f *failing) Open(ctx context.Context, name string, off, n int64) (io.ReadCloser, error) {
	if err := f.fail("open", name); err != nil {
		return nil, err
	}
	return f.Backend.Open(ctx, name, off, n)
}

func (f *failing) Stat(ctx context.Context, name string) (storage.Info, error) {
	if err := f.fail("stat", name); err != nil {
		return storage.Info{}, err
	}
	return f.Backend.Stat(ctx, name)
}

func (f *failing) Remove(ctx context.Context, name string) error {
	if err := f.fail("remove", name); err != nil {
		return err
	}
	return f.Backend.Remove(ctx, name)
}

func (f *failing) List(ctx context.Context, prefix string, fn func(storage.Info) error) error {
	if err := f.fail("list", prefix); err != nil {
		return err
	}
	return f.Backend.List(ctx, prefix, fn)
}

// ops calls each method that the decorator retries once, on an object "obj"
// that exists.
var ops = map[string]func(ctx context.Context, b storage.Backend) error{
	"Create": func(ctx context.Context, b storage.Backend) error {
		w, err := b.Create(ctx, "new")
		if err == nil {
			w.Abort()
		}
		return err
	},
	"Open": func(ctx context.Context, b storage.Backend) error {
		r, err := b.Open(ctx, "obj", 0, -1)
		if err == nil {
			r.Close()
		}
		return err
	},
	"Stat": func(ctx context.Context, b storage.Backend) error {
		_, err := b.Stat(ctx, "obj")
		return err
	},
	"List": func(ctx context.Context, b storage.Backend) error {
		return b.List(ctx, "", func(storage.Info) error { return nil })
	},
	"Remove": func(ctx context.Context, b storage.Backend) error {
		return b.Remove(ctx, "obj")
	},
}

func withObject(t *testing.T) storage.Backend {
	m := mem.New()
	if _, err := storage.Save(t.Context(), m, "obj", strings.NewReader("data")); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestTransientFailures(t *testing.T) {
	for name, op := range ops {
		for _, tc := range []struct {
			fails     int64
			wantErr   bool
			wantCalls int64
		}{
			{0, false, 1},
			{1, false, 2},
			{3, false, 4}, // the last of four tries succeeds
			{4, true, 4},  // four tries, all failed: given up
			{9, true, 4},
		} {
			t.Run(fmt.Sprintf("%s/%d", name, tc.fails), func(t *testing.T) {
				f := &failing{Backend: withObject(t), n: tc.fails, err: errTransient}
				b := retry.New(f, retry.Policy{Attempts: 4, Base: time.Microsecond, Max: time.Millisecond})
				err := op(t.Context(), b)
				if tc.wantErr != (err != nil) {
					t.Errorf("after %d failures: %v, want error %v", tc.fails, err, tc.wantErr)
				}
				if err != nil && !errors.Is(err, errTransient) {
					t.Errorf("error %v does not wrap the last failure", err)
				}
				var se *storage.Error
				if err != nil && !errors.As(err, &se) {
					t.Errorf("error %v is not a *storage.Error", err)
				}
				if got := f.calls.Load(); got != tc.wantCalls {
					t.Errorf("%d calls, want %d", got, tc.wantCalls)
				}
			})
		}
	}
}

func TestPermanentFailures(t *testing.T) {
	for _, cause := range []error{
		syscall.ENOSPC, syscall.EACCES, storage.ErrClosed, storage.Permanent(errors.New("bucket gone")),
	} {
		for name, op := range ops {
			t.Run(fmt.Sprintf("%s/%v", name, cause), func(t *testing.T) {
				f := &failing{Backend: withObject(t), n: 5, err: cause}
				b := retry.New(f, retry.Policy{Attempts: 4, Base: time.Hour})
				err := op(t.Context(), b)
				if !errors.Is(err, cause) {
					t.Errorf("%s = %v, want %v", name, err, cause)
				}
				if got := f.calls.Load(); got != 1 {
					t.Errorf("a permanent error was tried %d times, want once", got)
				}
			})
		}
	}
	// A missing object is permanent too: no retry, ErrNotExist.
	f := &failing{Backend: mem.New()}
	b := retry.New(f, retry.Policy{Attempts: 4, Base: time.Hour})
	if _, err := b.Stat(t.Context(), "missing"); !errors.Is(err, storage.ErrNotExist) || f.calls.Load() != 1 {
		t.Errorf("Stat of a missing object = %v after %d calls", err, f.calls.Load())
	}
	if err := b.Remove(t.Context(), "missing"); !errors.Is(err, storage.ErrNotExist) {
		t.Errorf("Remove of a missing object = %v, want ErrNotExist", err)
	}
}

// TestCanceledDuringPause cancels the context while the decorator pauses
// before a retry: the pause ends at once and the error names both causes.
func TestCanceledDuringPause(t *testing.T) {
	for name, op := range ops {
		t.Run(name, func(t *testing.T) {
			f := &failing{Backend: withObject(t), n: 100, err: errTransient}
			b := retry.New(f, retry.Policy{Attempts: 4, Base: time.Hour, Max: time.Hour})
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() { done <- op(ctx, b) }()
			// Wait until the first try failed: the decorator pauses.
			for f.calls.Load() == 0 {
				time.Sleep(time.Millisecond)
			}
			cancel()
			select {
			case err := <-done:
				if !errors.Is(err, context.Canceled) || !errors.Is(err, errTransient) {
					t.Errorf("%s = %v, want context.Canceled and the failure", name, err)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("%s still pausing after its context was canceled", name)
			}
			if got := f.calls.Load(); got != 1 {
				t.Errorf("%d calls, want 1", got)
			}
		})
	}
}

// TestDoneContextNotRetried: a failure with a context that is already done
// is returned at once, naming both causes as a pause canceled later would
// (TestCanceledDuringPause's cancel can land on either side of the pause).
func TestDoneContextNotRetried(t *testing.T) {
	f := &failing{Backend: withObject(t), n: 100, err: errTransient}
	b := retry.New(f, retry.Policy{Attempts: 4, Base: time.Hour})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := b.Stat(ctx, "obj"); !errors.Is(err, errTransient) || !errors.Is(err, context.Canceled) || f.calls.Load() != 1 {
		t.Errorf("Stat = %v after %d calls", err, f.calls.Load())
	}
}

// TestListResumes: a List that fails after reporting some objects is made
// again, and the callback sees each object once, in order.
func TestListResumes(t *testing.T) {
	m := mem.New()
	var want []string
	for i := range 7 {
		name := fmt.Sprintf("o%d", i)
		want = append(want, name)
		if _, err := storage.Save(t.Context(), m, name, strings.NewReader(name)); err != nil {
			t.Fatal(err)
		}
	}
	f := &midList{Backend: m, after: 3, times: 2}
	b := retry.New(f, fast)
	var seen []string
	if err := b.List(t.Context(), "", func(i storage.Info) error {
		seen = append(seen, i.Name)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(seen, want) {
		t.Errorf("callback saw %q, want %q", seen, want)
	}
	if f.lists != 3 {
		t.Errorf("%d listings, want 3", f.lists)
	}

	// The callback's own error ends List unchanged, with no retry, even a
	// transient one.
	f = &midList{Backend: m}
	b = retry.New(f, fast)
	n := 0
	err := b.List(t.Context(), "", func(storage.Info) error {
		n++
		return errTransient
	})
	if err != errTransient || n != 1 || f.lists != 1 {
		t.Errorf("List with a failing callback = %v after %d calls and %d listings", err, n, f.lists)
	}
}

// midList fails its first times listings after reporting after objects.
type midList struct {
	storage.Backend
	after, times int
	lists        int
}

func (f *midList) List(ctx context.Context, prefix string, fn func(storage.Info) error) error {
	f.lists++
	fail := f.lists <= f.times
	n := 0
	return f.Backend.List(ctx, prefix, func(i storage.Info) error {
		if fail && n == f.after {
			return &storage.Error{Op: "list", Name: prefix, Err: errTransient}
		}
		n++
		return fn(i)
	})
}

// TestRemoveAfterLostAnswer: a Remove whose first try removed the object
// but failed reports success when the retry finds it gone.
func TestRemoveAfterLostAnswer(t *testing.T) {
	m := withObject(t)
	b := retry.New(&lostAnswer{Backend: m}, fast)
	if err := b.Remove(t.Context(), "obj"); err != nil {
		t.Errorf("Remove = %v, want success", err)
	}
	if _, err := m.Stat(t.Context(), "obj"); !errors.Is(err, storage.ErrNotExist) {
		t.Errorf("object still there: %v", err)
	}
}

type lostAnswer struct {
	storage.Backend
	once atomic.Bool
}

func (l *lostAnswer) Remove(ctx context.Context, name string) error {
	err := l.Backend.Remove(ctx, name)
	if err == nil && !l.once.Swap(true) {
		return &storage.Error{Op: "remove", Name: name, Err: errTransient}
	}
	return err
}

// TestWriterNotRetried: a failed Write fails the object; the decorator does
// not try it again.
func TestWriterNotRetried(t *testing.T) {
	f := &failWrite{Backend: mem.New()}
	b := retry.New(f, fast)
	w, err := b.Create(t.Context(), "obj")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("data")); !errors.Is(err, errTransient) {
		t.Errorf("Write = %v, want the injected failure", err)
	}
	if err := w.Commit(); err == nil {
		t.Errorf("Commit after a failed Write succeeded")
	}
	if f.writes.Load() != 1 {
		t.Errorf("%d Writes reached the backend, want 1", f.writes.Load())
	}
	if _, err := b.Stat(t.Context(), "obj"); !errors.Is(err, storage.ErrNotExist) {
		t.Errorf("Stat after the failed object = %v, want ErrNotExist", err)
	}
}

type failWrite struct {
	storage.Backend
	writes atomic.Int64
}

func (f *failWrite) Create(ctx context.Context, name string) (storage.Writer, error) {
	w, err := f.Backend.Create(ctx, name)
	if err != nil {
		return nil, err
	}
	return &failWriter{Writer: w, f: f}, nil
}

type failWriter struct {
	storage.Writer
	f      *failWrite
	failed bool
}

func (w *failWriter) Write(p []byte) (int, error) {
	w.f.writes.Add(1)
	w.failed = true
	return 0, errTransient
}

func (w *failWriter) Commit() error {
	if w.failed {
		w.Writer.Abort()
		return errTransient
	}
	return w.Writer.Commit()
}

func TestPause(t *testing.T) {
	p := retry.Policy{Attempts: 10, Base: 100 * time.Millisecond, Max: time.Second}
	for n, want := range []time.Duration{100, 200, 400, 800, 1000, 1000} {
		want *= time.Millisecond
		for range 50 {
			if got := p.Pause(n + 1); got < want/2 || got > want {
				t.Fatalf("Pause(%d) = %v, want in [%v, %v]", n+1, got, want/2, want)
			}
		}
	}
	if got := (retry.Policy{Attempts: 3}).Pause(1); got != 0 {
		t.Errorf("Pause with no Base = %v", got)
	}
	if got := (retry.Policy{Attempts: 3, Base: time.Second}).Pause(3); got < time.Second/2 || got > time.Second {
		t.Errorf("Pause with Max below Base = %v, want Base's range", got)
	}
}
