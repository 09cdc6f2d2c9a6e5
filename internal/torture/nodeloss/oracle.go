package nodeloss

import (
	"fmt"
	"slices"

	"github.com/ckpt/ckpt/internal/redundancy"
)

// Kind is what a corruption damages.
type Kind int

// What a corruption damages.
const (
	CacheData      Kind = iota // one data file of a rank's part in its node's cache
	CacheParity                // a rank's parity file in its node's cache
	CacheManifest              // a node's cached copy of the manifest
	SharedData                 // a rank's object on the shared tier
	SharedManifest             // the shared tier's manifest
	// CacheWiped is not a flipped byte: a surviving node's whole copy of
	// the checkpoint (its ranks' files and parity, its manifest) is gone,
	// as if the checkpoint alone was lost from that node.
	CacheWiped
)

func (k Kind) String() string {
	switch k {
	case CacheData:
		return "data"
	case CacheParity:
		return "parity"
	case CacheManifest:
		return "manifest"
	case SharedData:
		return "shared-data"
	case SharedManifest:
		return "shared-manifest"
	case CacheWiped:
		return "wiped"
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Corruption flips one byte of one object: the byte at Pos modulo the
// object's size, XORed with Mask (never 0); or, for CacheWiped, removes a
// node's copy of a checkpoint.
type Corruption struct {
	Kind       Kind
	Checkpoint int // index of the checkpoint, 0 the oldest
	Rank       int // CacheData, CacheParity, SharedData
	File       int // CacheData: index of the file in the rank's part
	Node       int // CacheManifest, CacheWiped: the node slot
	Pos        uint32
	Mask       byte
}

// target is the object c damages: c without where and how.
func (c Corruption) target() Corruption {
	c.Pos, c.Mask = 0, 0
	return c
}

func (c Corruption) String() string {
	at := ""
	switch c.Kind {
	case CacheData:
		at = fmt.Sprintf(" rank %d file %d", c.Rank, c.File)
	case CacheParity, SharedData:
		at = fmt.Sprintf(" rank %d", c.Rank)
	case CacheManifest, CacheWiped:
		at = fmt.Sprintf(" node %d", c.Node)
	}
	return fmt.Sprintf("%s of c%d%s", c.Kind, c.Checkpoint+1, at)
}

// Pattern is what happens to a job in one trial: which checkpoints it
// committed and flushed, which nodes it lost, which bytes went bad.
type Pattern struct {
	Seed    int64
	Flushed []bool // per checkpoint, oldest first: copied to the shared tier
	Lost    []int  // node slots lost, ascending
	Corrupt []Corruption
}

// Checkpoints is how many checkpoints the job committed.
func (p Pattern) Checkpoints() int { return len(p.Flushed) }

func (p Pattern) String() string {
	var flushed []string
	for i, f := range p.Flushed {
		if f {
			flushed = append(flushed, fmt.Sprintf("c%d", i+1))
		}
	}
	s := fmt.Sprintf("seed %d: %d checkpoints, flushed %v, lost nodes %v", p.Seed, len(p.Flushed), flushed, p.Lost)
	for _, c := range p.Corrupt {
		s += "; corrupt " + c.String()
	}
	return s
}

// Layout is the job's shape as the oracle needs it: which node slot each
// rank ran on when it committed, and the redundancy sets (ranks).
type Layout struct {
	Nodes int
	Node  []int // by rank
	Sets  [][]int
}

// Source is where a restart's checkpoint comes from, as the oracle and the
// campaign name it.
type Source string

// Where a restart's checkpoint comes from.
const (
	FromCache   Source = "cache"   // every rank's files intact in the caches
	FromRebuild Source = "rebuild" // lost members rebuilt within tolerance
	FromShared  Source = "shared"  // fetched from the shared tier
	FromScratch Source = "scratch" // no checkpoint: the job starts over
)

// Expectation is the oracle's verdict on a pattern.
type Expectation struct {
	// Within is true when the newest checkpoint is recoverable from the
	// caches: a manifest of it survives on some node, and no set lost
	// more members than the scheme tolerates.
	Within bool
	// Checkpoint is the index of the checkpoint a restart must restore,
	// -1 for none (FromScratch).
	Checkpoint int
	Source     Source
}

func (e Expectation) String() string {
	if e.Source == FromScratch {
		return "scratch"
	}
	return fmt.Sprintf("c%d from %s", e.Checkpoint+1, e.Source)
}

// Tolerance is how many members of one redundancy set a scheme may lose
// and still rebuild them, from the schemes' definitions: SINGLE keeps no
// redundancy; PARTNER keeps a copy of each member on its partner, so one
// of the pair may go; XOR's one parity shard per row rebuilds one lost
// member (Sato et al. 2012, §III: a set withstands failures "as long as two
// or more nodes from the same set do not fail concurrently"); RS K+M is
// maximum distance separable, so any K of its K+M shards rebuild the
// others, and M may go.
func Tolerance(s redundancy.Scheme) (int, error) {
	switch s.Kind {
	case "single":
		return 0, nil
	case "partner", "xor":
		return 1, nil
	case "rs":
		return s.Parity, nil
	}
	return 0, fmt.Errorf("nodeloss: no tolerance rule for redundancy %q", s)
}

// Expect is the oracle: what a restart after pattern p must restore, for a
// job of layout l under a scheme that tolerates tolerance lost members per
// set. Checkpoints are tried newest first, each from the caches, then from
// the shared tier:
//
//   - from the caches if a surviving node holds an intact manifest of it
//     and every set lost at most tolerance members, a member being lost
//     when its node was lost, its node's copy of the checkpoint wiped, or
//     one of its data files or its parity is corrupt; FromCache when no
//     member is lost, else FromRebuild;
//   - from the shared tier if it was flushed and neither the shared
//     manifest nor any rank's shared object is corrupt;
//   - with neither for any checkpoint, FromScratch.
func Expect(l Layout, tolerance int, p Pattern) Expectation {
	newest := p.Checkpoints() - 1
	for c := newest; c >= 0; c-- {
		if src, ok := fromCaches(l, tolerance, p, c); ok {
			return Expectation{Within: c == newest, Checkpoint: c, Source: src}
		}
		if fromShared(p, c) {
			return Expectation{Checkpoint: c, Source: FromShared}
		}
	}
	return Expectation{Checkpoint: -1, Source: FromScratch}
}

// fromCaches says whether checkpoint c is recoverable from the caches
// after p, and how.
func fromCaches(l Layout, tolerance int, p Pattern, c int) (Source, bool) {
	gone := func(n int) bool {
		return slices.Contains(p.Lost, n) || p.corrupt(c, CacheWiped, func(x Corruption) bool { return x.Node == n })
	}
	manifests := false
	for n := range l.Nodes {
		if !gone(n) && !p.corrupt(c, CacheManifest, func(x Corruption) bool { return x.Node == n }) {
			manifests = true
		}
	}
	if !manifests {
		return "", false
	}
	lostAny := false
	for _, set := range l.Sets {
		lost := 0
		for _, r := range set {
			if gone(l.Node[r]) ||
				p.corrupt(c, CacheData, func(x Corruption) bool { return x.Rank == r }) ||
				p.corrupt(c, CacheParity, func(x Corruption) bool { return x.Rank == r }) {
				lost++
			}
		}
		if lost > tolerance {
			return "", false
		}
		lostAny = lostAny || lost > 0
	}
	if lostAny {
		return FromRebuild, true
	}
	return FromCache, true
}

// fromShared says whether checkpoint c can be fetched from the shared tier
// after p.
func fromShared(p Pattern, c int) bool {
	any := func(Corruption) bool { return true }
	return p.Flushed[c] && !p.corrupt(c, SharedManifest, any) && !p.corrupt(c, SharedData, any)
}

// corrupt says whether p corrupts an object of kind k of checkpoint c that
// match accepts.
func (p Pattern) corrupt(c int, k Kind, match func(Corruption) bool) bool {
	return slices.ContainsFunc(p.Corrupt, func(x Corruption) bool { return x.Checkpoint == c && x.Kind == k && match(x) })
}
