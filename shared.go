package ckpt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/ckpt/ckpt/internal/group"
	"github.com/ckpt/ckpt/internal/manifest"
	"github.com/ckpt/ckpt/internal/sharedtier"
	"github.com/ckpt/ckpt/storage"
)

// SourceShared is the Restored.Source of a checkpoint fetched back from the
// shared tier.
const SourceShared = "shared"

// Flush copies a committed checkpoint from the caches to the shared tier
// (blocking: it returns once the copy is durable). It is collective. Every
// file is verified against the manifest as it is read from the cache; the
// shared manifest is written last, by rank 0, only after every rank's
// object is durable, so a failed flush leaves no checkpoint on the tier and
// the cached copy untouched.
func (s *Store) Flush(ctx context.Context, name string) error {
	if s.shared == nil {
		return errors.New("ckpt: flush: no shared tier configured (Options.Shared)")
	}
	m, err := s.cachedManifest(ctx, name)
	ferr := err
	if err == nil {
		ferr = s.flushPart(ctx, m)
	}
	reports, err := gatherJSON(ctx, s.comm, errString(ferr))
	if err != nil {
		return fmt.Errorf("ckpt: flush %q: %w", name, err)
	}
	if err := firstError(reports, func(e string) string { return e }); err != nil {
		return fmt.Errorf("ckpt: flush %q: %w", name, err)
	}
	var werr error
	if s.rank == 0 {
		werr = sharedtier.Commit(ctx, s.shared, m)
	}
	ok, err := group.AllAgree(ctx, s.comm, werr == nil)
	switch {
	case err != nil:
		return fmt.Errorf("ckpt: flush %q: %w", name, err)
	case !ok:
		return fmt.Errorf("ckpt: flush %q: writing the shared manifest failed: %v", name, werr)
	}
	if s.rank != 0 {
		return nil
	}
	return sharedtier.Retain(ctx, s.shared, s.keepShared)
}

// cachedManifest reads one checkpoint's manifest from this node's cache.
func (s *Store) cachedManifest(ctx context.Context, name string) (*manifest.Manifest, error) {
	b, err := storage.Load(ctx, s.cache, manifestObject(name))
	if err != nil {
		return nil, fmt.Errorf("no committed checkpoint %q in this node's cache: %w", name, err)
	}
	return manifest.Decode(b)
}

// flushPart streams this rank's files into its object on the shared tier,
// verifying each against the manifest on the way.
func (s *Store) flushPart(ctx context.Context, m *manifest.Manifest) error {
	part := m.Parts[s.rank]
	w, err := s.shared.Create(ctx, sharedtier.DataObject(m.Name, s.rank))
	if err != nil {
		return err
	}
	for _, f := range part.Files {
		r, err := s.cache.Open(ctx, fileObject(m.Name, s.rank, f.Name), 0, -1)
		if err != nil {
			w.Abort()
			return err
		}
		_, err = io.Copy(w, manifest.NewContentVerifyingReader(r, f.Name, f.Size, f.Hash))
		r.Close()
		if err != nil {
			w.Abort()
			return fmt.Errorf("%s: %w", f.Name, err)
		}
	}
	return w.Commit()
}

// fetch restores a checkpoint from the shared tier into the caches: every
// rank fetches its object, splits it into its files, verifies them, and the
// sets encode their parity again so the cached copy is protected as before.
func (s *Store) fetch(ctx context.Context, sm *manifest.Manifest) (*Restored, string, error) {
	m := *sm
	m.Level = manifest.LevelCache
	part := m.Parts[s.rank]
	ferr := s.fetchPart(ctx, &m)
	if ferr == nil {
		ferr = s.verifyFiles(ctx, m.Name, part)
	}
	reports, err := gatherJSON(ctx, s.comm, errString(ferr))
	if err != nil {
		return nil, "", err
	}
	if err := firstError(reports, func(e string) string { return e }); err != nil {
		return nil, fmt.Sprintf("fetch from the shared tier failed: %v", err), nil
	}
	// Re-protect: the same sets encode the same parity again.
	s.epoch++
	perr := s.reprotect(ctx, &m, s.epoch)
	reports, err = gatherJSON(ctx, s.comm, errString(perr))
	if err != nil {
		return nil, "", err
	}
	if err := firstError(reports, func(e string) string { return e }); err != nil {
		return nil, fmt.Sprintf("re-protecting the fetched checkpoint failed: %v", err), nil
	}
	merr := s.ensureManifest(ctx, &m)
	ok, err := group.AllAgree(ctx, s.comm, merr == nil)
	if err != nil {
		return nil, "", err
	}
	if !ok {
		return nil, "a node could not write the manifest of the fetched checkpoint", nil
	}
	all := make([]int, s.size)
	for i := range all {
		all[i] = i
	}
	return &Restored{s: s, m: &m, Source: SourceShared, Rebuilt: all}, "", nil
}

func (s *Store) fetchPart(ctx context.Context, m *manifest.Manifest) error {
	if s.shared == nil {
		return fmt.Errorf("rank %d has no shared tier configured", s.rank)
	}
	(&Checkpoint{s: s, name: m.Name}).removeLocal(ctx)
	part := m.Parts[s.rank]
	out := &splitWriter{ctx: ctx, b: s.cache}
	for _, f := range part.Files {
		out.names = append(out.names, fileObject(m.Name, s.rank, f.Name))
		out.sizes = append(out.sizes, f.Size)
	}
	r, err := s.shared.Open(ctx, sharedtier.DataObject(m.Name, s.rank), 0, -1)
	if err != nil {
		return err
	}
	defer r.Close()
	if _, err := io.Copy(out, r); err != nil {
		out.Abort()
		return err
	}
	return out.Finish()
}

// verifyFiles checks this rank's application files (not its parity).
func (s *Store) verifyFiles(ctx context.Context, name string, p manifest.Part) error {
	p.Parity = nil
	return s.verifyPart(ctx, name, p)
}

// reprotect encodes this rank's parity again for a fetched checkpoint and
// checks it against the manifest (encoding is deterministic).
func (s *Store) reprotect(ctx context.Context, m *manifest.Manifest, epoch uint64) error {
	part := m.Parts[s.rank]
	parity, err := s.encode(ctx, m.Name, epoch, m.Meta, m.Sets[part.Set], part.Member, m.Parts)
	if err != nil {
		return err
	}
	if !slices.Equal(parity, part.Parity) {
		return fmt.Errorf("rank %d: re-encoded parity %v differs from the manifest's %v", s.rank, parity, part.Parity)
	}
	return nil
}

// retainCache keeps the newest keep checkpoints of the node's cache and
// removes older ones (keep ≤ 0 keeps everything; the newest is never
// removed).
func (s *Store) retainCache(ctx context.Context, keep int) error {
	if keep <= 0 {
		return nil
	}
	ms, err := cachedCheckpoints(ctx, s.cache)
	if err != nil {
		return err
	}
	for _, m := range ms[min(keep, len(ms)):] {
		if s.pinned != nil && s.pinned(m.Name) {
			continue
		}
		if err := sharedtier.RemoveObjects(ctx, s.cache, manifestObject(m.Name), m.Name+"/"); err != nil {
			return err
		}
	}
	return nil
}
