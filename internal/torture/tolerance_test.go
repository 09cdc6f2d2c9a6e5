package torture

import (
	"reflect"
	"testing"
)

func TestNewRedundancy(t *testing.T) {
	r, err := NewRedundancy("xor:2", 4, 2)
	if err != nil {
		t.Fatal(err)
	}
	// Ranks 0,1 on node 0 and 2,3 on node 1: each set spans both nodes.
	if want := [][]int{{0, 2}, {1, 3}}; !reflect.DeepEqual(r.Sets, want) {
		t.Fatalf("sets %v, want %v", r.Sets, want)
	}
	if r.Tolerates != 1 || !reflect.DeepEqual(r.NodeOf, []int{0, 0, 1, 1}) {
		t.Fatalf("%+v", r)
	}
	if _, err := NewRedundancy("xor:3", 4, 2); err == nil {
		t.Fatal("xor:3 over 2 nodes formed sets")
	}
	if _, err := NewRedundancy("raid7", 4, 2); err == nil {
		t.Fatal("raid7 was accepted")
	}
}

func nodes(n ...int) map[int]bool {
	m := map[int]bool{}
	for _, x := range n {
		m[x] = true
	}
	return m
}

func TestJudge(t *testing.T) {
	must := func(s string, ranks, n int) Redundancy {
		r, err := NewRedundancy(s, ranks, n)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	xor2, single := must("xor:2", 4, 2), must("single", 4, 2)
	rs := must("rs:2+2", 4, 4)
	for _, c := range []struct {
		name   string
		r      Redundancy
		d      Damage
		within bool
		why    string
	}{
		{"nothing lost", xor2, Damage{}, true, ""},
		{"one node under xor", xor2, Damage{LostNodes: nodes(1)}, true, ""},
		{"both nodes under xor", xor2, Damage{LostNodes: nodes(0, 1)}, false, "a set lost 2 members, xor:2 rebuilds 1"},
		{"one rank's data under xor", xor2, Damage{LostRanks: nodes(3)}, true, ""},
		{"two ranks of different sets", xor2, Damage{LostRanks: nodes(0, 1)}, true, ""},
		{"two ranks of one set", xor2, Damage{LostRanks: nodes(0, 2)}, false, "a set lost 2 members, xor:2 rebuilds 1"},
		{"a node and a rank of its partner set", xor2, Damage{LostNodes: nodes(0), LostRanks: nodes(3)}, false, "a set lost 2 members, xor:2 rebuilds 1"},
		{"one node without redundancy", single, Damage{LostNodes: nodes(0)}, false, "a set lost 1 members, single rebuilds 0"},
		{"two nodes under rs:2+2", rs, Damage{LostNodes: nodes(0, 3)}, true, ""},
		{"three nodes under rs:2+2", rs, Damage{LostNodes: nodes(0, 1, 3)}, false, "a set lost 3 members, rs:2+2 rebuilds 2"},
		{"all caches", xor2, Damage{AllCaches: true}, false, "all caches lost"},
		{"all caches and the shared copy", xor2, Damage{AllCaches: true, SharedCorrupt: true}, false, "all caches lost and the newest shared copy corrupted"},
	} {
		within, why := Judge(c.r, c.d)
		if within != c.within || why != c.why {
			t.Errorf("%s: Judge = %v %q, want %v %q", c.name, within, why, c.within, c.why)
		}
	}
}

func TestDamageAdd(t *testing.T) {
	r, _ := NewRedundancy("xor:2", 4, 2)
	var d Damage
	d.Add(Fault{Kind: KillRank, Target: 1}, r)
	if within, _ := Judge(r, d); !within {
		t.Fatal("a killed rank lost a checkpoint")
	}
	d.Add(Fault{Kind: KillNode, Target: 1}, r)
	d.Add(Fault{Kind: CorruptData, Target: 0}, r)
	if within, _ := Judge(r, d); within {
		t.Fatal("node 1 lost and rank 0's data corrupted (set {0,2}) judged within xor:2")
	}
	var s Damage
	s.Add(Fault{Kind: CorruptSharedManifest}, r)
	if !s.AllCaches || !s.SharedCorrupt {
		t.Fatalf("%+v", s)
	}
}
