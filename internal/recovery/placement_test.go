package recovery

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ckpt/ckpt/internal/placement"
)

// These replace placement.Recoverability's tests: the sets come from
// placement.FormSets, the failure (lost nodes and failure domains) and the
// restarted layout from placement.Failure and placement.Replacement, and
// the planner must rebuild exactly the ranks Replacement does not find in
// place — Replacement's Fetch ranks too, since the engine reads a rank's
// files only from the cache of the node it runs on now (rule 5).

// placed is a job laid out on nodes (and racks), its sets, a failure and
// the layout it restarts on.
type placed struct {
	old, now []placement.Member
	sets     [][]int
	m        int
	scheme   string
	failure  placement.Failure
}

func randomPlaced(rng *rand.Rand) (placed, bool) {
	nodes, perNode, racks := 1+rng.IntN(6), 1+rng.IntN(3), rng.IntN(3)
	var pl placed
	for n := range nodes {
		rack := ""
		if racks > 0 {
			rack = fmt.Sprintf("rack%d", n%racks)
		}
		for range perNode {
			pl.old = append(pl.old, placement.Member{Rank: len(pl.old), Node: fmt.Sprintf("n%d", n), Domain: rack})
		}
	}
	sc := randomScheme(rng)
	pl.m, pl.scheme = sc.m, sc.label
	sets, err := placement.FormSets(pl.old, sc.size)
	if err != nil {
		return pl, false // the layout cannot carry the scheme
	}
	pl.sets = sets
	for n := range nodes {
		if rng.IntN(5) == 0 {
			pl.failure.Nodes = append(pl.failure.Nodes, fmt.Sprintf("n%d", n))
		}
	}
	if racks > 0 && rng.IntN(6) == 0 {
		pl.failure.Domains = append(pl.failure.Domains, fmt.Sprintf("rack%d", rng.IntN(racks)))
	}
	// Ranks on lost nodes go to spares; now and then a rank moves.
	for _, m := range pl.old {
		n := m
		switch {
		case pl.failure.Hits(m):
			n.Node, n.Domain = "spare-"+m.Node, ""
		case rng.IntN(10) == 0:
			n.Node = pl.old[rng.IntN(len(pl.old))].Node
			n.Domain = pl.old[slices.IndexFunc(pl.old, func(o placement.Member) bool { return o.Node == n.Node })].Domain
		}
		pl.now = append(pl.now, n)
	}
	return pl, true
}

// input is what the restarted job reports: a rank's files are intact where
// it runs now exactly when Replacement says Local.
func (pl placed) input(t *testing.T) (Input, []int) {
	moves, err := placement.Replacement(pl.old, pl.now, pl.failure)
	if err != nil {
		t.Fatal(err)
	}
	cp := Checkpoint{Name: "ckpt", ID: 1, Ranks: len(pl.old), Scheme: pl.scheme, M: pl.m, Sets: pl.sets,
		Manifests: map[string]State{}}
	in := Input{Ranks: len(pl.old)}
	var notLocal []int
	for _, mv := range moves {
		cp.Nodes = append(cp.Nodes, mv.From)
		in.Nodes = append(in.Nodes, mv.To)
		h := Held{Data: Missing, Parity: Missing}
		if mv.Source == placement.Local {
			h = Held{Data: Intact, Parity: Intact}
		} else {
			notLocal = append(notLocal, mv.Rank)
		}
		cp.Held = append(cp.Held, h)
	}
	// Every reachable old node still caches the manifest; spares do not.
	wide := placement.Unreachable(pl.old, pl.now, pl.failure)
	for _, m := range pl.old {
		if !wide.Hits(m) {
			cp.Manifests[m.Node] = Intact
		}
	}
	if !cp.inCache() {
		cp.Held = nil // every node lost: the job has nothing to check
	}
	in.Checkpoints = []Checkpoint{cp}
	return in, notLocal
}

func TestPlacementFailures(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var kinds [5]int
	for i := 0; i < 3000; {
		pl, ok := randomPlaced(rng)
		if !ok {
			continue
		}
		i++
		in, notLocal := pl.input(t)
		p, err := Decide(in)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		kinds[p.Action]++
		lostIn := func(set []int) (n int) {
			for _, r := range set {
				if slices.Contains(notLocal, r) {
					n++
				}
			}
			return n
		}
		recoverable := true
		for _, set := range pl.sets {
			recoverable = recoverable && lostIn(set) <= pl.m
		}
		switch {
		case !recoverable && p.Action != None,
			recoverable && len(notLocal) == 0 && p.Action != UseCache,
			recoverable && len(notLocal) > 0 && (p.Action != Rebuild || !slices.Equal(p.Rebuilt, notLocal)):
			t.Fatalf("case %d: %s sets %v, failure %+v, not in place %v:\n%s", i, pl.scheme, pl.sets, pl.failure, notLocal, p)
		}
	}
	if kinds[UseCache] == 0 || kinds[Rebuild] < 100 || kinds[None] < 100 {
		t.Errorf("the cases miss a kind of outcome: %v", kinds)
	}
}

// The example of placement.Recoverability: eight ranks two per node, XOR
// sets of four; losing n1 costs each set one member, losing n1 and n3 two.
func TestPlacementExample(t *testing.T) {
	var old []placement.Member
	for r := range 8 {
		old = append(old, placement.Member{Rank: r, Node: fmt.Sprintf("n%d", r/2)})
	}
	sets, err := placement.FormSets(old, 4)
	if err != nil {
		t.Fatal(err)
	}
	spare := func(lost ...string) placed {
		pl := placed{old: old, sets: sets, m: 1, scheme: "xor:4", failure: placement.Failure{Nodes: lost}}
		for _, m := range old {
			if slices.Contains(lost, m.Node) {
				m.Node = "spare-" + m.Node
			}
			pl.now = append(pl.now, m)
		}
		return pl
	}
	in, _ := spare("n1").input(t)
	p, err := Decide(in)
	if err != nil {
		t.Fatal(err)
	}
	want := `rebuild ckpt (id 1): ranks [2 3]
  set 0 [0 2 4 6]: member 1, rank 2 → spare-n1 (was on n1)
  set 0 survivors [0 4 6]
  set 1 [1 3 5 7]: member 1, rank 3 → spare-n1 (was on n1)
  set 1 survivors [1 5 7]
  write manifest on spare-n1
`
	if p.String() != want {
		t.Errorf("got\n%s\nwant\n%s", p, want)
	}
	in, _ = spare("n1", "n3").input(t)
	if p, _ := Decide(in); p.Action != None || len(p.Skipped) != 1 {
		t.Errorf("two nodes lost under XOR: %s", p)
	}
	pl := spare("n1", "n3")
	pl.m, pl.scheme = 2, "rs:2+2"
	in, _ = pl.input(t)
	if p, _ := Decide(in); p.Action != Rebuild || !slices.Equal(p.Rebuilt, []int{2, 3, 6, 7}) {
		t.Errorf("m=2 should survive two nodes: %s", p)
	}
}
