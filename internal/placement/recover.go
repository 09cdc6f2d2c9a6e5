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

// SetStatus is the state of one redundancy set after a failure.
type SetStatus struct {
	Set         int   // index of the set in the sets argument
	Survivors   []int // ranks whose cached files survive, ascending
	Lost        []int // ranks whose cached files are lost, ascending
	Recoverable bool  // len(Lost) <= m: the lost members can be rebuilt
}

// Assessment is the state of all sets after a failure.
type Assessment struct {
	Sets        []SetStatus // one per set, in the order of the sets argument
	Lost        []int       // every lost rank, ascending
	Recoverable bool        // every set is recoverable
}

// Recoverability reports, for the redundancy sets formed over members and a
// scheme that tolerates m lost members per set, which members f destroys and
// whether each set can be rebuilt. The sets must partition the ranks of
// members and each set must have more than m members (a set no larger than its
// parity count holds no data to protect); otherwise the error wraps
// ErrInvalid.
func Recoverability(members []Member, sets [][]int, m int, f Failure) (Assessment, error) {
	byRank, err := memberMap(members)
	if err != nil {
		return Assessment{}, err
	}
	if m < 0 {
		return Assessment{}, fmt.Errorf("%w: tolerance m = %d is negative", ErrInvalid, m)
	}
	if err := checkPartition(byRank, sets); err != nil {
		return Assessment{}, err
	}
	lost := f.index()
	a := Assessment{Sets: make([]SetStatus, len(sets)), Recoverable: true}
	for i, set := range sets {
		if len(set) <= m {
			return Assessment{}, fmt.Errorf("%w: set %d has %d members, it cannot carry %d parity", ErrInvalid, i, len(set), m)
		}
		st := SetStatus{Set: i}
		for _, r := range set {
			if lost.hits(byRank[r]) {
				st.Lost = append(st.Lost, r)
			} else {
				st.Survivors = append(st.Survivors, r)
			}
		}
		slices.Sort(st.Lost)
		slices.Sort(st.Survivors)
		st.Recoverable = len(st.Lost) <= m
		a.Recoverable = a.Recoverable && st.Recoverable
		a.Lost = append(a.Lost, st.Lost...)
		a.Sets[i] = st
	}
	slices.Sort(a.Lost)
	return a, nil
}

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
// failure to pass to Recoverability for a restart on the layout now.
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
// Recoverability(old, sets, m, Unreachable(old, now, f)) lists it as lost.
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

// memberMap validates members and indexes them by rank.
func memberMap(members []Member) (map[int]Member, error) {
	sorted, err := sortMembers(members)
	if err != nil {
		return nil, err
	}
	byRank := make(map[int]Member, len(sorted))
	for _, m := range sorted {
		byRank[m.Rank] = m
	}
	return byRank, nil
}

// checkPartition checks that sets hold every rank of byRank exactly once.
func checkPartition(byRank map[int]Member, sets [][]int) error {
	setOf := make(map[int]int, len(byRank))
	for i, set := range sets {
		if len(set) == 0 {
			return fmt.Errorf("%w: set %d is empty", ErrInvalid, i)
		}
		for _, r := range set {
			if _, ok := byRank[r]; !ok {
				return fmt.Errorf("%w: set %d holds rank %d, which is not a member", ErrInvalid, i, r)
			}
			if j, dup := setOf[r]; dup {
				return fmt.Errorf("%w: rank %d is in sets %d and %d", ErrInvalid, r, j, i)
			}
			setOf[r] = i
		}
	}
	if len(setOf) != len(byRank) {
		missing := -1
		for r := range byRank {
			if _, ok := setOf[r]; !ok && (missing < 0 || r < missing) {
				missing = r
			}
		}
		return fmt.Errorf("%w: rank %d is in no set", ErrInvalid, missing)
	}
	return nil
}
