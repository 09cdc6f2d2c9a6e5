package placement_test

import (
	"fmt"

	"github.com/ckpt/ckpt/internal/placement"
)

func ExampleFormSets() {
	// Eight ranks, two per node, XOR sets of four.
	var ms []placement.Member
	for r := range 8 {
		ms = append(ms, placement.Member{Rank: r, Node: fmt.Sprintf("node%d", r/2)})
	}
	sets, err := placement.FormSets(ms, 4)
	fmt.Println(sets, err)

	// Three ranks on A, one each on B and C: pairs are impossible, since
	// each pair takes at most one rank of A.
	uneven := []placement.Member{{0, "A", ""}, {1, "A", ""}, {2, "A", ""}, {3, "B", ""}, {4, "C", ""}}
	_, err = placement.FormSets(uneven, 2)
	fmt.Println("partner:", err)
	// Output:
	// [[0 2 4 6] [1 3 5 7]] <nil>
	// partner: sets of 2 take one rank per failure domain and 5 ranks make only 2 such sets, but node "A" holds 3 ranks
}

func ExampleReplacement() {
	old := []placement.Member{{0, "a", ""}, {1, "b", ""}, {2, "c", ""}, {3, "d", ""}}
	// Node b died; the job restarts with rank 1 on a spare and ranks 2 and 3
	// swapped.
	now := []placement.Member{{0, "a", ""}, {1, "spare", ""}, {2, "d", ""}, {3, "c", ""}}
	lost := placement.Failure{Nodes: []string{"b"}}
	moves, _ := placement.Replacement(old, now, lost)
	for _, m := range moves {
		fmt.Printf("rank %d: %s %s→%s\n", m.Rank, m.Source, m.From, m.To)
	}
	fmt.Println("unreachable", placement.Unreachable(old, now, lost).Nodes)
	// Output:
	// rank 0: local a→a
	// rank 1: rebuild b→spare
	// rank 2: fetch c→d
	// rank 3: fetch d→c
	// unreachable [b]
}
