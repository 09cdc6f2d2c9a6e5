package placement

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
)

// Member is one rank of a job and where it runs.
type Member struct {
	Rank   int    // rank number, unique and non-negative
	Node   string // node the rank runs on (its node-local cache), non-empty
	Domain string // optional failure-domain label; empty means the node itself
}

// FailureDomain returns the label of the unit that fails with m: its Domain
// if set, else its Node.
func (m Member) FailureDomain() string {
	if m.Domain != "" {
		return m.Domain
	}
	return m.Node
}

// ErrInvalid is wrapped by errors about malformed arguments: duplicate or
// negative ranks, empty node names, a node with two domain labels, sets that
// do not partition the members.
var ErrInvalid = errors.New("invalid placement")

// ErrInfeasible is matched (errors.Is) by every *InfeasibleError.
var ErrInfeasible = errors.New("no redundancy sets fit the failure domains")

// InfeasibleError says why no redundancy sets of the requested size exist.
// Its message reads well after a scheme prefix, for example
// "xor: sets of 4 need 4 distinct failure domains, the job has 3 nodes".
type InfeasibleError struct {
	SetSize  int    // requested (minimum) set size
	Ranks    int    // ranks in the job
	Domains  int    // distinct failure domains in the job
	Labelled bool   // some member has a Domain label ("failure domains" rather than "nodes")
	Sets     int    // ⌊Ranks/SetSize⌋, the most sets the job can form
	Crowded  string // a failure domain holding more than Sets ranks; "" if Domains < SetSize
	Count    int    // ranks in Crowded
}

func (e *InfeasibleError) Error() string {
	unit := "nodes"
	if e.Labelled {
		unit = "failure domains"
	}
	if e.Crowded == "" {
		return fmt.Sprintf("sets of %d need %d distinct failure domains, the job has %d %s",
			e.SetSize, e.SetSize, e.Domains, unit)
	}
	what := "node"
	if e.Labelled {
		what = "failure domain"
	}
	return fmt.Sprintf("sets of %d take one rank per failure domain and %d ranks make only %d such sets, but %s %q holds %d ranks",
		e.SetSize, e.Ranks, e.Sets, what, e.Crowded, e.Count)
}

// Is reports whether target is ErrInfeasible.
func (e *InfeasibleError) Is(target error) bool { return target == ErrInfeasible }

// FormSets groups the ranks of members into redundancy sets of at least
// setSize members each, no two members of a set in the same failure domain
// (see the package documentation for the sizes and the algorithm). Every rank
// is in exactly one set; each set is in ascending rank order and the sets are
// ordered by their smallest rank. The result depends only on the members, not
// on their order. setSize 1 puts every rank in a set of its own.
//
// It returns an error wrapping ErrInvalid for malformed members and an
// *InfeasibleError when no such sets exist.
func FormSets(members []Member, setSize int) ([][]int, error) {
	if setSize < 1 {
		return nil, fmt.Errorf("%w: set size %d, want at least 1", ErrInvalid, setSize)
	}
	sorted, err := sortMembers(members)
	if err != nil {
		return nil, err
	}
	if len(sorted) == 0 {
		return nil, fmt.Errorf("%w: no members", ErrInvalid)
	}
	if setSize == 1 {
		sets := make([][]int, len(sorted))
		for i, m := range sorted {
			sets[i] = []int{m.Rank}
		}
		return sets, nil
	}

	// Group by failure domain, groups in order of their smallest rank.
	index := map[string]int{}
	var groups [][]int
	labelled := false
	for _, m := range sorted {
		labelled = labelled || m.Domain != ""
		d := m.FailureDomain()
		g, ok := index[d]
		if !ok {
			g = len(groups)
			index[d] = g
			groups = append(groups, nil)
		}
		groups[g] = append(groups[g], m.Rank)
	}

	n := len(sorted)
	k := n / setSize
	if len(groups) < setSize {
		return nil, &InfeasibleError{SetSize: setSize, Ranks: n, Domains: len(groups), Labelled: labelled, Sets: k}
	}
	crowd := -1
	for g := range groups {
		if len(groups[g]) > k && (crowd < 0 || len(groups[g]) > len(groups[crowd])) {
			crowd = g
		}
	}
	if crowd >= 0 {
		return nil, &InfeasibleError{
			SetSize: setSize, Ranks: n, Domains: len(groups), Labelled: labelled, Sets: k,
			Crowded: sortedDomainOf(sorted, groups[crowd][0]), Count: len(groups[crowd]),
		}
	}

	// Deal the domain-contiguous sequence round-robin into k sets. Set j
	// receives positions j, j+k, j+2k, ...; a domain of c ≤ k ranks covers c
	// consecutive positions and so lands in c distinct sets.
	sets := make([][]int, k)
	i := 0
	for _, g := range groups {
		for _, r := range g {
			sets[i%k] = append(sets[i%k], r)
			i++
		}
	}
	for _, s := range sets {
		slices.Sort(s)
	}
	slices.SortFunc(sets, func(a, b []int) int { return cmp.Compare(a[0], b[0]) })
	return sets, nil
}

// sortedDomainOf returns the failure domain of rank in members sorted by rank.
func sortedDomainOf(sorted []Member, rank int) string {
	i, _ := slices.BinarySearchFunc(sorted, rank, func(m Member, r int) int { return cmp.Compare(m.Rank, r) })
	return sorted[i].FailureDomain()
}

// sortMembers returns a copy of members sorted by rank, after checking that
// ranks are unique and non-negative, nodes are named, and every node carries
// one domain label.
func sortMembers(members []Member) ([]Member, error) {
	sorted := slices.Clone(members)
	slices.SortFunc(sorted, func(a, b Member) int { return cmp.Compare(a.Rank, b.Rank) })
	domainOf := map[string]string{}
	for i, m := range sorted {
		if m.Rank < 0 {
			return nil, fmt.Errorf("%w: negative rank %d", ErrInvalid, m.Rank)
		}
		if i > 0 && sorted[i-1].Rank == m.Rank {
			return nil, fmt.Errorf("%w: rank %d appears twice (nodes %q and %q)", ErrInvalid, m.Rank, sorted[i-1].Node, m.Node)
		}
		if m.Node == "" {
			return nil, fmt.Errorf("%w: rank %d has no node", ErrInvalid, m.Rank)
		}
		if d, ok := domainOf[m.Node]; ok && d != m.Domain {
			return nil, fmt.Errorf("%w: node %q is in two failure domains, %q and %q", ErrInvalid, m.Node, d, m.Domain)
		}
		domainOf[m.Node] = m.Domain
	}
	return sorted, nil
}
