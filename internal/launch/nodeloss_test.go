package launch

import (
	"slices"
	"strings"
	"testing"
)

// A whole node lost under the uncoordinated strategy, with the local
// launcher (a Restarter): its ranks are restarted alone, the others go
// on, and Event "reform" says which ranks lost their protector's log and
// re-protect (the ranks themselves do: see internal/rank). Ranks 0 and 1
// on node0, 2 and 3 on node1: 0 and 1 were protected by rank 2.
func TestRunUncoordinatedNodeLossRestartsItsRanksAlone(t *testing.T) {
	f := newFixture(t, "node-lost", 4, 2)
	f.cfg.Uncoordinated, f.cfg.NodeFailures = true, true
	inj := make(chan []int, 1)
	inj <- []int{1}
	f.cfg.Inject = inj
	rep, err := Run(t.Context(), f.cfg)
	if err != nil {
		t.Fatalf("%v\n%s", err, f.out.String())
	}
	if len(rep.Attempts) != 1 || rep.RanksRecoveredAlone != 2 || rep.WholeJobRestarts != 0 || rep.Injected != 1 {
		t.Fatalf("%d attempts, %d recovered alone, %d whole-job restarts, %d injected; want 1, 2, 0, 1\n%s",
			len(rep.Attempts), rep.RanksRecoveredAlone, rep.WholeJobRestarts, rep.Injected, f.out.String())
	}
	if got := slices.Sorted(slices.Values(rep.Attempts[0].RecoveredAlone)); !slices.Equal(got, []int{2, 3}) {
		t.Errorf("recovered alone %v, want [2 3]", got)
	}
	k := slices.DeleteFunc(f.kinds(), func(s string) bool { return s == "restored" })
	if !slices.Equal(k, []string{"launch", "inject", "reform", "recover", "recover", "finish"}) {
		t.Errorf("events %v", k)
	}
	for _, e := range f.events {
		if e.Kind == "reform" {
			want := "node node1 lost under the uncoordinated strategy: ranks 2,3 restart alone from their checkpoint copies and logs at their protectors; ranks 0,1, whose logs and checkpoint copies it held, re-protect with a checkpoint at once (0 → 2 on node1, 1 → 2 on node1)"
			if !slices.Equal(e.Ranks, []int{0, 1}) || e.Reason != want {
				t.Errorf("reform event %v %q\nwant [0 1] %q", e.Ranks, e.Reason, want)
			}
		}
	}
}

// Beyond tolerance — a job on one node, which nothing protects — the
// loss relaunches the whole job, before any of the node's ranks could be
// restarted alone, and Event "fallback" says why.
func TestRunUncoordinatedNodeLossBeyondToleranceRelaunchesWholeJob(t *testing.T) {
	f := newFixture(t, "hang-first", 2, 1)
	f.cfg.Uncoordinated, f.cfg.NodeFailures = true, true
	inj := make(chan []int, 1)
	inj <- []int{0}
	f.cfg.Inject = inj
	rep, err := Run(t.Context(), f.cfg)
	if err != nil {
		t.Fatalf("%v\n%s", err, f.out.String())
	}
	if len(rep.Attempts) != 2 || rep.RanksRecoveredAlone != 0 || rep.WholeJobRestarts != 1 || rep.Injected != 1 {
		t.Fatalf("%d attempts, %d recovered alone, %d whole-job restarts, %d injected; want 2, 0, 1, 1\n%s",
			len(rep.Attempts), rep.RanksRecoveredAlone, rep.WholeJobRestarts, rep.Injected, f.out.String())
	}
	if !strings.Contains(rep.Attempts[0].Failure, "injected failure: node 0 lost") {
		t.Errorf("first attempt's failure %q, want the node loss", rep.Attempts[0].Failure)
	}
	k := slices.DeleteFunc(f.kinds(), func(s string) bool { return s == "restored" })
	if !slices.Equal(k, []string{"launch", "inject", "fallback", "fail", "exclude", "launch", "finish"}) {
		t.Errorf("events %v", k)
	}
	for _, e := range f.events {
		if e.Kind == "fallback" {
			want := "node node0 lost under the uncoordinated strategy with ranks 0,1 and every copy of the checkpoints and logs of ranks 0,1 (their protector's node lost too, or no other failure domain to protect them): beyond what the protection tolerates, the whole job restarts from the beginning"
			if !slices.Equal(e.Ranks, []int{0, 1}) || e.Reason != want {
				t.Errorf("fallback %v %q\nwant [0 1] %q", e.Ranks, e.Reason, want)
			}
		}
	}
}
