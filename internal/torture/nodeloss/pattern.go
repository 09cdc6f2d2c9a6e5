package nodeloss

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
)

// File is one file of a rank's part of a checkpoint.
type File struct {
	Name string
	Data []byte
}

// Job is what a pattern's job writes: Files[c][r] are rank r's files in
// checkpoint c (named "c1", "c2", ...).
type Job struct {
	Nodes, RanksPerNode int
	Files               [][][]File
}

// Ranks is the job's size.
func (j Job) Ranks() int { return j.Nodes * j.RanksPerNode }

// CheckpointName is the name of checkpoint c.
func CheckpointName(c int) string { return fmt.Sprintf("c%d", c+1) }

// Content sizes: a file spans up to several redundancy blocks (the
// cluster's 4 KiB), the first file of a part is never empty (so that
// every part and every parity has a byte to corrupt), the others may be.
const (
	maxFiles    = 2
	maxFileSize = 2*4096 + 1000
)

// Generate draws a pattern and the job's content from seed: one to three
// checkpoints, each flushed with probability 2/5; no node lost in 3 of 10
// patterns, one in 3 of 10, two in 2 of 10, any number up to all in 2 of
// 10; no corruption in 2 of 5 patterns, one to three in the others, half
// of them of the newest checkpoint. Corruptions (and wiped copies) hit
// only surviving nodes' caches (a lost node's are gone anyway), parity
// only when the scheme has some, and the shared tier only where a
// checkpoint was flushed. The same arguments give the same pattern and
// content.
func Generate(seed int64, nodes, ranksPerNode int, parity bool) (Pattern, Job) {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x6e6f64656c6f7373)) // "nodeloss"
	job := Job{Nodes: nodes, RanksPerNode: ranksPerNode}
	p := Pattern{Seed: seed}
	ranks := job.Ranks()
	for range 1 + rng.IntN(3) {
		parts := make([][]File, ranks)
		for r := range parts {
			for f := range 1 + rng.IntN(maxFiles) {
				size := rng.IntN(maxFileSize + 1)
				if f == 0 {
					size = 1 + rng.IntN(maxFileSize)
				}
				data := make([]byte, size+7)
				for i := 0; i < size; i += 8 {
					binary.LittleEndian.PutUint64(data[i:], rng.Uint64())
				}
				data = data[:size:size]
				parts[r] = append(parts[r], File{Name: fmt.Sprintf("f%d", f), Data: data})
			}
		}
		job.Files = append(job.Files, parts)
		p.Flushed = append(p.Flushed, rng.IntN(5) < 2)
	}

	lost := 0
	switch x := rng.IntN(10); {
	case x < 3:
	case x < 6:
		lost = 1
	case x < 8:
		lost = min(2, nodes)
	default:
		lost = 1 + rng.IntN(nodes)
	}
	p.Lost = rng.Perm(nodes)[:lost]
	slices.Sort(p.Lost)

	var alive []int // ranks on surviving nodes
	for r := range ranks {
		if !slices.Contains(p.Lost, r%nodes) {
			alive = append(alive, r)
		}
	}
	var flushed []int
	for c, f := range p.Flushed {
		if f {
			flushed = append(flushed, c)
		}
	}
	n := 0
	if rng.IntN(5) < 3 {
		n = 1 + rng.IntN(3)
	}
	for range n {
		// The newest checkpoint is hit in half of the corruptions, so that
		// restarts often have to fall back to an older one.
		x := Corruption{Checkpoint: len(p.Flushed) - 1, Pos: rng.Uint32(), Mask: byte(1 + rng.IntN(255))}
		if rng.IntN(2) == 0 {
			x.Checkpoint = rng.IntN(len(p.Flushed))
		}
		kinds := []Kind{CacheData, CacheData, CacheParity, CacheManifest, CacheWiped, SharedData, SharedManifest}
		x.Kind = kinds[rng.IntN(len(kinds))]
		switch {
		case x.Kind == CacheParity && !parity:
			x.Kind = CacheData
		case (x.Kind == SharedData || x.Kind == SharedManifest) && len(flushed) == 0:
			x.Kind = CacheData
		}
		switch x.Kind {
		case CacheData, CacheParity:
			if len(alive) == 0 {
				continue
			}
			x.Rank = alive[rng.IntN(len(alive))]
			if x.Kind == CacheData {
				files := job.Files[x.Checkpoint][x.Rank]
				var nonEmpty []int
				for i, f := range files {
					if len(f.Data) > 0 {
						nonEmpty = append(nonEmpty, i)
					}
				}
				x.File = nonEmpty[rng.IntN(len(nonEmpty))]
			}
		case CacheManifest, CacheWiped:
			if len(alive) == 0 {
				continue
			}
			x.Node = alive[rng.IntN(len(alive))] % nodes
		case SharedData, SharedManifest:
			x.Checkpoint = flushed[rng.IntN(len(flushed))]
			if x.Kind == SharedData {
				x.Rank = rng.IntN(ranks)
			}
		}
		p.add(x, nodes)
	}
	// In a quarter of the patterns the newest checkpoint is wiped from one
	// to three surviving nodes, so that restarts often have to fall back
	// to an older checkpoint while the nodes live on.
	if rng.IntN(4) == 0 && len(alive) > 0 {
		for range 1 + rng.IntN(3) {
			p.add(Corruption{Kind: CacheWiped, Checkpoint: len(p.Flushed) - 1, Node: alive[rng.IntN(len(alive))] % nodes}, nodes)
		}
	}
	return p, job
}

// add adds x to p's corruptions unless an earlier one makes it moot or
// could be undone by it: a second flip of the same object could restore
// it, and a node's wiped copy has nothing left to damage.
func (p *Pattern) add(x Corruption, nodes int) {
	node := x.Node
	if x.Kind == CacheData || x.Kind == CacheParity {
		node = x.Rank % nodes
	}
	cache := x.Kind != SharedData && x.Kind != SharedManifest
	if slices.ContainsFunc(p.Corrupt, func(y Corruption) bool {
		return y.target() == x.target() || cache && y.Kind == CacheWiped && y.Checkpoint == x.Checkpoint && y.Node == node
	}) {
		return
	}
	p.Corrupt = append(p.Corrupt, x)
}
