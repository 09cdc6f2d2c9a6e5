// Package inspect is what operator tools (ckpt ls, inspect, verify, status)
// see of a job's checkpoints from outside the job: the caches of its nodes
// and the shared tier, read-only. It lists the checkpoints their manifests
// describe and verifies every hash, reporting whether a checkpoint could
// be recovered and how, by the rules a restart follows (the planner of
// internal/recovery decides both).
package inspect

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/ckpt/ckpt/internal/cachetier"
	"github.com/ckpt/ckpt/internal/engine"
	"github.com/ckpt/ckpt/internal/manifest"
	"github.com/ckpt/ckpt/internal/recovery"
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
	// Manifest is the checkpoint's manifest: the first node's (by name)
	// whose cache holds one that decodes, else the shared tier's. Nil when
	// no manifest of it decodes anywhere: then only Name and Damaged say
	// anything, and ID, Ranks, Scheme and Bytes are zero.
	Manifest *manifest.Manifest
	// Damaged are the manifests of the checkpoint that are not as they
	// should be: unreadable, failing to decode, or differing from the copy
	// Manifest is. A node whose manifest does not decode is not in
	// InCache, nor is InShared set for a shared manifest that does not; a
	// copy that decodes but differs still counts there, as a restart
	// would take it.
	Damaged []Damage
}

// Tiers of a Damage.
const (
	TierCache  = "cache"
	TierShared = "shared"
)

// Damage is a checkpoint's manifest that is not as it should be.
type Damage struct {
	Tier    string // TierCache or TierShared
	Node    string // the node whose cache holds it; "" on the shared tier
	Object  string // the manifest's object on that tier
	Problem string // "unreadable: ...", the decoding error, or how it differs
}

