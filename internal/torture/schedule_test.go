package torture

import (
	"reflect"
	"testing"
	"time"
)

func draw(seed uint64, kinds []Kind, topo Topology, n int) []Fault {
	s := NewSchedule(seed, kinds)
	out := make([]Fault, n)
	for i := range out {
		out[i] = s.Next(topo)
	}
	return out
}

func TestScheduleReplays(t *testing.T) {
	topo := Topology{Ranks: 4, Nodes: 2, StagingServers: 1}
	a, b := draw(7, Kinds, topo, 50), draw(7, Kinds, topo, 50)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("seed 7 drew two different schedules:\n%v\n%v", a, b)
	}
	if c := draw(8, Kinds, topo, 50); reflect.DeepEqual(a, c) {
		t.Fatal("seeds 7 and 8 drew the same schedule")
	}
}

func TestScheduleTargetsAndKinds(t *testing.T) {
	topo := Topology{Ranks: 6, Nodes: 3, StagingServers: 2}
	seen := map[Kind]bool{}
	for i, f := range draw(1, Kinds, topo, 2000) {
		seen[f.Kind] = true
		if f.Seq != i+1 {
			t.Fatalf("fault %d has Seq %d", i, f.Seq)
		}
		limit := topo.Ranks
		switch f.Kind {
		case KillNode, CorruptCacheManifest, CutNode, PartitionNode, DiskFull:
			limit = topo.Nodes
		case KillStage, HangStage:
			limit = topo.StagingServers
		}
		if f.Target < 0 || f.Target >= limit {
			t.Fatalf("%v: target out of [0,%d)", f, limit)
		}
		if f.Kind == PartitionNode && (f.Hold < 2*time.Second || f.Hold >= 6*time.Second) {
			t.Fatalf("%v: a partition of %s, want 2 to 6 s (around the default heartbeat timeout)", f, f.Hold)
		}
		if f.After < 1 || f.After > 3 || f.Delay < 0 || f.Hold <= 0 || f.Flips < 1 {
			t.Fatalf("%v: after %d, delay %s, hold %s, flips %d", f, f.After, f.Delay, f.Hold, f.Flips)
		}
	}
	for _, k := range Kinds {
		if !seen[k] {
			t.Errorf("2000 faults never drew %s", k)
		}
	}
}

// The kinds drawn before a fault do not change its other draws: a
// schedule restricted to fewer kinds keeps its timing.
func TestScheduleDrawsAlikeWhateverTheKind(t *testing.T) {
	topo := Topology{Ranks: 4, Nodes: 2, StagingServers: 1}
	a, b := draw(3, []Kind{KillRank}, topo, 20), draw(3, []Kind{KillRank, HangRank}, topo, 20)
	for i := range a {
		if a[i].After != b[i].After || a[i].Delay != b[i].Delay || a[i].Flip != b[i].Flip {
			t.Fatalf("fault %d: %+v vs %+v", i, a[i], b[i])
		}
	}
}

func TestParseKinds(t *testing.T) {
	all, err := ParseKinds("all")
	if err != nil || len(all) != len(Kinds) {
		t.Fatalf("all: %v, %v", all, err)
	}
	got, err := ParseKinds("kill-rank, hang-rank,kill-rank")
	if err != nil || !reflect.DeepEqual(got, []Kind{KillRank, HangRank}) {
		t.Fatalf("got %v, %v", got, err)
	}
	if _, err := ParseKinds("kill-rank,explode"); err == nil {
		t.Fatal("an unknown kind was accepted")
	}
}
