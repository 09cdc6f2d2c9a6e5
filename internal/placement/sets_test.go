package placement

import (
	"errors"
	"fmt"
	"math/rand"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/quick"
)

// layout is a random job for testing/quick: a few ranks (not necessarily
// numbered 0..N-1) on a few nodes, the nodes optionally grouped into labelled
// failure domains, and a set size.
type layout struct {
	Members []Member
	SetSize int
}

func (layout) Generate(r *rand.Rand, size int) reflect.Value {
	return reflect.ValueOf(randomLayout(r, 1+r.Intn(8), 1+r.Intn(5), 1+r.Intn(5)))
}

func randomLayout(r *rand.Rand, ranks, nodes, setSize int) layout {
	// Skewed node choice so that crowded domains are common.
	domainOf := make([]string, nodes)
	if r.Intn(2) == 0 {
		nd := 1 + r.Intn(3)
		for i := range domainOf {
			domainOf[i] = fmt.Sprintf("rack%d", r.Intn(nd))
		}
	}
	numbers := r.Perm(ranks + r.Intn(4))[:ranks]
	ms := make([]Member, ranks)
	for i, rank := range numbers {
		n := r.Intn(nodes)
		if r.Intn(3) == 0 {
			n = 0
		}
		ms[i] = Member{Rank: rank, Node: fmt.Sprintf("n%d", n), Domain: domainOf[n]}
	}
	return layout{Members: ms, SetSize: setSize}
}

// feasibleRef decides by exhaustive search whether the ranks of ms can be
// partitioned into sets of at least s members with distinct failure domains
// in every set. It tries every set partition (pruned by the domain rule).
func feasibleRef(ms []Member, s int) bool {
	if len(ms) == 0 {
		return false
	}
	block := make([]int, len(ms)) // block of member i, blocks numbered in order of first use
	var rec func(i, blocks int) bool
	rec = func(i, blocks int) bool {
		if i == len(ms) {
			size := make([]int, blocks)
			for _, b := range block {
				size[b]++
			}
			return slices.Min(size) >= s
		}
		for b := 0; b <= blocks; b++ {
			clash := false
			for j := range i {
				clash = clash || (block[j] == b && ms[j].FailureDomain() == ms[i].FailureDomain())
			}
			if clash {
				continue
			}
			block[i] = b
			if rec(i+1, max(blocks, b+1)) {
				return true
			}
		}
		return false
	}
	return rec(0, 0)
}

// checkSets verifies the guarantees of FormSets for a successful result.
func checkSets(ms []Member, s int, sets [][]int) error {
	byRank := map[int]Member{}
	for _, m := range ms {
		byRank[m.Rank] = m
	}
	seen := map[int]bool{}
	minSize, maxSize := len(ms)+1, 0
	for i, set := range sets {
		if !slices.IsSorted(set) {
			return fmt.Errorf("set %d %v not sorted", i, set)
		}
		if i > 0 && sets[i-1][0] >= set[0] {
			return fmt.Errorf("sets not ordered by smallest rank: %v", sets)
		}
		domains := map[string]bool{}
		for _, r := range set {
			m, ok := byRank[r]
			if !ok || seen[r] {
				return fmt.Errorf("rank %d unknown or repeated in %v", r, sets)
			}
			seen[r] = true
			if domains[m.FailureDomain()] {
				return fmt.Errorf("set %d %v has two members in domain %q", i, set, m.FailureDomain())
			}
			domains[m.FailureDomain()] = true
		}
		minSize, maxSize = min(minSize, len(set)), max(maxSize, len(set))
	}
	if len(seen) != len(ms) {
		return fmt.Errorf("sets %v cover %d of %d ranks", sets, len(seen), len(ms))
	}
	if minSize < s {
		return fmt.Errorf("a set of %d is smaller than %d: %v", minSize, s, sets)
	}
	if maxSize-minSize > 1 {
		return fmt.Errorf("unbalanced sets %v", sets)
	}
	if want := len(ms) / s; len(sets) != want {
		return fmt.Errorf("%d sets, want ⌊%d/%d⌋ = %d", len(sets), len(ms), s, want)
	}
	return nil
}

