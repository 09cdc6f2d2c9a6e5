// Package location opens a storage tier by its location, a directory or
// s3://BUCKET/PREFIX, and composes the decorators every tier opened this way
// gets. It is the one place where ckpt's backends are stacked: the root's
// OpenShared, a Store's CKPT_SHARED tier and the staging server
// (ckpt stage) all open the shared tier through Open.
//
// # The stack
//
// From the backend outwards, always in this order:
//
//  1. the backend for the location: package local for a directory, package
//     s3 for s3://BUCKET/PREFIX (endpoint and credentials from the
//     environment, as s3.ParseURL reads them);
//  2. Options.Inject, if set: a hook for tests that plant faults in the
//     backend itself, so that they meet every decorator above;
//  3. throttle (Options.Bandwidth): the bytes written and read are capped,
//     to model a parallel file system shared with other jobs;
//  4. retry (Options.Retry): operations that fail with an error that
//     storage.IsPermanent does not call permanent are tried again, with
//     exponential backoff and jitter (see package retry for what is safe to
//     retry and what is not).
//
// Retry sits above throttle, so a retried Open gets a throttled reader
// again and the limit counts every byte that moves. On an object store the
// client also retries each HTTP request itself (s3.Config.MaxRetries); the
// decorator's tries come on top, and cover what a request's retry cannot,
// such as a List that fails halfway through its pages. Both decorators
// implement storage.Unwrapper, so storage.As finds the optional interfaces
// (Locator, Cleaner, Describer) of the backend at the bottom.
//
// Then, once, at open: if Options.CleanTemp is positive, the leftovers of
// writers that died before Commit (temp files of package local, incomplete
// multipart uploads of package s3) that are older than it are removed
// through the backend's storage.Cleaner. A failed cleanup does not fail the
// open (it is reported to Options.OnClean): it only leaves storage in use.
//
// Opening itself is not retried: a caller that opens a tier wants to know
// at once that it is out of reach, and whether that error is permanent (a
// missing bucket, refused credentials) or may pass.
package location

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ckpt/ckpt/internal/storage/local"
	"github.com/ckpt/ckpt/internal/storage/retry"
	"github.com/ckpt/ckpt/internal/storage/s3"
	"github.com/ckpt/ckpt/internal/storage/throttle"
	"github.com/ckpt/ckpt/storage"
)

// DefaultCleanAge is the age beyond which leftovers of dead writers are
// removed at open by those who clean (Options.CleanTemp): far longer than a
// live writer pauses between writes (package local) or takes to upload one
// object (package s3) at the bandwidths ckpt is used with.
const DefaultCleanAge = time.Hour

// Options say which decorators Open applies. The zero value retries with
// retry.DefaultPolicy, caps nothing and cleans nothing.
type Options struct {
	// Bandwidth caps the bytes written, and separately the bytes read,
	// through the tier, in bytes per second (see package throttle). Zero
	// (or any value that is not a positive finite number) means no cap.
	Bandwidth float64

	// Retry is how transient failures are retried. A zero Attempts means
	// retry.DefaultPolicy; Attempts 1 turns retrying off.
	Retry retry.Policy

	// CleanTemp, when positive, removes at open the leftovers of dead
	// writers older than this (DefaultCleanAge is a safe choice). Zero
	// cleans nothing: a tool that only looks at a tier must not change it,
	// and the many ranks of a job leave the cleaning to one of them.
	CleanTemp time.Duration

	// OnClean, if set, is told the outcome of the cleanup at open: how many
	// leftovers were removed, and the error that stopped it, if any.
	OnClean func(removed int, err error)

	// Inject, if set, wraps the backend before any decorator: tests use it
	// to plant faults.
	Inject func(storage.Backend) storage.Backend
}

// Open opens the tier at loc: a directory (created if missing), or
// s3://BUCKET/PREFIX. A location that looks like a mistyped object store
// ("S3://b/p", "s3:b/p") is an error rather than a directory named "s3:".
// The errors of opening are those of s3.ParseURL, s3.New and local.New. The
// returned
// backend is decorated as the package documentation says; closing it closes
// the backend underneath.
func Open(ctx context.Context, loc string, opts Options) (storage.Backend, error) {
	b, err := openBackend(ctx, loc)
	if err != nil {
		return nil, err
	}
	if opts.Inject != nil {
		b = opts.Inject(b)
	}
	b = throttle.New(b, opts.Bandwidth)
	p := opts.Retry
	if p.Attempts == 0 {
		p = retry.DefaultPolicy
	}
	b = retry.New(b, p)
	if opts.CleanTemp > 0 {
		n, err := Clean(ctx, b, opts.CleanTemp)
		if opts.OnClean != nil {
			opts.OnClean(n, err)
		}
	}
	return b, nil
}

// openBackend opens the bare backend for loc.
func openBackend(ctx context.Context, loc string) (storage.Backend, error) {
	if scheme, _, ok := strings.Cut(loc, ":"); ok && !strings.HasPrefix(loc, "s3://") && strings.EqualFold(scheme, "s3") {
		// A mistyped location would become a local directory named
		// "s3:" silently.
		return nil, fmt.Errorf("shared tier %q: an object store location is written s3://BUCKET/PREFIX", loc)
	}
	if strings.HasPrefix(loc, "s3://") {
		cfg, err := s3.ParseURL(loc)
		if err != nil {
			return nil, err
		}
		return s3.New(ctx, cfg)
	}
	return local.New(loc)
}

// Clean removes the leftovers of dead writers older than olderThan from b,
// if b (or a backend it decorates) is a storage.Cleaner, and returns how
// many it removed; a backend with nothing to clean returns 0 and no error.
func Clean(ctx context.Context, b storage.Backend, olderThan time.Duration) (int, error) {
	c, ok := storage.As[storage.Cleaner](b)
	if !ok {
		return 0, nil
	}
	return c.CleanTemp(ctx, olderThan)
}
