package launch

import (
	"slices"
	"strings"
	"testing"
)

// A whole node lost under the uncoordinated strategy relaunches the
// whole job, and the "fallback" event says why, before any of its ranks
// could be restarted alone: the ranks it protected lost their logs and
// checkpoint copies with it (re-protecting them in place is not built),
// or, in a job on one node, nothing held its ranks' checkpoints and logs
// at all (beyond tolerance).
func TestRunUncoordinatedNodeLossRelaunchesWholeJob(t *testing.T) {
	for _, c := range []struct {
		name         string
		ranks, nodes int
		lost         int
		wantRanks    []int
		want         []string
	}{
		// Ranks 0 and 1 on node0, 2 and 3 on node1: 0 and 1 were
		// protected by rank 2, on node1; 2 and 3 by rank 0, which
		// survives. Over node0 alone nothing can protect 0 and 1.
		{"protector lost", 4, 2, 1, []int{2, 3}, []string{"node node1 lost under the uncoordinated strategy with ranks 2,3,",
			"it protected for ranks 0,1 (no failure domain is left to protect them)", "the whole job restarts from the beginning"}},
		// 6 ranks on 3 nodes: node1's loss leaves 0 and 1 re-formed onto
		// rank 4.
		{"re-formed", 6, 3, 1, []int{2, 3}, []string{"for ranks 0,1 (their protectors re-formed: 0 → 4, 1 → 4)"}},
		// One node: no protector anywhere.
		{"beyond tolerance", 2, 1, 0, []int{0, 1}, []string{"node node0 lost under the uncoordinated strategy with ranks 0,1 and every copy of the checkpoints and logs of ranks 0,1",
			"beyond what the protection tolerates"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, "hang-first", c.ranks, c.nodes)
			f.cfg.Uncoordinated, f.cfg.NodeFailures = true, true
			inj := make(chan []int, 1)
			inj <- []int{c.lost}
			f.cfg.Inject = inj
			rep, err := Run(t.Context(), f.cfg)
			if err != nil {
				t.Fatalf("%v\n%s", err, f.out.String())
			}
			if len(rep.Attempts) != 2 || rep.RanksRecoveredAlone != 0 || rep.WholeJobRestarts != 1 || rep.Injected != 1 {
				t.Fatalf("%d attempts, %d recovered alone, %d whole-job restarts, %d injected; want 2, 0, 1, 1\n%s",
					len(rep.Attempts), rep.RanksRecoveredAlone, rep.WholeJobRestarts, rep.Injected, f.out.String())
			}
			if !strings.Contains(rep.Attempts[0].Failure, "injected failure: node") {
				t.Errorf("first attempt's failure %q, want the node loss", rep.Attempts[0].Failure)
			}
			k := slices.DeleteFunc(f.kinds(), func(s string) bool { return s == "restored" })
			if !slices.Equal(k, []string{"launch", "inject", "fallback", "fail", "exclude", "launch", "finish"}) {
				t.Errorf("events %v", k)
			}
			for _, e := range f.events {
				if e.Kind != "fallback" {
					continue
				}
				if !slices.Equal(e.Ranks, c.wantRanks) {
					t.Errorf("fallback ranks %v, want %v", e.Ranks, c.wantRanks)
				}
				for _, w := range c.want {
					if !strings.Contains(e.Reason, w) {
						t.Errorf("fallback %q\nwithout %q", e.Reason, w)
					}
				}
			}
		})
	}
}
