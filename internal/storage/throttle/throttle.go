// Package throttle caps the bandwidth of a storage.Backend, so that one
// machine can model a shared parallel file system whose bandwidth per
// client is bounded (ckpt run --shared-bandwidth).
//
// New wraps a backend with two token buckets (golang.org/x/time/rate) of
// bytesPerSecond each: one for the bytes written through its Writers, one
// for the bytes read through the readers Open returns. Reading does not
// slow writing nor the reverse. Stat, List, Remove and Close pass through
// unchanged, and so do the optional interfaces (Locator, Cleaner,
// Describer), which storage.As finds under the decorator through Unwrap.
//
// The limit belongs to the value New returns: all its Writers share one
// bucket and all its readers the other, whatever the goroutine. Wrapping
// the same backend twice gives two independent limits, and every process
// wraps its own, so the limit is per process: k processes on one machine
// together move up to k times bytesPerSecond, as k clients of a parallel
// file system would.
//
// Each bucket holds a tenth of a second's bytes (at least 64 KiB, at most
// Burst) and starts full, so only that much passes at once after a pause;
// after that bytes flow at bytesPerSecond. A Write longer than the bucket
// is passed on in pieces of at most its size, each after its tokens are
// granted; a Read passes on at most a bucket's bytes, once their tokens are
// granted. (A small bucket keeps a modelled slow tier slow for small
// objects too: a 4 MiB bucket would let every small flush through free.)
//
// What the buckets do not see: a caller that uses a Locator's path reads
// or writes the file directly, at full speed. Copies through the decorator
// do not take the kernel's shortcuts of the backend underneath (its
// readers' WriteTo and its Writers' ReadFrom), since every byte must be
// counted; io.Copy goes through Read and Write.
package throttle

import (
	"context"
	"fmt"
	"io"
	"math"

	"golang.org/x/time/rate"

	"github.com/ckpt/ckpt/storage"
)

var (
	_ storage.Backend   = (*backend)(nil)
	_ storage.Unwrapper = (*backend)(nil)
	_ storage.Writer    = (*writer)(nil)
	_ io.ReadCloser     = (*reader)(nil)
)

// Burst is the largest size in bytes of a token bucket, and so the largest
// piece of a Write or a Read that waits for its tokens at once.
const Burst = 4 << 20

// BucketSize is the size of the token buckets of a backend limited to
// bytesPerSecond: a tenth of a second's bytes, at least 64 KiB, at most
// Burst.
func BucketSize(bytesPerSecond float64) int {
	return int(min(max(bytesPerSecond/10, 64<<10), Burst))
}

// New returns b with the bytes written through its Writers, and separately
// the bytes read through the readers of Open, limited to bytesPerSecond
// each. If bytesPerSecond is not a positive finite number (0 or less,
// +Inf, NaN), it returns b itself: no limit.
func New(b storage.Backend, bytesPerSecond float64) storage.Backend {
	if !(bytesPerSecond > 0) || math.IsInf(bytesPerSecond, 1) {
		return b
	}
	burst := BucketSize(bytesPerSecond)
	return &backend{
		Backend: b,
		write:   rate.NewLimiter(rate.Limit(bytesPerSecond), burst),
		read:    rate.NewLimiter(rate.Limit(bytesPerSecond), burst),
	}
}

// backend embeds the wrapped backend for the methods it passes through.
type backend struct {
	storage.Backend
	write, read *rate.Limiter
}

// Unwrap implements storage.Unwrapper.
func (b *backend) Unwrap() storage.Backend { return b.Backend }

// Create implements storage.Backend. The Writer waits for its tokens with
// ctx.
func (b *backend) Create(ctx context.Context, name string) (storage.Writer, error) {
	w, err := b.Backend.Create(ctx, name)
	if err != nil {
		return nil, err
	}
	return &writer{w: w, lim: b.write, ctx: ctx, name: name}, nil
}

// Open implements storage.Backend. The reader waits for its tokens with
// ctx, so once ctx is done, its Reads fail with ctx's error.
func (b *backend) Open(ctx context.Context, name string, offset, length int64) (io.ReadCloser, error) {
	r, err := b.Backend.Open(ctx, name, offset, length)
	if err != nil {
		return nil, err
	}
	return &reader{r: r, lim: b.read, ctx: ctx, name: name}, nil
}

// wait blocks until lim grants n ≤ Burst tokens or ctx is done.
func wait(ctx context.Context, lim *rate.Limiter, n int) error {
	err := lim.WaitN(ctx, n)
	if err != nil && ctx.Err() == nil {
		if _, ok := ctx.Deadline(); ok {
			// WaitN fails at once, without a context error, when the
			// tokens would come only after ctx's deadline.
			return fmt.Errorf("%w: %w", context.DeadlineExceeded, err)
		}
	}
	return err
}

// writer passes the bytes of one object on to the wrapped Writer at the
// rate of its backend.
type writer struct {
	w    storage.Writer
	lim  *rate.Limiter
	ctx  context.Context
	name string
	err  error // the wait that failed a Write: Commit fails with it
	done bool  // Commit or Abort was called
}

func (w *writer) Write(p []byte) (int, error) {
	if w.done || len(p) == 0 {
		return w.w.Write(p) // nothing to count; the wrapped Writer answers
	}
	if w.err != nil {
		return 0, w.err
	}
	n := 0
	for len(p) > 0 {
		piece := p[:min(len(p), w.lim.Burst())]
		if err := wait(w.ctx, w.lim, len(piece)); err != nil {
			w.err = &storage.Error{Op: "write", Name: w.name, Err: err}
			return n, w.err
		}
		k, err := w.w.Write(piece)
		n += k
		if err != nil {
			return n, err // the wrapped Writer fails its Commit itself
		}
		p = p[len(piece):]
	}
	return n, nil
}

// Commit implements storage.Writer. After a Write failed waiting for its
// tokens, it aborts the object and returns that Write's error.
func (w *writer) Commit() error {
	if w.err != nil && !w.done {
		w.done = true
		_ = w.w.Abort() // Commit's error is the one that matters
		return w.err
	}
	w.done = true
	return w.w.Commit()
}

func (w *writer) Abort() error {
	w.done = true
	return w.w.Abort()
}

// reader passes on the bytes of the wrapped reader at the rate of its
// backend: each Read reads first and then waits for the tokens of the bytes
// it got, so that a short read costs only what it returns.
type reader struct {
	r    io.ReadCloser
	lim  *rate.Limiter
	ctx  context.Context
	name string
	err  error // the wait that failed a Read: later Reads fail with it
}

func (r *reader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	if b := r.lim.Burst(); len(p) > b {
		p = p[:b]
	}
	n, err := r.r.Read(p)
	if n > 0 {
		if werr := wait(r.ctx, r.lim, n); werr != nil {
			// The n bytes are in p; hand them over with the error.
			r.err = &storage.Error{Op: "read", Name: r.name, Err: werr}
			return n, r.err
		}
	}
	return n, err
}

func (r *reader) Close() error { return r.r.Close() }
