package engine

import (
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/ckpt/ckpt/internal/cachetier"
	"github.com/ckpt/ckpt/internal/group"
	"github.com/ckpt/ckpt/internal/manifest"
	"github.com/ckpt/ckpt/internal/recovery"
	"github.com/ckpt/ckpt/internal/sharedtier"
)

// fetch carries out a Fetch plan: every rank fetches its object from the
// shared tier, splits it into its files and verifies them, the sets encode
// their parity again if the plan says so (p.Reprotect), so the cached copy
// is protected as before, and the manifest is written where p.WriteManifest
// says. A non-empty reason means the attempt failed; err means the job
// itself failed.
func (e *Engine) fetch(ctx context.Context, sm *manifest.Manifest, p recovery.Plan) (*Restored, string, error) {
	m := *sm
	m.Level = manifest.LevelCache
	// fetchPart hashes every file on its way into the cache and commits
	// it only if it matches: no reading back.
	ferr := e.fetchPart(ctx, &m)
	// Round 2 (per candidate fetched from the shared tier): every rank
	// sends whether its files came back intact; one rank's failure makes
	// the attempt fail for all.
	failed, err := e.reportAll(ctx, ferr)
	if err != nil {
		return nil, "", err
	}
	if failed != nil {
		return nil, failed.Error(), nil // the planner says it was the fetch
	}
	e.epoch++
	if p.Reprotect {
		// Re-protect: the same sets encode the same parity again.
		perr := e.reprotect(ctx, &m, e.epoch)
		// Round 3: every rank sends whether its parity came out as the
		// manifest says.
		failed, err = e.reportAll(ctx, perr)
		if err != nil {
			return nil, "", err
		}
		if failed != nil {
			return nil, fmt.Sprintf("re-protecting the fetched checkpoint failed: %v", failed), nil
		}
	}
	merr := e.writeManifest(ctx, &m, p)
	// Round 4: every rank votes whether its node's cache holds the
	// manifest: only then is the checkpoint complete at level 1 again.
	ok, err := group.AllAgree(ctx, e.Comm, merr == nil)
	if err != nil {
		return nil, "", err
	}
	if !ok {
		return nil, "a node could not write the manifest of the fetched checkpoint", nil
	}
	return e.restored(&m, SourceShared, p.Rebuilt), "", nil
}

// fetchPart copies this rank's object from the shared tier back into its
// files in the cache, each checked against the manifest's hash before it
// is committed.
func (e *Engine) fetchPart(ctx context.Context, m *manifest.Manifest) error {
	if e.Shared == nil {
		return fmt.Errorf("rank %d has no shared tier configured", e.Rank)
	}
	cachetier.RemovePart(ctx, e.Cache, m.Name, e.Rank)
	out := e.partWriter(ctx, m.Name, m.Parts[e.Rank])
	r, err := e.Shared.Open(ctx, sharedtier.DataObject(m.Name, e.Rank), 0, -1)
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

// reprotect encodes this rank's parity again for a fetched checkpoint and
// checks it against the manifest (encoding is deterministic).
func (e *Engine) reprotect(ctx context.Context, m *manifest.Manifest, epoch uint64) error {
	part := m.Parts[e.Rank]
	parity, err := e.encode(ctx, m.Name, epoch, m.Meta, m.Sets[part.Set], part.Member, m.Parts)
	if err != nil {
		return err
	}
	if !slices.Equal(parity, part.Parity) {
		return fmt.Errorf("rank %d: re-encoded parity %v differs from the manifest's %v", e.Rank, parity, part.Parity)
	}
	return nil
}
