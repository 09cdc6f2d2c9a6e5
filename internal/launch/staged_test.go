package launch

import (
	"math"
	"testing"

	"github.com/ckpt/ckpt/flushstats"
)

// TestWithStaged: the summary said "0 failed" flushes while the progress
// lines showed the staging servers failing 3: rank 0 publishes its counts
// as it goes, and flushes failed because a node was lost are failed after
// rank 0 was killed. The counts are now the servers'.
func TestWithStaged(t *testing.T) {
	rank0 := flushstats.Stats{Mode: "nonblocking", K: 2, Due: 8, Started: 8, Durable: 4, Latency: 8} // 2 s each
	evs := []StageEvent{
		{Name: "c2", State: "durable", Seconds: 1}, {Name: "c2", State: "committed", Seconds: 2},
		{Name: "c4", State: "failed", Reason: "node node1 lost"},
		{Name: "c6", State: "committed", Seconds: 2},
		{Name: "c8", State: "durable", Seconds: 2}, {Name: "c8", State: "failed", Reason: "node node2 lost"},
		{Name: "c10", State: "failed", Reason: "node node3 lost"}, {Server: 1, State: "restarted"},
		{Name: "c12", State: "committed", Seconds: 2},
	}
	f := WithStaged(rank0, evs)
	if f.Failed != 3 || f.Durable != 3 || f.LastFailure != "node node3 lost" {
		t.Errorf("WithStaged: %d failed, %d durable, last failure %q; want 3, 3, node node3 lost", f.Failed, f.Durable, f.LastFailure)
	}
	if m := f.MeanLatency(); math.Abs(m-2) > 1e-12 {
		t.Errorf("mean latency %g, want rank 0's 2 s", m)
	}
	// Rank 0's counts lost with it: what the servers finished was
	// announced and due.
	f = WithStaged(flushstats.Stats{Mode: "nonblocking", Due: 2, Started: 2, Skipped: 1}, evs)
	if f.Started != 6 || f.Due != 7 {
		t.Errorf("WithStaged: %d started, %d due; want 6 (3 durable + 3 failed) and 7 (+1 skipped)", f.Started, f.Due)
	}
	// Blocking flushes have no servers: unchanged.
	b := flushstats.Stats{Mode: "blocking", Started: 3, Failed: 0}
	if got := WithStaged(b, evs); got != b {
		t.Errorf("blocking stats changed: %+v", got)
	}
}
