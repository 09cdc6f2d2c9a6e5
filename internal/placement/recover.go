package placement

import (
	"fmt"
	"slices"
)

// Failure names what was lost: whole nodes and whole failure domains. A
// member is hit if its Node is in Nodes or its FailureDomain is in Domains.
type Failure struct {
	Nodes   []string
	Domains []string
}

// Hits reports whether m is lost in f.
func (f Failure) Hits(m Member) bool {
	return slices.Contains(f.Nodes, m.Node) || slices.Contains(f.Domains, m.FailureDomain())
}

// lostSet is a Failure indexed for repeated Hits.
type lostSet struct{ nodes, domains map[string]bool }

func (f Failure) index() lostSet {
	s := lostSet{nodes: map[string]bool{}, domains: map[string]bool{}}
	for _, n := range f.Nodes {
		s.nodes[n] = true
	}
	for _, d := range f.Domains {
		s.domains[d] = true
	}
	return s
}

func (s lostSet) hits(m Member) bool { return s.nodes[m.Node] || s.domains[m.FailureDomain()] }

// Source says where a rank finds its checkpoint files after a restart.
type Source uint8

const (
	// Local: the rank runs on its old node, which survived; the files are
	// in that node's cache already.
	Local Source = iota
	// Fetch: the rank moved; its old node survived and runs a rank of the
	// new layout, so the files are copied from that node's cache.
	Fetch
	// Rebuild: the old node's cache is gone (the node or its domain
	// failed, or the node is not part of the new layout). The files are
	// rebuilt from the set's redundancy if the set is recoverable, else
	// fetched from the shared tier.
	Rebuild
)

func (s Source) String() string {
	switch s {
	case Local:
		return "local"
	case Fetch:
		return "fetch"
	case Rebuild:
		return "rebuild"
	}
	return fmt.Sprintf("Source(%d)", uint8(s))
}

// Move says where one rank's files are and where they must be.
type Move struct {
	Rank   int
	From   string // node that held the files at checkpoint time
	To     string // node the rank runs on now
	Source Source
}

// Unreachable returns f widened by the nodes of old that run no rank in now:
// their caches cannot be read by the restarted job. The result is the
// failure as a restart on the layout now sees it.
func Unreachable(old, now []Member, f Failure) Failure {
	present := map[string]bool{}
	for _, m := range now {
		present[m.Node] = true
	}
	out := Failure{Nodes: slices.Clone(f.Nodes), Domains: slices.Clone(f.Domains)}
	for _, m := range old {
		if !present[m.Node] {
			out.Nodes = append(out.Nodes, m.Node)
		}
	}
	slices.Sort(out.Nodes)
	out.Nodes = slices.Compact(out.Nodes)
	return out
}

// Replacement says, for every rank, where its files are after a restart on
// the layout now, given the layout old at checkpoint time and the failure f
// (SCR's shuffile). Ranks keep their numbers, so old and now must hold the
// same ranks. The result is ordered by rank. A rank is Rebuild exactly when
// Unreachable(old, now, f) hits its old member. Whether its set can be
// rebuilt, and from what, is decided by internal/recovery, which also
// counts a Fetch rank as lost: the engine reads a rank's files only from
// the cache of the node it runs on now.
func Replacement(old, now []Member, f Failure) ([]Move, error) {
	before, err := sortMembers(old)
	if err != nil {
		return nil, fmt.Errorf("old layout: %w", err)
	}
	after, err := sortMembers(now)
	if err != nil {
		return nil, fmt.Errorf("new layout: %w", err)
	}
	if err := sameRanks(before, after); err != nil {
		return nil, err
	}
	lost := Unreachable(old, now, f).index()
	moves := make([]Move, len(before))
	for i, o := range before {
		n := after[i]
		mv := Move{Rank: o.Rank, From: o.Node, To: n.Node}
		switch {
		case lost.hits(o):
			mv.Source = Rebuild
		case o.Node == n.Node:
			mv.Source = Local
		default:
			mv.Source = Fetch
		}
		moves[i] = mv
	}
	return moves, nil
}

// sameRanks checks that two rank-sorted layouts hold the same ranks.
func sameRanks(before, after []Member) error {
	i, j := 0, 0
	for i < len(before) || j < len(after) {
		switch {
		case j == len(after) || (i < len(before) && before[i].Rank < after[j].Rank):
			return fmt.Errorf("%w: rank %d is in the old layout but not in the new one", ErrInvalid, before[i].Rank)
		case i == len(before) || after[j].Rank < before[i].Rank:
			return fmt.Errorf("%w: rank %d is in the new layout but not in the old one", ErrInvalid, after[j].Rank)
		}
		i++
		j++
	}
	return nil
}
