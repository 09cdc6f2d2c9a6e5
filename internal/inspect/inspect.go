// Package inspect is what operator tools (ckpt ls, inspect, verify, status)
// see of a job's checkpoints from outside the job: the caches of its nodes
// and the shared tier, read-only. It lists the checkpoints their manifests
// describe and verifies every hash, reporting whether a checkpoint could
// be recovered and how, in the order a restart would try.
package inspect

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/ckpt/ckpt/internal/cachetier"
	"github.com/ckpt/ckpt/internal/engine"
	"github.com/ckpt/ckpt/internal/manifest"
	"github.com/ckpt/ckpt/internal/sharedtier"
	"github.com/ckpt/ckpt/internal/storage/local"
	"github.com/ckpt/ckpt/storage"
)

// Tiers are the storage a checkpoint tool looks at from outside a job: the
// caches of the job's nodes, by node name, and the shared tier.
type Tiers struct {
	Caches map[string]storage.Backend
	Shared storage.Backend // nil for none
}

// DefaultCacheRoot is where stores keep their node caches when nothing else
// is configured: one directory per node below it.
func DefaultCacheRoot() string { return filepath.Join(os.TempDir(), "ckpt-cache") }

// OpenCacheRoot opens every node cache below root (one directory per node,
// named after the node), the layout of stores on one machine.
func OpenCacheRoot(root string) (map[string]storage.Backend, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	out := map[string]storage.Backend{}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		b, err := local.New(filepath.Join(root, e.Name()))
		if err != nil {
			return nil, err
		}
		out[e.Name()] = b
	}
	return out, nil
}

// Checkpoint summaries and verification reports.

// Listing is a checkpoint as the tiers hold it.
type Listing struct {
	Name     string
	ID       uint64
	Ranks    int
	Scheme   string
	Bytes    int64    // application bytes over all ranks
	InCache  []string // nodes whose cache holds its manifest
	InShared bool
	Manifest *manifest.Manifest
}

// appBytes is a checkpoint's application bytes over all ranks.
func appBytes(m *manifest.Manifest) int64 {
	var n int64
	for _, p := range m.Parts {
		for _, f := range p.Files {
			n += f.Size
		}
	}
	return n
}

// ListCheckpoints lists every checkpoint with a manifest in any cache or on
// the shared tier, newest first. It reads manifests only.
func ListCheckpoints(ctx context.Context, t Tiers) ([]Listing, error) {
	byName := map[string]*Listing{}
	add := func(m *manifest.Manifest) *Listing {
		key := fmt.Sprintf("%s#%d", m.Name, m.ID)
		l := byName[key]
		if l == nil {
			l = &Listing{Name: m.Name, ID: m.ID, Ranks: m.Ranks, Scheme: m.Scheme, Bytes: appBytes(m), Manifest: m}
			byName[key] = l
		}
		return l
	}
	nodes := make([]string, 0, len(t.Caches))
	for n := range t.Caches {
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	for _, n := range nodes {
		ms, err := cachetier.List(ctx, t.Caches[n])
		if err != nil {
			return nil, fmt.Errorf("cache of %s: %w", n, err)
		}
		for _, m := range ms {
			l := add(m)
			l.InCache = append(l.InCache, n)
		}
	}
	if t.Shared != nil {
		ms, err := sharedtier.List(ctx, t.Shared)
		if err != nil {
			return nil, fmt.Errorf("shared tier: %w", err)
		}
		for _, m := range ms {
			add(m).InShared = true
		}
	}
	var out []Listing
	for _, l := range byName {
		out = append(out, *l)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].ID != out[j].ID {
			return out[i].ID > out[j].ID
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

// RankCheck is what verification found for one rank's files in its cache.
type RankCheck struct {
	Rank    int
	Node    string
	OK      bool
	Problem string `json:",omitempty"`
}

// Verification says whether a checkpoint can be recovered, and how.
type Verification struct {
	Name        string
	ID          uint64
	Recoverable bool
	How         string // "cache", "rebuild" or "shared" as Restored.Source says, or "" when not recoverable
	Reason      string // why not, or what the cheaper ways lacked
	Ranks       []RankCheck
	Shared      string // "ok", a problem, or "" when not on the shared tier
}

// VerifyCheckpoint recomputes every hash of a listed checkpoint: each rank's
// files and parity in the cache of the node the manifest names, and the
// shared tier's objects. It reports whether the checkpoint is recoverable
// from the caches as they are, by rebuilding from redundancy, or from the
// shared tier — the order Restart tries them in.
func VerifyCheckpoint(ctx context.Context, t Tiers, l Listing) Verification {
	m := l.Manifest
	v := Verification{Name: m.Name, ID: m.ID}
	ok := make([]bool, m.Ranks)
	for _, p := range m.Parts {
		rc := RankCheck{Rank: p.Rank, Node: p.Node}
		cache := t.Caches[p.Node]
		var err error
		if cache == nil {
			err = fmt.Errorf("no cache for node %s", p.Node)
		} else {
			err = engine.VerifyPart(ctx, cache, m.Name, p)
		}
		rc.OK, rc.Problem = err == nil, engine.ErrString(err)
		ok[p.Rank] = rc.OK
		v.Ranks = append(v.Ranks, rc)
	}
	lostSets, rebuildable := 0, len(l.InCache) > 0
	for _, set := range m.Sets {
		lost := 0
		for _, r := range set {
			if !ok[r] {
				lost++
			}
		}
		if lost > 0 {
			lostSets++
		}
		if lost > m.M && len(l.InCache) > 0 {
			rebuildable = false
			v.Reason = fmt.Sprintf("set %v lost %d members, %s rebuilds %d", set, lost, m.Scheme, m.M)
		}
	}
	if len(l.InCache) == 0 {
		// No node cache holds its manifest: normal once a finished job's
		// caches were removed, and no loss of members to report.
		v.Reason = "in no node cache"
	}
	switch {
	case len(l.InCache) > 0 && lostSets == 0:
		v.Recoverable, v.How = true, engine.SourceCache
	case rebuildable:
		v.Recoverable, v.How = true, engine.SourceRebuild
	}
	if l.InShared && t.Shared != nil {
		v.Shared = "ok"
		if err := verifySharedCopy(ctx, t.Shared, m); err != nil {
			v.Shared = err.Error()
		} else if !v.Recoverable {
			v.Recoverable, v.How = true, engine.SourceShared
		}
	}
	if !v.Recoverable && v.Reason == "" {
		v.Reason = "not intact in the caches and not on the shared tier"
	}
	return v
}

// verifySharedCopy checks every rank's object on the shared tier.
func verifySharedCopy(ctx context.Context, b storage.Backend, m *manifest.Manifest) error {
	for _, p := range m.Parts {
		r, err := b.Open(ctx, sharedtier.DataObject(m.Name, p.Rank), 0, -1)
		if err != nil {
			return fmt.Errorf("rank %d: %w", p.Rank, err)
		}
		for _, f := range p.Files {
			vr := manifest.NewContentVerifyingReader(io.LimitReader(r, f.Size), f.Name, f.Size, f.Hash)
			if _, err = io.Copy(io.Discard, vr); err != nil {
				break
			}
		}
		if err == nil {
			if n, _ := io.Copy(io.Discard, r); n > 0 {
				err = fmt.Errorf("%d bytes more than the manifest lists", n)
			}
		}
		r.Close()
		if err != nil {
			return fmt.Errorf("rank %d: %w", p.Rank, err)
		}
	}
	return nil
}