// TestFormSetsQuick checks FormSets against the exhaustive reference: it
// succeeds exactly when some partition exists, and its sets keep every
// promise.
func TestFormSetsQuick(t *testing.T) {
	infeasible, feasible := 0, 0
	f := func(l layout) bool {
		sets, err := FormSets(l.Members, l.SetSize)
		want := feasibleRef(l.Members, l.SetSize)
		if (err == nil) != want {
			t.Logf("%+v size %d: FormSets err %v, reference feasible %v", l.Members, l.SetSize, err, want)
			return false
		}
		if err != nil {
			infeasible++
			if !errors.Is(err, ErrInfeasible) {
				t.Logf("error %v does not match ErrInfeasible", err)
				return false
			}
			return true
		}
		feasible++
		if e := checkSets(l.Members, l.SetSize, sets); e != nil {
			t.Logf("%+v size %d: %v", l.Members, l.SetSize, e)
			return false
		}
		return true
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 5000}); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d feasible, %d infeasible cases", feasible, infeasible)
	if feasible < 500 || infeasible < 500 {
		t.Errorf("generator is lopsided: %d feasible, %d infeasible cases", feasible, infeasible)
	}
}

// TestFormSetsOrderIndependent shuffles the input: the sets must not change.
func TestFormSetsOrderIndependent(t *testing.T) {
	f := func(l layout, seed int64) bool {
		a, errA := FormSets(l.Members, l.SetSize)
		shuffled := slices.Clone(l.Members)
		rand.New(rand.NewSource(seed)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		b, errB := FormSets(shuffled, l.SetSize)
		if fmt.Sprint(errA) != fmt.Sprint(errB) || !reflect.DeepEqual(a, b) {
			t.Logf("%v → %v, %v; shuffled → %v, %v", l.Members, a, errA, b, errB)
			return false
		}
		return true
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 2000}); err != nil {
		t.Fatal(err)
	}
}

// TestFormSetsLarge checks big random jobs against the feasibility rule of
// the package documentation (an exhaustive search is out of reach there).
func TestFormSetsLarge(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for range 300 {
		l := randomLayout(r, 1+r.Intn(300), 1+r.Intn(40), 1+r.Intn(9))
		count := map[string]int{}
		for _, m := range l.Members {
			count[m.FailureDomain()]++
		}
		k := len(l.Members) / l.SetSize
		want := l.SetSize == 1 || len(count) >= l.SetSize
		for _, c := range count {
			want = want && (l.SetSize == 1 || c <= k)
		}
		sets, err := FormSets(l.Members, l.SetSize)
		if (err == nil) != want {
			t.Fatalf("%d ranks, %d domains, size %d: err %v, want feasible %v", len(l.Members), len(count), l.SetSize, err, want)
		}
		if err == nil {
			if e := checkSets(l.Members, l.SetSize, sets); e != nil {
				t.Fatal(e)
			}
		}
	}
}

func regular(nodes, perNode int) []Member {
	var ms []Member
	for n := range nodes {
		for p := range perNode {
			ms = append(ms, Member{Rank: n*perNode + p, Node: fmt.Sprintf("n%d", n)})
		}
	}
	return ms
}

func TestFormSetsRegular(t *testing.T) {
	for _, tc := range []struct {
		ms   []Member
		size int
		want [][]int
	}{
		{regular(4, 2), 4, [][]int{{0, 2, 4, 6}, {1, 3, 5, 7}}},
		{regular(4, 1), 2, [][]int{{0, 2}, {1, 3}}},
		{regular(5, 1), 2, [][]int{{0, 2, 4}, {1, 3}}},
		{regular(7, 1), 4, [][]int{{0, 1, 2, 3, 4, 5, 6}}},
		{regular(3, 1), 1, [][]int{{0}, {1}, {2}}},
		{regular(1, 3), 1, [][]int{{0}, {1}, {2}}},
		// Uneven: 2 ranks on A, one each on B, C, D: sets of 2.
		{[]Member{{0, "A", ""}, {1, "A", ""}, {2, "B", ""}, {3, "C", ""}, {4, "D", ""}}, 2,
			[][]int{{0, 2, 4}, {1, 3}}},
	} {
		got, err := FormSets(tc.ms, tc.size)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("FormSets(%v, %d) = %v, %v; want %v", tc.ms, tc.size, got, err, tc.want)
		}
	}
}

