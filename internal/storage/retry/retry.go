// Package retry is a storage.Backend decorator that tries an operation
// again when it fails with an error that may be transient: a timeout, a
// reset connection, a server's 5xx answer, EIO or ESTALE on a network file
// system. Whether an error is worth another try is decided where it arises,
// by the backend underneath; this package only asks storage.IsPermanent.
//
// # What is retried
//
// Only operations that can be repeated without changing what the caller
// sees:
//
//   - Open, Stat and Remove: the call is simply made again. A Remove that
//     failed transiently and then finds the object gone reports success: the
//     first try most likely removed it and lost the answer (an object store's
//     reply that never came).
//   - List: made again from the start, but the callback is not called again
//     for objects it has already seen: List reports names in byte-wise order,
//     so the retry skips every name up to the last one reported. An error
//     the callback returns is the caller's and ends List at once, unchanged.
//   - Create: made again, before any byte is written. The Writer returned is
//     the backend's own, not a wrapper, so its optional methods (ReadFrom)
//     stay visible.
//
// A Writer's Write and Commit are never retried. The Writer does not keep
// the bytes of a Write after it returns (io.Writer's contract), so a retry
// could not send them again; and the backends make a failed Write fail the
// Commit, so that a short object is never committed. A Commit that failed
// cannot be repeated either: it has discarded the object, and over a
// network it may even have published it while its answer was lost. The
// caller who has the source of the bytes (a flush copying a cache file) is
// the one who can write the object again. Reads from an opened reader are
// not retried for the same reason: the reader is the backend's own.
//
// # When
//
// At most Policy.Attempts tries in all, with a pause before each retry that
// doubles from Policy.Base up to Policy.Max, each pause drawn at random
// between half and the whole of its value (jitter, so that the ranks of a
// job that all met the same hiccup do not come back at the same instant).
// A context that ends during a pause ends the retrying: the operation
// returns its last error together with the context's error (errors.Is
// finds both). A context that is already done is never retried.
//
// The decorator implements storage.Unwrapper, so storage.As finds the
// optional interfaces (Locator, Cleaner, Describer) of the backend beneath.
package retry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/ckpt/ckpt/storage"
)

var (
	_ storage.Backend   = (*Backend)(nil)
	_ storage.Unwrapper = (*Backend)(nil)
)

// Policy says how often and how patiently to retry.
type Policy struct {
	// Attempts is the number of tries in all, the first included (1: no
	// retry).
	Attempts int
	// Base is the pause before the first retry; each further pause
	// doubles, up to Max.
	Base, Max time.Duration
}

// DefaultPolicy is four tries with pauses of at most 0.1, 0.2 and 0.4
// seconds (at least half of each): enough to ride out a dropped connection
// or a file server that hiccups, short enough that a tier that is really
// gone is reported within a second. (The s3 backend's client retries each request itself
// too, Config.MaxRetries times.)
var DefaultPolicy = Policy{Attempts: 4, Base: 100 * time.Millisecond, Max: 2 * time.Second}

// Backend retries the operations of the backend it wraps.
type Backend struct {
	storage.Backend
	policy Policy
	// sleep pauses for d or until ctx is done; tests replace it.
	sleep func(ctx context.Context, d time.Duration) error
}

// New returns b with its transient failures retried as p says. A Policy
// with fewer than 2 attempts returns b itself. Zero pauses are allowed
// (tests); a Max below Base is taken as Base.
func New(b storage.Backend, p Policy) storage.Backend {
	if p.Attempts < 2 {
		return b
	}
	return &Backend{Backend: b, policy: p, sleep: sleep}
}

// Unwrap implements storage.Unwrapper.
func (b *Backend) Unwrap() storage.Backend { return b.Backend }

// sleep waits for d, or until ctx is done and returns its error.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Pause returns the pause before retry number n (1 for the first retry):
// drawn at random from [d/2, d], with d = Base·2^(n-1) capped at Max.
func (p Policy) Pause(n int) time.Duration {
	d := p.Base
	for i := 1; i < n && d < p.Max; i++ {
		d *= 2
	}
	d = min(d, max(p.Max, p.Base))
	if d <= 0 {
		return 0
	}
	return d/2 + rand.N(d/2+1)
}

// do runs op until it succeeds, fails permanently, runs out of attempts or
// ctx ends. retried tells op whether an earlier try failed.
func (b *Backend) do(ctx context.Context, op func(retried bool) error) error {
	var err error
	for try := 1; ; try++ {
		err = op(try > 1)
		if err == nil || storage.IsPermanent(err) || try >= b.policy.Attempts {
			return err
		}
		// A context that ended while the try was failing stops the retries
		// as a canceled pause would, and the error names both causes, so a
		// caller sees the same error whether the cancel came a moment
		// before the pause or during it.
		if cerr := ctx.Err(); cerr != nil {
			if errors.Is(err, cerr) {
				return err
			}
			return fmt.Errorf("%w (retry stopped: %w)", err, cerr)
		}
		if serr := b.sleep(ctx, b.policy.Pause(try)); serr != nil {
			return fmt.Errorf("%w (retry stopped: %w)", err, serr)
		}
	}
}

// Create implements storage.Backend: it retries Create itself, before the
// caller has written anything, and returns the backend's own Writer.
func (b *Backend) Create(ctx context.Context, name string) (storage.Writer, error) {
	var w storage.Writer
	err := b.do(ctx, func(bool) error {
		var err error
		w, err = b.Backend.Create(ctx, name)
		return err
	})
	if err != nil {
		return nil, err
	}
	return w, nil
}

// Open implements storage.Backend: it retries the opening; reads from the
// reader are not retried.
func (b *Backend) Open(ctx context.Context, name string, offset, length int64) (io.ReadCloser, error) {
	var r io.ReadCloser
	err := b.do(ctx, func(bool) error {
		var err error
		r, err = b.Backend.Open(ctx, name, offset, length)
		return err
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// Stat implements storage.Backend.
func (b *Backend) Stat(ctx context.Context, name string) (storage.Info, error) {
	var info storage.Info
	err := b.do(ctx, func(bool) error {
		var err error
		info, err = b.Backend.Stat(ctx, name)
		return err
	})
	return info, err
}

// List implements storage.Backend. A retry lists again from the start and
// skips the names the callback has seen; the callback's own error is
// returned at once.
func (b *Backend) List(ctx context.Context, prefix string, fn func(storage.Info) error) error {
	var (
		last  string // the last name reported to fn
		seen  bool   // whether fn has been called
		fnErr error  // fn's error, which is the caller's and not retried
	)
	err := b.do(ctx, func(bool) error {
		return b.Backend.List(ctx, prefix, func(i storage.Info) error {
			if seen && i.Name <= last {
				return nil
			}
			last, seen = i.Name, true
			if err := fn(i); err != nil {
				fnErr = err
				return errStop
			}
			return nil
		})
	})
	if fnErr != nil && errors.Is(err, errStop) {
		return fnErr
	}
	return err
}

// errStop is what the callback given to the wrapped List returns when the
// caller's callback failed; backends return it unchanged, and List turns
// it back into the caller's error. Being permanent, it is never retried.
var errStop = storage.Permanent(errors.New("retry: list stopped by its callback"))

// Remove implements storage.Backend. ErrNotExist after a failed try counts
// as success (see the package documentation).
func (b *Backend) Remove(ctx context.Context, name string) error {
	return b.do(ctx, func(retried bool) error {
		err := b.Backend.Remove(ctx, name)
		if retried && errors.Is(err, storage.ErrNotExist) {
			return nil
		}
		return err
	})
}
