package throttle_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/storage/local"
	"github.com/ckpt/ckpt/internal/storage/mem"
	"github.com/ckpt/ckpt/internal/storage/throttle"
	"github.com/ckpt/ckpt/internal/testwait"
	"github.com/ckpt/ckpt/storage"
	"github.com/ckpt/ckpt/storage/storagetest"
)

func TestBackend(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Backend {
		return throttle.New(mem.New(), 1e12)
	})
}

func TestNoLimit(t *testing.T) {
	b := mem.New()
	for _, rate := range []float64{0, -1, math.Inf(1), math.Inf(-1), math.NaN()} {
		if got := throttle.New(b, rate); got != storage.Backend(b) {
			t.Errorf("New(b, %v) = %T, want b itself", rate, got)
		}
	}
	if got := throttle.New(b, 1); got == storage.Backend(b) {
		t.Errorf("New(b, 1) returned b unwrapped")
	}
}

func TestOptionalInterfaces(t *testing.T) {
	l, err := local.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b := throttle.New(l, 1e9)
	if _, ok := storage.As[storage.Locator](b); !ok {
		t.Errorf("As does not find the Locator under the throttle")
	}
	if _, ok := storage.As[storage.Cleaner](b); !ok {
		t.Errorf("As does not find the Cleaner under the throttle")
	}
	if got := storage.PropertiesOf(b); got != l.Properties() {
		t.Errorf("PropertiesOf = %+v, want %+v", got, l.Properties())
	}
}

// atLeast fails the test if elapsed is clearly less than the time that
// moving n bytes at rate bytes/s takes after a full bucket. Only a lower
// bound, with a margin for the clock: a slow machine can take any longer.
func atLeast(t *testing.T, what string, elapsed time.Duration, n int, rate float64) {
	t.Helper()
	want := time.Duration(float64(n-throttle.BucketSize(rate)) / rate * float64(time.Second))
	if elapsed < want*8/10 {
		t.Errorf("%s of %d bytes at %.0f B/s took %v, want at least about %v", what, n, rate, elapsed, want)
	}
}

const (
	testRate = 16 << 20               // bytes per second
	testSize = throttle.Burst + 4<<20 // 0.25 s beyond the burst
)

func TestWriteRate(t *testing.T) {
	b := throttle.New(mem.New(), testRate)
	data := bytes.Repeat([]byte("0123456789abcdef"), testSize/16)
	w, err := b.Create(t.Context(), "obj")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	// One Write larger than the bucket: passed on in pieces.
	if n, err := w.Write(data); err != nil || n != len(data) {
		t.Fatalf("Write = %d, %v; want %d, nil", n, err, len(data))
	}
	atLeast(t, "Write", time.Since(start), len(data), testRate)
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}

	// Reading has a bucket of its own, full still.
	start = time.Now()
	got, err := storage.Load(t.Context(), b, "obj")
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("Load = %d bytes, %v; want the %d written", len(got), err, len(data))
	}
	atLeast(t, "Load", time.Since(start), len(data), testRate)
}

// TestSharedLimit checks that the Writers of one throttled backend share
// its limit.
func TestSharedLimit(t *testing.T) {
	b := throttle.New(mem.New(), testRate)
	data := make([]byte, testSize)
	var wg sync.WaitGroup
	start := time.Now()
	for _, name := range []string{"a", "b"} {
		wg.Go(func() {
			if _, err := storage.Save(t.Context(), b, name, bytes.NewReader(data)); err != nil {
				t.Errorf("Save(%q): %v", name, err)
			}
		})
	}
	testwait.Group(t, &wg, "the Saves")
	atLeast(t, "two concurrent Saves", time.Since(start), 2*len(data), testRate)
}

// slowRate makes the wait for a bucketful of tokens last over a minute.
const slowRate = 1 << 10

var slowBucket = throttle.BucketSize(slowRate)