func TestFormSetsErrors(t *testing.T) {
	for _, tc := range []struct {
		ms   []Member
		size int
		want string
		is   error
	}{
		{regular(3, 1), 4, "sets of 4 need 4 distinct failure domains, the job has 3 nodes", ErrInfeasible},
		{regular(3, 2), 4, "sets of 4 need 4 distinct failure domains, the job has 3 nodes", ErrInfeasible},
		{[]Member{{0, "a", "r1"}, {1, "b", "r1"}, {2, "c", "r2"}}, 3,
			"sets of 3 need 3 distinct failure domains, the job has 2 failure domains", ErrInfeasible},
		{[]Member{{0, "A", ""}, {1, "A", ""}, {2, "A", ""}, {3, "B", ""}, {4, "C", ""}}, 2,
			`sets of 2 take one rank per failure domain and 5 ranks make only 2 such sets, but node "A" holds 3 ranks`, ErrInfeasible},
		{[]Member{{0, "a", "r1"}, {1, "b", "r1"}, {2, "c", "r2"}, {3, "d", "r3"}, {4, "e", "r1"}}, 2,
			`but failure domain "r1" holds 3 ranks`, ErrInfeasible},
		{regular(2, 1), 0, "set size 0", ErrInvalid},
		{nil, 2, "no members", ErrInvalid},
		{[]Member{{0, "a", ""}, {0, "b", ""}}, 1, `rank 0 appears twice (nodes "a" and "b")`, ErrInvalid},
		{[]Member{{-1, "a", ""}}, 1, "negative rank -1", ErrInvalid},
		{[]Member{{3, "", ""}}, 1, "rank 3 has no node", ErrInvalid},
		{[]Member{{0, "a", "r1"}, {1, "a", ""}}, 1, `node "a" is in two failure domains, "r1" and ""`, ErrInvalid},
	} {
		_, err := FormSets(tc.ms, tc.size)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, tc.is) {
			t.Errorf("FormSets(%v, %d) error %v, want %q wrapping %v", tc.ms, tc.size, err, tc.want, tc.is)
		}
	}
	var ie *InfeasibleError
	_, err := FormSets(regular(3, 1), 4)
	if !errors.As(err, &ie) || ie.Domains != 3 || ie.SetSize != 4 {
		t.Errorf("errors.As: %#v", ie)
	}
	if got := fmt.Errorf("xor: %w", err).Error(); got != "xor: sets of 4 need 4 distinct failure domains, the job has 3 nodes" {
		t.Errorf("wrapped message %q", got)
	}
}

// TestOneDomainLossCostsOneMember is the point of the domain rule: losing any
// single failure domain removes at most one member of every set, so every
// scheme with m ≥ 1 recovers (internal/recovery decides that).
func TestOneDomainLossCostsOneMember(t *testing.T) {
	f := func(l layout) bool {
		sets, err := FormSets(l.Members, l.SetSize)
		if err != nil || l.SetSize < 2 {
			return true
		}
		byRank := map[int]Member{}
		for _, m := range l.Members {
			byRank[m.Rank] = m
		}
		for _, m := range l.Members {
			f := Failure{Domains: []string{m.FailureDomain()}}
			for i, set := range sets {
				lost := 0
				for _, r := range set {
					if f.Hits(byRank[r]) {
						lost++
					}
				}
				if lost > 1 {
					t.Logf("losing %q costs set %d %v %d members", m.FailureDomain(), i, set, lost)
					return false
				}
			}
		}
		return true
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 2000}); err != nil {
		t.Fatal(err)
	}
}
