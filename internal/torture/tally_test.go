package torture

import (
	"strings"
	"testing"
	"time"
)

func TestTallyStepByStep(t *testing.T) {
	ref := Reference{0: "a", 10: "b", 20: "c"}
	red, _ := NewRedundancy("xor:2", 4, 2)
	tl := NewTally(5)
	at := time.Unix(100, 0)

	if p := tl.Check(ref, Event{Kind: "checkpoint", Step: 10, Checksum: "b"}); p != "" {
		t.Fatalf("a right checksum: %q", p)
	}
	kill := Fault{Seq: 1, Kind: KillRank}
	tl.Injected(kill)
	// Restored the newest committed: nothing lost.
	if p := tl.Recovered(&kill, at, Event{Kind: "restored", Step: 10, From: "cache", At: at.Add(2 * time.Second)}, 10, Damage{}, red); p != "" {
		t.Fatalf("restored the newest: %q", p)
	}
	r := tl.Result()
	if r.FaultsInjected != 1 || r.Faults[KillRank] != 1 || r.Recoveries["cache"] != 1 || r.RecoverSeconds[KillRank].Median != 2 || r.Failed() {
		t.Fatalf("after one recovery: %+v", r)
	}

	// A wrong checksum.
	if p := tl.Check(ref, Event{Kind: "restored", Step: 20, Checksum: "x"}); !strings.Contains(p, "wrong result") {
		t.Fatalf("a wrong checksum: %q", p)
	}
	if r := tl.Result(); r.WrongResults != 1 || !r.Failed() {
		t.Fatalf("after a wrong checksum: %+v", r)
	}

	// An older checkpoint after one node lost under xor: a bug.
	node := Fault{Seq: 2, Kind: KillNode, Target: 1}
	var d Damage
	d.Add(node, red)
	if p := tl.Recovered(&node, at, Event{Kind: "restored", Step: 10, From: "shared", At: at}, 20, d, red); !strings.Contains(p, "lost within tolerance") {
		t.Fatalf("an older checkpoint within tolerance: %q", p)
	}
	// From scratch after both nodes: beyond, with the reason.
	d.Add(Fault{Kind: KillNode, Target: 0}, red)
	if p := tl.Recovered(&node, at, Event{Kind: "started", Step: 0, At: at}, 20, d, red); p != "" {
		t.Fatalf("beyond tolerance is no problem: %q", p)
	}
	// A step the reference lacks, and a restart no fault caused.
	tl.Check(ref, Event{Kind: "restored", Step: 15})
	tl.Recovered(nil, at, Event{Kind: "restored", Step: 20, From: "cache", At: at}, 20, Damage{}, red)

	r = tl.Result()
	if r.CommittedLostWithinTolerance != 1 || r.LostBeyondTolerance.Count != 1 ||
		r.LostBeyondTolerance.Why["a set lost 2 members, xor:2 rebuilds 1"] != 1 {
		t.Fatalf("losses: %+v", r)
	}
	if r.Recoveries["scratch"] != 1 || r.Recoveries["shared"] != 1 || r.Recoveries["cache"] != 2 || r.UnexpectedRestarts != 1 || r.Unchecked != 1 {
		t.Fatalf("recoveries: %+v", r)
	}
	if len(r.Problems) != 2 || r.Seed != 5 {
		t.Fatalf("problems %q, seed %d", r.Problems, r.Seed)
	}
}

func TestNewReference(t *testing.T) {
	ref, err := NewReference([]Event{{Kind: "started", Step: 0, Checksum: "a"}, {Kind: "checkpoint", Step: 10, Checksum: "b"}, {Kind: "done", Step: 12, Checksum: "c"}})
	if err != nil || len(ref) != 3 || ref[12] != "c" {
		t.Fatalf("%v, %v", ref, err)
	}
	if _, err := NewReference([]Event{{Kind: "started"}, {Kind: "restored", Step: 10}, {Kind: "done"}}); err == nil {
		t.Fatal("a reference run with a restore was accepted")
	}
	if _, err := NewReference([]Event{{Kind: "started"}}); err == nil {
		t.Fatal("a reference run without its end was accepted")
	}
}

func TestQuantile(t *testing.T) {
	v := []float64{5, 1, 4, 2, 3}
	for _, c := range []struct{ q, want float64 }{{0.5, 3}, {0.99, 5}, {0, 1}, {1, 5}, {0.2, 1}, {0.21, 2}} {
		if got := Quantile(v, c.q); got != c.want {
			t.Errorf("Quantile(%v, %v) = %v, want %v", v, c.q, got, c.want)
		}
	}
	if Quantile(nil, 0.5) != 0 {
		t.Error("no values")
	}
}
