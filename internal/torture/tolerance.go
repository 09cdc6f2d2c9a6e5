package torture

import (
	"fmt"

	"github.com/ckpt/ckpt/internal/launch"
	"github.com/ckpt/ckpt/internal/placement"
	"github.com/ckpt/ckpt/internal/redundancy"
)

// Redundancy is what a job's checkpoints in the node caches survive: its
// redundancy sets and how many members of one set may be lost.
type Redundancy struct {
	Scheme    string
	Tolerates int     // members of one set the scheme rebuilds (its parity shards)
	Sets      [][]int // ranks of each set
	NodeOf    []int   // node of each rank
}

// NewRedundancy is the redundancy of a job of ranks on nodes under scheme
// (as `ckpt run --redundancy` spells it): the sets the engine forms
// (placement.FormSets over the launcher's placement, launch.NodeOf).
func NewRedundancy(scheme string, ranks, nodes int) (Redundancy, error) {
	s, err := redundancy.ParseScheme(scheme)
	if err != nil {
		return Redundancy{}, err
	}
	r := Redundancy{Scheme: s.String(), Tolerates: s.Parity, NodeOf: make([]int, ranks)}
	members := make([]placement.Member, ranks)
	for i := range ranks {
		r.NodeOf[i] = launch.NodeOf(i, ranks, nodes)
		members[i] = placement.Member{Rank: i, Node: fmt.Sprintf("node%d", r.NodeOf[i])}
	}
	if r.Sets, err = placement.FormSets(members, s.SetSize()); err != nil {
		return Redundancy{}, err
	}
	return r, nil
}

// Damage is what faults did to the newest checkpoint since it was
// committed.
type Damage struct {
	LostNodes     map[int]bool // node caches deleted, or their manifest unreadable
	LostRanks     map[int]bool // a rank's cached data unusable (corrupted)
	AllCaches     bool         // every node's cache is gone
	SharedCorrupt bool         // the shared tier's newest copy is corrupted
}

// Add records what fault f did to a job of redundancy r.
func (d *Damage) Add(f Fault, r Redundancy) {
	if d.LostNodes == nil {
		d.LostNodes, d.LostRanks = map[int]bool{}, map[int]bool{}
	}
	switch f.Kind {
	case KillNode, CorruptCacheManifest:
		d.LostNodes[f.Target] = true
	case CorruptData:
		d.LostRanks[f.Target] = true
	case CorruptSharedObject, CorruptSharedManifest:
		// The runner deletes every cache too, so that the restart must
		// read the shared tier and find the corruption.
		d.AllCaches, d.SharedCorrupt = true, true
	}
}

// Judge tells whether the newest committed checkpoint survives damage d
// under redundancy r, and if not why (a short reason, the key of
// lost_beyond_tolerance's "why"). A checkpoint survives when no set lost
// more members than the scheme rebuilds; losing it is then a bug.
func Judge(r Redundancy, d Damage) (within bool, why string) {
	if d.AllCaches && d.SharedCorrupt {
		return false, "all caches lost and the newest shared copy corrupted"
	}
	if d.AllCaches {
		return false, "all caches lost"
	}
	worst := 0
	for _, set := range r.Sets {
		lost := 0
		for _, rank := range set {
			if d.LostRanks[rank] || (rank < len(r.NodeOf) && d.LostNodes[r.NodeOf[rank]]) {
				lost++
			}
		}
		worst = max(worst, lost)
	}
	if worst > r.Tolerates {
		return false, fmt.Sprintf("a set lost %d members, %s rebuilds %d", worst, r.Scheme, r.Tolerates)
	}
	return true, ""
}
