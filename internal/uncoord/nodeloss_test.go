package uncoord

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ckpt/ckpt/internal/placement"
)

// torusOn3 is 6 ranks, two a node, each node its own failure domain:
// rank r's protector is the next rank on another node (0, 1 → 2;
// 2, 3 → 4; 4, 5 → 0).
func torusOn3() []placement.Member {
	return []placement.Member{{Rank: 0, Node: "n0"}, {Rank: 1, Node: "n0"}, {Rank: 2, Node: "n1"},
		{Rank: 3, Node: "n1"}, {Rank: 4, Node: "n2"}, {Rank: 5, Node: "n2"}}
}

// without is ms less the ranks on node.
func without(ms []placement.Member, node string) []placement.Member {
	return slices.DeleteFunc(slices.Clone(ms), func(m placement.Member) bool { return m.Node == node })
}

func TestLoseNodesOneNode(t *testing.T) {
	before := torusOn3()
	// n1 lost: ranks 2 and 3 with it, whose copies and logs live at
	// rank 4's node; ranks 0 and 1 lose what n1 protected for them.
	l := LoseNodes(before, []string{"n1"}, without(before, "n1"))
	if !slices.Equal(l.Lost, []int{2, 3}) || len(l.Beyond) != 0 || !slices.Equal(l.Unprotected, []int{0, 1}) {
		t.Errorf("lost %v, beyond %v, unprotected %v; want [2 3], [], [0 1]", l.Lost, l.Beyond, l.Unprotected)
	}
	// Re-formed over the survivors: 0 and 1 go to rank 4 (the next rank
	// on another node); 4 and 5 keep rank 0.
	want := map[int]int{0: 4, 1: 4, 4: 0, 5: 0}
	if len(l.Protectors) != len(want) {
		t.Errorf("protectors %v, want %v", l.Protectors, want)
	}
	for r, p := range want {
		if l.Protectors[r] != p {
			t.Errorf("rank %d's protector %d, want %d (all: %v)", r, l.Protectors[r], p, l.Protectors)
		}
	}
	if !slices.Equal(l.Changed, []int{0, 1}) {
		t.Errorf("changed %v, want [0 1]", l.Changed)
	}

	// The lost ranks restarted on a spare, n3: the ring over the new
	// placement gives them back rank 4, and 0 and 1 their old one,
	// rank 2, now on n3 (with none of their data: they still re-protect,
	// Unprotected says so).
	after := slices.Clone(before)
	after[2].Node, after[3].Node = "n3", "n3"
	l = LoseNodes(before, []string{"n1"}, after)
	if len(l.Changed) != 0 || l.Protectors[0] != 2 || l.Protectors[2] != 4 {
		t.Errorf("on a spare: changed %v, protectors %v; want none changed, 0 → 2, 2 → 4", l.Changed, l.Protectors)
	}
	if !slices.Equal(l.Unprotected, []int{0, 1}) {
		t.Errorf("on a spare: unprotected %v, want [0 1]", l.Unprotected)
	}

	// The lost ranks restarted on their protector's node, n2: ranks 2
	// and 3 now share rank 4's domain, so their protector moves on to
	// rank 0; 1 keeps rank 2, now on n2.
	after[2].Node, after[3].Node = "n2", "n2"
	l = LoseNodes(before, []string{"n1"}, after)
	if l.Protectors[2] != 0 || l.Protectors[3] != 0 || l.Protectors[1] != 2 || !slices.Equal(l.Changed, []int{2, 3}) {
		t.Errorf("on n2: protectors %v, changed %v; want 2, 3 → 0, 1 → 2, changed [2 3]", l.Protectors, l.Changed)
	}
}

// Beyond tolerance: a rank lost with its protector's node (two nodes lost
// at once), or a job in one failure domain, which nothing protects.
func TestLoseNodesBeyondTolerance(t *testing.T) {
	before := torusOn3()
	l := LoseNodes(before, []string{"n0", "n1"}, without(without(before, "n0"), "n1"))
	// 0 and 1 were protected on n1 (lost), 2 and 3 on n2 (survives);
	// 4 and 5 on n0 (lost).
	if !slices.Equal(l.Lost, []int{0, 1, 2, 3}) || !slices.Equal(l.Beyond, []int{0, 1}) || !slices.Equal(l.Unprotected, []int{4, 5}) {
		t.Errorf("lost %v, beyond %v, unprotected %v; want [0 1 2 3], [0 1], [4 5]", l.Lost, l.Beyond, l.Unprotected)
	}
	// Ranks 4 and 5 alone on n2: one domain, no protector.
	if len(l.Protectors) != 0 {
		t.Errorf("protectors %v over one node, want none", l.Protectors)
	}

	one := []placement.Member{{Rank: 0, Node: "a"}, {Rank: 1, Node: "a"}}
	l = LoseNodes(one, []string{"a"}, nil)
	if !slices.Equal(l.Beyond, []int{0, 1}) {
		t.Errorf("one node: beyond %v, want [0 1]", l.Beyond)
	}
	// A node that held no rank loses nothing.
	l = LoseNodes(before, []string{"n9"}, before)
	if len(l.Lost)+len(l.Beyond)+len(l.Unprotected)+len(l.Changed) != 0 {
		t.Errorf("an unknown node: %+v, want nothing lost", l)
	}
}

// A log whose protector's directory is gone (its node lost with its
// cache) is Lost; NewLog starts a new one there, at a base.
func TestFileProtectorsLostAndNewLog(t *testing.T) {
	root := t.TempDir()
	prot := filepath.Join(root, "node1")
	p := FileProtectors{Dir: func(int) (string, error) { return prot, nil }, NoSync: true}
	l, err := p.OpenLog(0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if lost, err := p.Lost(0); lost || err != nil {
		t.Fatalf("an open log: lost %v, %v", lost, err)
	}
	if err := os.RemoveAll(prot); err != nil {
		t.Fatal(err)
	}
	if lost, err := p.Lost(0); !lost || err != nil {
		t.Fatalf("its node's cache removed: lost %v, %v; want lost", lost, err)
	}
	n, err := p.NewLog(0, 12)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if base, last, err := n.Bounds(); base != 12 || last != 12 || err != nil {
		t.Errorf("new log: bounds %d, %d, %v; want 12, 12", base, last, err)
	}
	if lost, err := p.Lost(0); lost || err != nil {
		t.Errorf("re-protected: lost %v, %v", lost, err)
	}
}
