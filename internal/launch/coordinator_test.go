package launch

import (
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/policy"
)

// TestCheckpointNow: a request makes the next decision round checkpoint
// without halting, once; OnDecision sees each round's step and answer.
func TestCheckpointNow(t *testing.T) {
	var seen []int64
	f := &Coordinators{Ranks: 2, Nodes: 1, Policy: policy.Policy{Kind: policy.Time, Period: time.Hour},
		OnDecision: func(step int64, d policy.Decision) {
			if d.Checkpoint {
				seen = append(seen, step)
			}
		}}
	round := func(step int64) policy.Decision {
		t.Helper()
		r := policy.Report{Step: step, Elapsed: time.Minute, SinceCheckpoint: time.Second, StepTime: time.Millisecond, Window: 10}
		b, err := r.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var d policy.Decision
		if err := d.UnmarshalBinary(f.decide(0, [][]byte{b, b})); err != nil {
			t.Fatal(err)
		}
		return d
	}
	if d := round(10); d.Checkpoint {
		t.Fatalf("a round a second into an hour's interval checkpoints: %+v", d)
	}
	f.CheckpointNow()
	if d := round(20); !d.Checkpoint || d.Halt {
		t.Fatalf("the round after CheckpointNow: %+v, want a checkpoint without halt", d)
	}
	if d := round(30); d.Checkpoint {
		t.Fatalf("the request was used twice: %+v", d)
	}
	if len(seen) != 1 || seen[0] != 20 {
		t.Errorf("OnDecision saw checkpoints at steps %v, want [20]", seen)
	}
}
