package engine

// Cache retention after a commit. Each node's cache used to be trimmed to
// its newest checkpoints by listing order alone, so a run of damaged
// checkpoints could leave a job with nothing to restart from. Now the
// ranks decide together which checkpoints the caches keep: the KeepCache
// newest and, beyond them, the newest one a restart of this job could
// recover from the caches (sharedtier.Doomed's rule).

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/ckpt/ckpt/internal/cachetier"
	"github.com/ckpt/ckpt/internal/manifest"
	"github.com/ckpt/ckpt/internal/recovery"
	"github.com/ckpt/ckpt/internal/sharedtier"
	"github.com/ckpt/ckpt/storage"
)

// retainReport is what a rank tells the others for cache retention: the
// manifests of its node's cache (sent by the node's lowest rank only; the
// node's other ranks hold the same) and what its node's cache holds of its
// own part of each, by candidate key.
type retainReport struct {
	Offer offer                    `json:"offer"`
	Held  map[string]recovery.Held `json:"held,omitempty"`
}

// candidateKey names a checkpoint in a retainReport.
func candidateKey(m *manifest.Manifest) string { return fmt.Sprintf("%s#%d", m.Name, m.ID) }

// retainCache runs cache retention after the commit of man (collective:
// every rank of a job that keeps KeepCache > 0 calls it). The node's
// lowest rank removes what the job's caches do not keep from its node's
// cache.
func (e *Engine) retainCache(ctx context.Context, man *manifest.Manifest) error {
	// A rank whose cache cannot be listed still takes part in the round
	// (the others would wait for it), reporting nothing: its part counts
	// as lost, which only makes the others keep more.
	cached, lerr := cachetier.List(ctx, e.Cache)
	lowest := e.Rank == LowestRankOn(man, e.Node)
	mine := retainReport{Offer: offer{Node: e.Node}, Held: map[string]recovery.Held{}}
	for _, m := range cached {
		if lowest {
			if b, err := manifest.Encode(m); err == nil {
				mine.Offer.Cache = append(mine.Offer.Cache, b)
			}
		}
		if m.Ranks == e.Size {
			mine.Held[candidateKey(m)] = statPart(ctx, e.Cache, m.Name, m.Parts[e.Rank])
		}
	}
	// Round 4 (when the caches keep a bounded number): every rank sends
	// what its node's cache holds, so that all decide alike.
	all, err := GatherJSON(ctx, e.Comm, mine)
	if err != nil {
		return err
	}
	if lerr != nil {
		return lerr
	}
	doomed := sharedtier.Doomed(cacheCandidates(e.Size, all), e.KeepCache)
	if !lowest {
		return nil
	}
	return cachetier.Retain(ctx, e.Cache, doomed, e.Pinned)
}

// cacheCandidates is the checkpoints of a job's caches, newest first (the
// planner's order, recovery's rule 1), each with whether a restart could
// recover it from the caches as the ranks reported them: by the planner's
// rules (UseCache or Rebuild), from every rank's stat of its own part. A
// rank whose node's cache lists no manifest of a checkpoint counts as
// having lost its part; a restart would still check its files against
// another node's manifest, so this errs towards calling a checkpoint
// damaged, which only makes retention keep an older one as well.
func cacheCandidates(size int, all []retainReport) []sharedtier.Candidate {
	offers := make([]offer, len(all))
	for r, rep := range all {
		offers[r] = rep.Offer
	}
	in, cands := planInput(size, offers)
	var out []sharedtier.Candidate
	for i, cp := range in.Checkpoints {
		m := cands[i].cache
		if m == nil {
			continue // offers hold cached manifests only
		}
		ok := false
		if m.Ranks == size {
			cp.Held = make([]recovery.Held, size)
			for r := range cp.Held {
				h, found := all[r].Held[candidateKey(m)]
				if !found {
					h = recovery.Held{Data: recovery.Missing, Parity: recovery.Missing, Why: "no manifest of it in the node's cache"}
				}
				cp.Held[r] = h
			}
			p, err := recovery.Decide(recovery.Input{Ranks: size, Nodes: in.Nodes, Checkpoints: []recovery.Checkpoint{cp}})
			ok = err == nil && (p.Action == recovery.UseCache || p.Action == recovery.Rebuild)
		}
		out = append(out, sharedtier.Candidate{Name: m.Name, ID: m.ID, Recoverable: ok})
	}
	// The planner's order: newest first, by ID then name.
	slices.SortStableFunc(out, func(a, b sharedtier.Candidate) int {
		if a.ID != b.ID {
			return cmp.Compare(b.ID, a.ID)
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// statPart is a cheap CheckPart for retention: each of a rank's data files
// and its parity is present with the size the manifest gives it. Contents
// are not hashed (a restart verifies every byte, and a commit cannot
// afford to read back the caches): a flipped bit passes.
func statPart(ctx context.Context, cache storage.Backend, name string, p manifest.Part) recovery.Held {
	var derr, perr error
	for _, f := range p.Files {
		if derr == nil {
			derr = statObject(ctx, cache, cachetier.FileObject(name, p.Rank, f.Name), f.Size)
		}
	}
	if len(p.Parity) > 0 {
		var size int64
		for _, f := range p.Parity {
			size += f.Size
		}
		perr = statObject(ctx, cache, cachetier.ParityObject(name, p.Rank), size)
	}
	err := derr
	if err == nil {
		err = perr
	}
	return recovery.Held{Data: recovery.StateOf(derr), Parity: recovery.StateOf(perr), Why: ErrString(err)}
}

// statObject checks that an object is present with size bytes.
func statObject(ctx context.Context, b storage.Backend, name string, size int64) error {
	i, err := b.Stat(ctx, name)
	switch {
	case err != nil:
		return fmt.Errorf("%s: %w", name, err)
	case i.Size != size:
		return fmt.Errorf("%s: %w: %d bytes, the manifest says %d", name, manifest.ErrCorrupt, i.Size, size)
	}
	return nil
}
