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

// scenario is a random checkpoint layout, a failure, and a new layout for
// the restart.
type scenario struct {
	Old, Now []Member
	Failure  Failure
}

func (scenario) Generate(r *rand.Rand, size int) reflect.Value {
	var sc scenario
	sc.Old = randomLayout(r, 1+r.Intn(12), 1+r.Intn(6), 1+r.Intn(4)).Members
	nodes := map[string]bool{}
	for _, m := range sc.Old {
		nodes[m.Node] = true
		if r.Intn(4) == 0 {
			sc.Failure.Nodes = append(sc.Failure.Nodes, m.Node)
		}
		if m.Domain != "" && r.Intn(8) == 0 {
			sc.Failure.Domains = append(sc.Failure.Domains, m.Domain)
		}
	}
	// New layout: most ranks stay, some move to another old node or a
	// spare; a node keeps one domain label.
	domainOf := map[string]string{}
	for _, m := range sc.Old {
		domainOf[m.Node] = m.Domain
	}
	for _, m := range sc.Old {
		n := m
		switch r.Intn(4) {
		case 0:
			n.Node = fmt.Sprintf("spare%d", r.Intn(3))
			n.Domain = ""
		case 1:
			n.Node = sc.Old[r.Intn(len(sc.Old))].Node
			n.Domain = domainOf[n.Node]
		}
		sc.Now = append(sc.Now, n)
	}
	r.Shuffle(len(sc.Now), func(i, j int) { sc.Now[i], sc.Now[j] = sc.Now[j], sc.Now[i] })
	return reflect.ValueOf(sc)
}

// lostRef is the naive reading of a Failure.
func lostRef(m Member, f Failure) bool {
	for _, n := range f.Nodes {
		if n == m.Node {
			return true
		}
	}
	for _, d := range f.Domains {
		if d == m.Node && m.Domain == "" || d == m.Domain && m.Domain != "" {
			return true
		}
	}
	return false
}

func TestReplacementQuick(t *testing.T) {
	f := func(sc scenario) bool {
		moves, err := Replacement(sc.Old, sc.Now, sc.Failure)
		if err != nil {
			t.Log(err)
			return false
		}
		now := map[int]Member{}
		present := map[string]bool{}
		for _, m := range sc.Now {
			now[m.Rank] = m
			present[m.Node] = true
		}
		old := slices.Clone(sc.Old)
		slices.SortFunc(old, func(a, b Member) int { return a.Rank - b.Rank })
		if len(moves) != len(old) {
			return false
		}
		var rebuild []int
		for i, o := range old {
			want := Move{Rank: o.Rank, From: o.Node, To: now[o.Rank].Node}
			switch {
			case lostRef(o, sc.Failure) || !present[o.Node]:
				want.Source = Rebuild
				rebuild = append(rebuild, o.Rank)
			case o.Node == want.To:
				want.Source = Local
			default:
				want.Source = Fetch
			}
			if moves[i] != want {
				t.Logf("rank %d: got %+v, want %+v", o.Rank, moves[i], want)
				return false
			}
		}
		// The ranks rebuilt are those Unreachable hits.
		var hit []int
		wide := Unreachable(sc.Old, sc.Now, sc.Failure)
		for _, o := range old {
			if wide.Hits(o) {
				hit = append(hit, o.Rank)
			}
		}
		if !slices.Equal(hit, rebuild) {
			t.Logf("Unreachable hits %v, Replacement rebuilds %v", hit, rebuild)
			return false
		}
		return true
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 3000}); err != nil {
		t.Fatal(err)
	}
}

func TestReplacementExample(t *testing.T) {
	old := regular(3, 1) // 0@n0 1@n1 2@n2
	now := []Member{{0, "n0", ""}, {1, "n2", ""}, {2, "spare", ""}}
	got, err := Replacement(old, now, Failure{Nodes: []string{"n2"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []Move{
		{Rank: 0, From: "n0", To: "n0", Source: Local},
		{Rank: 1, From: "n1", To: "n2", Source: Rebuild}, // n1 is not in the new job
		{Rank: 2, From: "n2", To: "spare", Source: Rebuild},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	now = []Member{{0, "n1", ""}, {1, "n0", ""}, {2, "n2", ""}}
	got, _ = Replacement(old, now, Failure{})
	if got[0].Source != Fetch || got[1].Source != Fetch || got[2].Source != Local {
		t.Errorf("swap: %v", got)
	}
	if fmt.Sprint(Local, Fetch, Rebuild, Source(9)) != "local fetch rebuild Source(9)" {
		t.Error("Source.String")
	}
}

func TestRecoverErrors(t *testing.T) {
	ms := regular(2, 1)
	for _, tc := range []struct {
		err  error
		want string
	}{
		{second(Replacement([]Member{{0, "a", ""}, {0, "b", ""}}, ms, Failure{})), "old layout: invalid placement: rank 0 appears twice"},
		{second(Replacement([]Member{{-2, "a", ""}}, ms, Failure{})), "old layout: invalid placement: negative rank -2"},
		{second(Replacement(ms, regular(3, 1), Failure{})), "rank 2 is in the new layout but not in the old one"},
		{second(Replacement(regular(3, 1), ms, Failure{})), "rank 2 is in the old layout but not in the new one"},
		{second(Replacement(ms, []Member{{0, "", ""}, {1, "x", ""}}, Failure{})), "new layout: invalid placement: rank 0 has no node"},
	} {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) || !errors.Is(tc.err, ErrInvalid) {
			t.Errorf("error %v, want %q", tc.err, tc.want)
		}
	}
}

func second[T any](_ T, err error) error { return err }

func TestUnreachable(t *testing.T) {
	old := regular(3, 1)
	now := []Member{{0, "n0", ""}, {1, "x", ""}, {2, "x", ""}}
	got := Unreachable(old, now, Failure{Nodes: []string{"n2", "n0", "n2"}, Domains: []string{"r"}})
	want := Failure{Nodes: []string{"n0", "n1", "n2"}, Domains: []string{"r"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if !want.Hits(Member{Rank: 9, Node: "y", Domain: "r"}) || want.Hits(Member{Rank: 9, Node: "y"}) {
		t.Error("Hits")
	}
}
