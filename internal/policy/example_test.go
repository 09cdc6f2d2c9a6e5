package policy_test

import (
	"fmt"
	"time"

	"github.com/ckpt/ckpt/internal/policy"
)

// A one-rank job of 1 ms steps that checkpoints every 2 s (2 s checkpoint
// cost), driven as the rank API and the coordinator drive it.
func Example() {
	p, err := policy.Parse("2s")
	if err != nil {
		panic(err)
	}
	local := policy.NewLocal(p, 0, 0)
	var st policy.State
	var now time.Duration
	rounds := 0
	for step := int64(1); step <= 10_000; step++ {
		now += time.Millisecond // the step's work
		if !local.Need(step) {
			continue // no I/O between decision steps
		}
		rounds++
		var d policy.Decision
		d, st = policy.Decide(p, st, []policy.Report{local.Report(step, now)}) // the decide collective
		local.Apply(d)
		if d.Checkpoint {
			start := now
			now += 2 * time.Second // the checkpoint
			local.Checkpointed(start, now)
			fmt.Printf("checkpoint at step %d\n", step)
		}
	}
	fmt.Printf("%d decision rounds for 10000 steps\n", rounds)
	// Output:
	// checkpoint at step 2000
	// checkpoint at step 4000
	// checkpoint at step 6000
	// checkpoint at step 8000
	// checkpoint at step 10000
	// 21 decision rounds for 10000 steps
}
