package nodeloss

import (
	"testing"

	"github.com/ckpt/ckpt/internal/redundancy"
)

func TestTolerance(t *testing.T) {
	for _, tc := range []struct {
		scheme string
		want   int
	}{
		{"single", 0}, {"partner", 1}, {"xor:2", 1}, {"xor:4", 1}, {"xor:16", 1},
		{"rs:4+2", 2}, {"rs:10+4", 4}, {"rs:1+1", 1},
	} {
		s, err := redundancy.ParseScheme(tc.scheme)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := Tolerance(s); err != nil || got != tc.want {
			t.Errorf("Tolerance(%s) = %d, %v; want %d", tc.scheme, got, err, tc.want)
		}
	}
	if _, err := Tolerance(redundancy.Scheme{Kind: "mirror", Data: 1, Parity: 2}); err == nil {
		t.Error("Tolerance of an unknown kind: no error")
	}
}

func TestExpect(t *testing.T) {
	// Four nodes, one rank each; pairs {0,1} and {2,3}, or one set of 4.
	pairs := Layout{Nodes: 4, Node: []int{0, 1, 2, 3}, Sets: [][]int{{0, 1}, {2, 3}}}
	one := Layout{Nodes: 4, Node: []int{0, 1, 2, 3}, Sets: [][]int{{0, 1, 2, 3}}}
	// Two ranks per node on two nodes: a node loss costs both sets a member.
	dense := Layout{Nodes: 2, Node: []int{0, 1, 0, 1}, Sets: [][]int{{0, 1}, {2, 3}}}
	data := func(c, r int) Corruption { return Corruption{Kind: CacheData, Checkpoint: c, Rank: r} }
	parity := func(c, r int) Corruption { return Corruption{Kind: CacheParity, Checkpoint: c, Rank: r} }
	man := func(c, n int) Corruption { return Corruption{Kind: CacheManifest, Checkpoint: c, Node: n} }
	wiped := func(c, n int) Corruption { return Corruption{Kind: CacheWiped, Checkpoint: c, Node: n} }
	sdata := func(c, r int) Corruption { return Corruption{Kind: SharedData, Checkpoint: c, Rank: r} }
	sman := func(c int) Corruption { return Corruption{Kind: SharedManifest, Checkpoint: c} }
	for _, tc := range []struct {
		name    string
		l       Layout
		tol     int
		flushed []bool
		lost    []int
		corrupt []Corruption
		want    Expectation
	}{
		{"no fault", pairs, 0, []bool{false}, nil, nil, Expectation{true, 0, FromCache}},
		{"single loses a node", pairs, 0, []bool{false}, []int{2}, nil, Expectation{false, -1, FromScratch}},
		{"single loses a node, flushed", pairs, 0, []bool{true}, []int{2}, nil, Expectation{false, 0, FromShared}},
		{"one member of a pair", pairs, 1, []bool{false}, []int{0}, nil, Expectation{true, 0, FromRebuild}},
		{"one member of each pair", pairs, 1, []bool{false}, []int{0, 3}, nil, Expectation{true, 0, FromRebuild}},
		{"a member and its partner", pairs, 1, []bool{false}, []int{0, 1}, nil, Expectation{false, -1, FromScratch}},
		{"a member and its partner, older flushed", pairs, 1, []bool{true, false}, []int{0, 1}, nil, Expectation{false, 0, FromShared}},
		{"node lost, partner's data corrupt", pairs, 1, []bool{false}, []int{0}, []Corruption{data(0, 1)}, Expectation{false, -1, FromScratch}},
		{"node lost, other pair's parity corrupt", pairs, 1, []bool{false}, []int{0}, []Corruption{parity(0, 2)}, Expectation{true, 0, FromRebuild}},
		{"newest beyond, older rebuilt", pairs, 1, []bool{false, false}, []int{0}, []Corruption{parity(1, 1)}, Expectation{false, 0, FromRebuild}},
		{"newest beyond, older intact", pairs, 1, []bool{false, false}, nil, []Corruption{data(1, 0), data(1, 1)}, Expectation{false, 0, FromCache}},
		{"newest shared before older cached", pairs, 1, []bool{false, true}, nil, []Corruption{data(1, 0), data(1, 1)}, Expectation{false, 1, FromShared}},
		{"shared copy corrupt", pairs, 1, []bool{false, true}, nil, []Corruption{data(1, 0), data(1, 1), sdata(1, 3)}, Expectation{false, 0, FromCache}},
		{"shared manifest corrupt", pairs, 1, []bool{false, true}, nil, []Corruption{data(1, 0), data(1, 1), sman(1)}, Expectation{false, 0, FromCache}},
		{"shared corruption of another checkpoint", pairs, 1, []bool{true, true}, nil, []Corruption{data(1, 0), data(1, 1), sdata(0, 0)}, Expectation{false, 1, FromShared}},
		{"a manifest copy corrupt", pairs, 0, []bool{false}, nil, []Corruption{man(0, 2)}, Expectation{true, 0, FromCache}},
		{"every surviving manifest corrupt", pairs, 1, []bool{false, false}, []int{0}, []Corruption{man(1, 1), man(1, 2), man(1, 3)}, Expectation{false, 0, FromRebuild}},
		{"wiped from a node", pairs, 1, []bool{false}, nil, []Corruption{wiped(0, 3)}, Expectation{true, 0, FromRebuild}},
		{"wiped beside a lost partner", pairs, 1, []bool{false, false}, []int{2}, []Corruption{wiped(1, 3)}, Expectation{false, 0, FromRebuild}},
		{"rs: two of a set", one, 2, []bool{false}, []int{1, 3}, nil, Expectation{true, 0, FromRebuild}},
		{"rs: two lost, one corrupt", one, 2, []bool{false}, []int{1, 3}, []Corruption{data(0, 0)}, Expectation{false, -1, FromScratch}},
		{"xor over four: two lost", one, 1, []bool{false}, []int{1, 3}, nil, Expectation{false, -1, FromScratch}},
		{"every node lost", one, 2, []bool{true, true}, []int{0, 1, 2, 3}, nil, Expectation{false, 1, FromShared}},
		{"dense: one node costs each set one", dense, 1, []bool{false}, []int{1}, nil, Expectation{true, 0, FromRebuild}},
		{"dense: and one more", dense, 1, []bool{false}, []int{1}, []Corruption{parity(0, 2)}, Expectation{false, -1, FromScratch}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Pattern{Flushed: tc.flushed, Lost: tc.lost, Corrupt: tc.corrupt}
			if got := Expect(tc.l, tc.tol, p); got != tc.want {
				t.Errorf("Expect = %+v, want %+v\n%s", got, tc.want, p)
			}
		})
	}
}
