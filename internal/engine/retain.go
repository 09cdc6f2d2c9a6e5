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

// retainReport is what a rank tells the others for cache retention: its
// node, the checkpoints whose manifest its node's cache holds (sent by the
// node's lowest rank only, the others' would be the same: what the
// planner needs of each manifest, recovery.FromManifest, not the manifest
// itself, which every rank would have to decode), and what its node's
// cache holds of its own part of each, by candidateKey.
type retainReport struct {
	Node        string                   `json:"node"`
	Checkpoints []recovery.Checkpoint    `json:"checkpoints,omitempty"`
	Held        map[string]recovery.Held `json:"held,omitempty"`
}

// candidateKey names a checkpoint in a retainReport.
func candidateKey(name string, id uint64) string { return fmt.Sprintf("%s#%d", name, id) }

// retainCache runs cache retention after the commit of man (collective:
// every rank of a job that keeps KeepCache > 0 calls it). The node's
// lowest rank removes what the job's caches do not keep from its node's
// cache.
func (e *Engine) retainCache(ctx context.Context, man *manifest.Manifest) error {
	// A rank whose cache cannot be listed still takes part in the round
	// (the others would wait for it), reporting nothing: its part counts
	// as lost, which only makes the others keep more.
	cached, _, lerr := cachetier.ScanWith(ctx, e.Cache, e.decodeMemo)
	lowest := e.Rank == LowestRankOn(man, e.Node)
	mine := retainReport{Node: e.Node, Held: map[string]recovery.Held{}}
	for _, m := range cached {
		if lowest {
			mine.Checkpoints = append(mine.Checkpoints, recovery.FromManifest(m))
		}
		if m.Ranks == e.Size {
			mine.Held[candidateKey(m.Name, m.ID)] = statPart(ctx, e.Cache, m.Name, m.Parts[e.Rank])
		}
	}
	e.pruneMemo(cached)
	// Round 4 (when the caches keep a bounded number): every rank sends
	// what its node's cache holds, so that all decide alike.
	all, err := GatherJSON(ctx, e.Comm, mine)
	if err != nil {
		return err
	}
	if lerr != nil {
		return lerr
	}
	cands := cacheCandidates(e.Size, all)
	if e.Eligible != nil {
		// A checkpoint Restart would pass over does not count as the
		// newest recoverable one, which retention must keep.
		for i, c := range cands {
			cands[i].Recoverable = c.Recoverable && e.Eligible(c.Name, c.ID)
		}
	}
	doomed := sharedtier.Doomed(cands, e.KeepCache)
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
	nodes := make([]string, len(all))
	for r, rep := range all {
		nodes[r] = nodeName(rep.Node, r)
	}
	// The lowest rank's summary of each checkpoint, and the nodes that
	// hold its manifest.
	var cps []recovery.Checkpoint
	index := map[string]int{}
	for r, rep := range all {
		for _, cp := range rep.Checkpoints {
			k := candidateKey(cp.Name, cp.ID)
			i, ok := index[k]
			if !ok {
				i = len(cps)
				index[k] = i
				cp.Manifests = map[string]recovery.State{}
				cps = append(cps, cp)
			}
			cps[i].Manifests[nodes[r]] = recovery.Intact
		}
	}
	var out []sharedtier.Candidate
	for _, cp := range cps {
		ok := false
		if cp.Ranks == size {
			cp.Held = make([]recovery.Held, size)
			for r := range cp.Held {
				h, found := all[r].Held[candidateKey(cp.Name, cp.ID)]
				if !found {
					h = recovery.Held{Data: recovery.Missing, Parity: recovery.Missing, Why: "no manifest of it in the node's cache"}
				}
				cp.Held[r] = h
			}
			p, err := recovery.Decide(recovery.Input{Ranks: size, Nodes: nodes, Checkpoints: []recovery.Checkpoint{cp}})
			ok = err == nil && (p.Action == recovery.UseCache || p.Action == recovery.Rebuild)
		}
		out = append(out, sharedtier.Candidate{Name: cp.Name, ID: cp.ID, Recoverable: ok})
	}
	slices.SortStableFunc(out, func(a, b sharedtier.Candidate) int {
		if a.ID != b.ID {
			return cmp.Compare(b.ID, a.ID)
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// decodeMemo is manifest.Decode, remembering what it decoded: a commit
// lists the cache twice (for the next ID, and for retention), and decoding
// (strict, with a check of the canonical form) would otherwise cost more
// than the rest of retention. The manifests it returns are shared:
// read-only.
func (e *Engine) decodeMemo(text []byte) (*manifest.Manifest, error) {
	if m, ok := e.decoded[string(text)]; ok {
		return m, nil
	}
	m, err := manifest.Decode(text)
	if err == nil {
		e.remember(text, m)
	}
	return m, err
}

// remember tells decodeMemo that text decodes to m.
func (e *Engine) remember(text []byte, m *manifest.Manifest) {
	if e.decoded == nil {
		e.decoded = map[string]*manifest.Manifest{}
	}
	e.decoded[string(text)] = m
}

// pruneMemo forgets the manifests decodeMemo remembers that are not in
// ms (those the cache no longer holds).
func (e *Engine) pruneMemo(ms []*manifest.Manifest) {
	held := make(map[*manifest.Manifest]bool, len(ms))
	for _, m := range ms {
		held[m] = true
	}
	for text, m := range e.decoded {
		if !held[m] {
			delete(e.decoded, text)
		}
	}
}

// statPart is a cheap CheckPart for retention: each of a rank's data files
// and its parity is present with the size the manifest gives it. Contents
// are not hashed (a restart verifies every byte, and a commit cannot
// afford to read back the caches): a flipped bit passes.
func statPart(ctx context.Context, cache storage.Backend, name string, p manifest.Part) recovery.Held {
	var derr, perr error
	for _, f := range p.Files {
		if derr == nil {
			size, _ := f.Stored()
			derr = statObject(ctx, cache, cachetier.FileObject(name, p.Rank, f.Name), size)
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