// result is what a Read or Write returned.
type result struct {
	n   int
	err error
}

// within returns what f returns, failing the test if it takes longer than
// the generous time a prompt return needs.
func within(t *testing.T, f func() (int, error)) (int, error) {
	t.Helper()
	done := make(chan result, 1)
	go func() {
		n, err := f()
		done <- result{n, err}
	}()
	select {
	case r := <-done:
		return r.n, r.err
	case <-time.After(30 * time.Second):
		t.Fatal("still waiting 30 s after the context ended")
		return 0, nil
	}
}

func TestCancelWrite(t *testing.T) {
	b := throttle.New(mem.New(), slowRate)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	w, err := b.Create(ctx, "obj")
	if err != nil {
		t.Fatal(err)
	}
	// The first Write drains the bucket; the second waits until canceled.
	if n, err := w.Write(make([]byte, slowBucket)); err != nil || n != slowBucket {
		t.Fatalf("first Write = %d, %v", n, err)
	}
	time.AfterFunc(50*time.Millisecond, cancel)
	n, err := within(t, func() (int, error) { return w.Write(make([]byte, slowBucket)) })
	if !errors.Is(err, context.Canceled) || n != 0 {
		t.Errorf("Write = %d, %v; want 0, context.Canceled", n, err)
	}
	if _, err := w.Write([]byte("x")); !errors.Is(err, context.Canceled) {
		t.Errorf("Write after the failed one = %v, want context.Canceled", err)
	}
	if err := w.Commit(); !errors.Is(err, context.Canceled) {
		t.Errorf("Commit after the failed Write = %v, want context.Canceled", err)
	}
	if err := w.Commit(); !errors.Is(err, storage.ErrClosed) {
		t.Errorf("second Commit = %v, want ErrClosed", err)
	}
	if err := w.Abort(); err != nil {
		t.Errorf("Abort after Commit = %v", err)
	}
	if _, err := b.Stat(t.Context(), "obj"); !errors.Is(err, storage.ErrNotExist) {
		t.Errorf("Stat of the failed object = %v, want ErrNotExist", err)
	}
}

func TestWriteDeadline(t *testing.T) {
	b := throttle.New(mem.New(), slowRate)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	w, err := b.Create(ctx, "obj")
	if err != nil {
		t.Fatal(err)
	}
	// The tokens would come after the deadline: the Write need not wait
	// for it.
	_, err = within(t, func() (int, error) { return w.Write(make([]byte, 2*slowBucket)) })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Write = %v, want context.DeadlineExceeded", err)
	}
	if err := w.Commit(); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Commit = %v, want context.DeadlineExceeded", err)
	}
	if _, err := b.Stat(t.Context(), "obj"); !errors.Is(err, storage.ErrNotExist) {
		t.Errorf("Stat of the failed object = %v, want ErrNotExist", err)
	}
}

func TestCancelRead(t *testing.T) {
	m := mem.New()
	data := make([]byte, 2*slowBucket)
	if _, err := storage.Save(t.Context(), m, "obj", bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	b := throttle.New(m, slowRate)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	r, err := b.Open(ctx, "obj", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	buf := make([]byte, len(data))
	// The first Read gets at most a bucket, which is full.
	n, err := r.Read(buf)
	if err != nil || n == 0 || n > slowBucket {
		t.Fatalf("first Read = %d, %v; want 1 to %d bytes", n, err, slowBucket)
	}
	if n < slowBucket {
		// Drain the bucket, so that the next Read has to wait.
		if _, err := io.ReadFull(r, buf[:slowBucket-n]); err != nil {
			t.Fatal(err)
		}
	}
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err = within(t, func() (int, error) { return r.Read(buf) })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Read = %v, want context.Canceled", err)
	}
	if n, err := r.Read(buf); n != 0 || !errors.Is(err, context.Canceled) {
		t.Errorf("Read after the failed one = %d, %v; want 0, context.Canceled", n, err)
	}
}
