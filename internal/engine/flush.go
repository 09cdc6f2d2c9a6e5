package engine

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/ckpt/ckpt/internal/cachetier"
	"github.com/ckpt/ckpt/internal/group"
	"github.com/ckpt/ckpt/internal/manifest"
	"github.com/ckpt/ckpt/internal/sharedtier"
)

// Flush copies a committed checkpoint from the caches to the shared tier
// (blocking: it returns once the copy is durable). It is collective. Every
// file is verified against the manifest as it is read from the cache; the
// shared manifest is written last, by rank 0, only after every rank's
// object is durable, so a failed flush leaves no checkpoint on the tier and
// the cached copy untouched.
func (e *Engine) Flush(ctx context.Context, name string) error {
	if e.Shared == nil {
		return errors.New("ckpt: flush: no shared tier configured (Options.Shared)")
	}
	m, err := cachetier.Load(ctx, e.Cache, name)
	ferr := err
	if err == nil {
		ferr = e.flushPart(ctx, m)
	}
	// Round 1: every rank sends whether its object is durable on the
	// shared tier; rank 0 commits the checkpoint there only if all are.
	failed, err := e.reportAll(ctx, ferr)
	if err != nil {
		return fmt.Errorf("ckpt: flush %q: %w", name, err)
	}
	if failed != nil {
		return fmt.Errorf("ckpt: flush %q: %w", name, failed)
	}
	var werr error
	if e.Rank == 0 {
		werr = sharedtier.Commit(ctx, e.Shared, m)
	}
	// Round 2: rank 0 tells the others whether the shared manifest is
	// written, so that every rank returns the same outcome.
	ok, err := group.AllAgree(ctx, e.Comm, werr == nil)
	switch {
	case err != nil:
		return fmt.Errorf("ckpt: flush %q: %w", name, err)
	case !ok:
		return fmt.Errorf("ckpt: flush %q: writing the shared manifest failed: %v", name, werr)
	}
	if e.Rank != 0 {
		return nil
	}
	return sharedtier.Retain(ctx, e.Shared, e.KeepShared)
}

// flushPart streams this rank's files into its object on the shared tier,
// verifying each against the manifest on the way.
func (e *Engine) flushPart(ctx context.Context, m *manifest.Manifest) error {
	part := m.Parts[e.Rank]
	w, err := e.Shared.Create(ctx, sharedtier.DataObject(m.Name, e.Rank))
	if err != nil {
		return err
	}
	for _, f := range part.Files {
		r, err := e.Cache.Open(ctx, cachetier.FileObject(m.Name, e.Rank, f.Name), 0, -1)
		if err != nil {
			w.Abort()
			return err
		}
		size, hash := f.Stored() // the stored form goes as it is
		_, err = io.Copy(w, manifest.NewContentVerifyingReader(r, f.Name, size, hash))
		r.Close()
		if err != nil {
			w.Abort()
			return fmt.Errorf("%s: %w", f.Name, err)
		}
	}
	return w.Commit()
}
