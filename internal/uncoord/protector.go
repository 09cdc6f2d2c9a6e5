package uncoord

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/ckpt/ckpt/internal/msglog/logstore"
	"github.com/ckpt/ckpt/internal/placement"
)

// Protectors opens a rank's message log at its protector. FileProtectors
// is the implementation for nodes that share a machine (the local
// launcher); a networked protector, appending to a log on another host,
// implements the same seam.
type Protectors interface {
	OpenLog(rank int) (logstore.Store, error)
}

// FileProtectors keeps each rank's log as a logstore.File in the cache
// directory of its protector's node: Dir(rank) names that directory.
type FileProtectors struct {
	Dir func(rank int) (string, error)
}

// OpenLog opens (creating it if need be) the log of rank.
func (p FileProtectors) OpenLog(rank int) (logstore.Store, error) {
	dir, err := p.Dir(rank)
	if err != nil {
		return nil, err
	}
	dir = filepath.Join(dir, "msglog")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("uncoord: protector of rank %d: %w", rank, err)
	}
	return logstore.OpenFile(filepath.Join(dir, fmt.Sprintf("rank-%d.log", rank)))
}

// ProtectorOf returns the rank that protects rank's log and checkpoints:
// as in RADIC's ring, the next rank in rank order, wrapping around, whose
// failure domain is not rank's, so that losing a whole node (or domain)
// loses a rank or its log, never both. ok is false when every member
// shares rank's domain (a job on one node): nothing can protect it.
func ProtectorOf(members []placement.Member, rank int) (protector int, ok bool) {
	ms := slices.Clone(members)
	slices.SortFunc(ms, func(a, b placement.Member) int { return a.Rank - b.Rank })
	i := slices.IndexFunc(ms, func(m placement.Member) bool { return m.Rank == rank })
	if i < 0 {
		return 0, false
	}
	dom := ms[i].FailureDomain()
	for k := 1; k < len(ms); k++ {
		m := ms[(i+k)%len(ms)]
		if m.FailureDomain() != dom {
			return m.Rank, true
		}
	}
	return 0, false
}