// String says where the damaged manifest is and what is wrong with it.
func (d Damage) String() string {
	where := "the shared tier's manifest"
	if d.Tier == TierCache {
		where = fmt.Sprintf("the manifest in %s's cache", d.Node)
	}
	return where + ": " + d.Problem
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

// sameCheckpoint tells whether two decoded manifests describe the same
// checkpoint alike; the shared tier's copy differs only in its Level.
func sameCheckpoint(a, b *manifest.Manifest) bool {
	ac, bc := *a, *b
	ac.Level, bc.Level = manifest.LevelCache, manifest.LevelCache
	at, aerr := manifest.Encode(&ac)
	bt, berr := manifest.Encode(&bc)
	return aerr == nil && berr == nil && bytes.Equal(at, bt)
}

// ListCheckpoints lists every checkpoint with a manifest in any cache or on
// the shared tier, newest first. It reads manifests only. A manifest that
// does not decode is listed as damage of the checkpoint it names (a
// Listing with a nil Manifest if none of its manifests decodes, after the
// others), never skipped.
func ListCheckpoints(ctx context.Context, t Tiers) ([]Listing, error) {
	byName := map[string]*Listing{}
	var order []*Listing
	// from says whose copy a Listing's Manifest is, for mismatches.
	from := map[*Listing]string{}
	add := func(m *manifest.Manifest, source string) (*Listing, string) {
		key := fmt.Sprintf("%s#%d", m.Name, m.ID)
		l := byName[key]
		if l == nil {
			l = &Listing{Name: m.Name, ID: m.ID, Ranks: m.Ranks, Scheme: m.Scheme, Bytes: appBytes(m), Manifest: m}
			byName[key] = l
			order = append(order, l)
			from[l] = source
			return l, ""
		}
		if !sameCheckpoint(l.Manifest, m) {
			return l, "decodes, but differs from " + from[l]
		}
		return l, ""
	}
	// pending are the manifests that do not decode, by checkpoint name.
	type pending struct {
		name string
		d    Damage
	}
	var bad []pending
	nodes := make([]string, 0, len(t.Caches))
	for n := range t.Caches {
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	for _, n := range nodes {
		ms, unreadable, err := cachetier.Scan(ctx, t.Caches[n])
		if err != nil {
			return nil, fmt.Errorf("cache of %s: %w", n, err)
		}
		for _, m := range ms {
			l, differs := add(m, fmt.Sprintf("the manifest in %s's cache", n))
			// A restart takes a differing copy for the checkpoint too
			// (it reads the lowest rank's): the node holds it.
			l.InCache = append(l.InCache, n)
			if differs != "" {
				l.Damaged = append(l.Damaged, Damage{TierCache, n, cachetier.ManifestObject(m.Name), differs})
			}
		}
		for _, u := range unreadable {
			bad = append(bad, pending{u.Name, Damage{TierCache, n, u.Object, u.Err.Error()}})
		}
	}
	if t.Shared != nil {
		ms, unreadable, err := sharedtier.Scan(ctx, t.Shared)
		if err != nil {
			return nil, fmt.Errorf("shared tier: %w", err)
		}
		for _, m := range ms {
			l, differs := add(m, "the shared tier's manifest")
			l.InShared = true
			if differs != "" {
				l.Damaged = append(l.Damaged, Damage{TierShared, "", sharedtier.ManifestObject(m.Name), differs})
			}
		}
		for _, u := range unreadable {
			bad = append(bad, pending{u.Name, Damage{TierShared, "", u.Object, u.Err.Error()}})
		}
	}
	// Attach the manifests that do not decode to the checkpoints of
	// their name, or list the name on its own.
	attach := func(name string, d Damage) {
		found := false
		for _, l := range order {
			if l.Name == name {
				l.Damaged = append(l.Damaged, d)
				found = true
			}
		}
		if !found {
			l := &Listing{Name: name, Damaged: []Damage{d}}
			order = append(order, l)
		}
	}
	for _, p := range bad {
		attach(p.name, p.d)
	}
	out := make([]Listing, 0, len(order))
	for _, l := range order {
		out = append(out, *l)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if (out[i].Manifest == nil) != (out[j].Manifest == nil) {
			return out[j].Manifest == nil
		}
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
	How         engine.Source // engine.SourceCache, SourceRebuild or SourceShared as Restored.Source says, or "" when not recoverable
	Reason      string        // why not, or what the cheaper ways lacked
	Ranks       []RankCheck
	Shared      string   // "ok", a problem, or "" when not on the shared tier
	Damaged     []Damage // the listing's damaged manifests
}

// VerifyCheckpoint recomputes every hash of a listed checkpoint: each rank's
// files and parity in the cache of the node the manifest names, and the
// shared tier's objects. It reports whether the checkpoint is recoverable
// from the caches as they are, by rebuilding from redundancy, or from the
// shared tier — the order Restart tries them in.
//
// It is a driver of the planner, as Restart is (internal/recovery, "A tool
// that verifies a checkpoint from outside a job"): it checks everything
// beforehand, so one recovery.Decide answers, by the same rules a restart
// follows. The job it plans for is the checkpoint's own layout: every rank
// on the node that wrote it.
//
// A node whose cache manifest of the checkpoint is damaged offers it to no
// restart; the restart checks that node's files against another node's
// manifest like any other's, and writes the manifest back (recovery's
// rules 5 and 11). So does this: the damage is reported in Damaged, and
// the verdict counts those files as what they are. A checkpoint no
// manifest of which decodes is not recoverable.
func VerifyCheckpoint(ctx context.Context, t Tiers, l Listing) Verification {
	m := l.Manifest
	if m == nil {
		v := Verification{Name: l.Name, Damaged: l.Damaged, Reason: "no manifest of it decodes"}
		return v
	}
	v := Verification{Name: m.Name, ID: m.ID, Damaged: l.Damaged}
	cp := recovery.FromManifest(m)
	// Only the layout's nodes are nodes of the job: the planner refuses
	// manifest states of others, and a restart of this layout would not
	// see them either.
	cp.Manifests = map[string]recovery.State{}
	for _, d := range l.Damaged {
		if d.Tier == TierCache && slices.Contains(cp.Nodes, d.Node) {
			cp.Manifests[d.Node] = recovery.Corrupt
		}
	}
	for _, n := range l.InCache {
		if slices.Contains(cp.Nodes, n) {
			cp.Manifests[n] = recovery.Intact
		}
	}
	held := make([]recovery.Held, m.Ranks)
	for _, p := range m.Parts {
		rc := RankCheck{Rank: p.Rank, Node: p.Node}
		var err error
		if cache := t.Caches[p.Node]; cache == nil {
			err = fmt.Errorf("no cache for node %s", p.Node)
			held[p.Rank] = recovery.Held{Data: recovery.Missing, Parity: recovery.Missing}
		} else {
			held[p.Rank], err = engine.CheckPart(ctx, cache, m.Name, p)
		}
		// The ranks' problems are reported in Ranks; the reason does not
		// quote them again.
		held[p.Rank].Why = ""
		rc.OK, rc.Problem = err == nil, engine.ErrString(err)
		v.Ranks = append(v.Ranks, rc)
	}
	inCache := len(l.InCache) > 0 && slices.ContainsFunc(cp.Nodes, func(n string) bool { return cp.Manifests[n] == recovery.Intact })
	if inCache {
		cp.Held = held // the planner takes holdings only of a checkpoint some node holds
	}
	if l.InShared && t.Shared != nil {
		parts, err := verifySharedCopy(ctx, t.Shared, m)
		cp.Shared = &recovery.Shared{Parts: parts}
		v.Shared = "ok"
		if err != nil {
			v.Shared = err.Error()
		}
	}
	p, err := recovery.Decide(recovery.Input{Ranks: m.Ranks, Nodes: cp.Nodes, Checkpoints: []recovery.Checkpoint{cp}})
	switch {
	case err != nil:
		v.Reason = err.Error() // a manifest the planner cannot read: not recoverable
	case p.Action == recovery.UseCache:
		v.Recoverable, v.How = true, engine.SourceCache
	case p.Action == recovery.Rebuild:
		v.Recoverable, v.How = true, engine.SourceRebuild
	case p.Action == recovery.Fetch:
		v.Recoverable, v.How, v.Reason = true, engine.SourceShared, p.CacheWhy
	case len(p.Skipped) > 0:
		v.Reason = p.Skipped[0].Reason // None: why neither tier gives it back
	default:
		v.Reason = p.Why()
	}
	switch {
	case !inCache && slices.ContainsFunc(l.Damaged, func(d Damage) bool { return d.Tier == TierCache }):
		v.Reason = "no node cache holds a manifest of it that decodes"
	case !inCache:
		// No node cache holds its manifest: normal once a finished job's
		// caches were removed, and no loss of members to report.
		v.Reason = "in no node cache"
	}
	return v
}

// verifySharedCopy checks every rank's object on the shared tier: the
// state of each (recovery.Shared's Parts) and the first problem.
func verifySharedCopy(ctx context.Context, b storage.Backend, m *manifest.Manifest) ([]recovery.State, error) {
	parts := make([]recovery.State, m.Ranks)
	var first error
	for _, p := range m.Parts {
		err := verifySharedPart(ctx, b, m.Name, p)
		parts[p.Rank] = recovery.StateOf(err)
		if err != nil && first == nil {
			first = fmt.Errorf("rank %d: %w", p.Rank, err)
		}
	}
	return parts, first
}

// verifySharedPart checks one rank's object on the shared tier.
func verifySharedPart(ctx context.Context, b storage.Backend, name string, p manifest.Part) error {
	r, err := b.Open(ctx, sharedtier.DataObject(name, p.Rank), 0, -1)
	if err != nil {
		return err
	}
	defer r.Close()
	for _, f := range p.Files {
		size, hash := f.Stored() // checked in the form it is stored in
		vr := manifest.NewContentVerifyingReader(io.LimitReader(r, size), f.Name, size, hash)
		if _, err := io.Copy(io.Discard, vr); err != nil {
			return err
		}
	}
	if n, _ := io.Copy(io.Discard, r); n > 0 {
		return fmt.Errorf("%d bytes more than the manifest lists", n)
	}
	return nil
}
