package recovery_test

import (
	"fmt"

	"github.com/ckpt/ckpt/internal/recovery"
)

// The driver's loop: offer the candidates, verify when asked, carry out
// the plan, report failures back.
func ExampleDecide() {
	// Four ranks on a..d in one XOR set; node c died and rank 2 restarts on
	// a spare. The caches of a, b and d still hold ckpt.9.
	in := recovery.Input{
		Ranks: 4,
		Nodes: []string{"a", "b", "spare", "d"},
		Checkpoints: []recovery.Checkpoint{{
			Name: "ckpt.9", ID: 9, Ranks: 4, Scheme: "xor:4", M: 1,
			Sets:      [][]int{{0, 1, 2, 3}},
			Nodes:     []string{"a", "b", "c", "d"},
			Manifests: map[string]recovery.State{"a": recovery.Intact, "b": recovery.Intact, "d": recovery.Intact},
		}},
	}
	for {
		p, err := recovery.Decide(in)
		if err != nil {
			fmt.Println(err)
			return
		}
		if p.Action == recovery.Verify {
			// Every rank checks its files in its node's cache.
			ok := recovery.Held{Data: recovery.Intact, Parity: recovery.Intact}
			lost := recovery.Held{Data: recovery.Missing, Parity: recovery.Missing}
			in.Checkpoints[0].Held = []recovery.Held{ok, ok, lost, ok}
			continue
		}
		fmt.Print(p)
		return // carry out p; on failure append to in.Failed and decide again
	}
	// Output:
	// rebuild ckpt.9 (id 9): rank 2
	//   set 0 [0 1 2 3]: member 2, rank 2 → spare (was on c)
	//   set 0 survivors [0 1 3]
	//   write manifest on spare
}
