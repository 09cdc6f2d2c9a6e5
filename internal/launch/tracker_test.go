package launch

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/jobdir"
	"github.com/ckpt/ckpt/internal/jobenv"
	"github.com/ckpt/ckpt/internal/policy"
)

// trackedCoord is a Coordinator whose ranks published flush under
// jobenv.KeyFlush.
type trackedCoord struct {
	mu    sync.Mutex
	flush []byte
}

func (c *trackedCoord) Addr() string          { return "127.0.0.1:1" }
func (c *trackedCoord) Done() <-chan struct{} { return nil }
func (c *trackedCoord) Err() error            { return nil }
func (c *trackedCoord) Halt()                 {}
func (c *trackedCoord) Close() error          { return nil }
func (c *trackedCoord) Value(k string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if k != jobenv.KeyFlush || c.flush == nil {
		return nil, false
	}
	return c.flush, true
}

// The tracker publishes the job's attempt, decisions, commits, failures,
// the ranks' flush counts and the requests it took, keeps the hooks it
// wraps, and writes the last state when finished.
func TestTracker(t *testing.T) {
	dir := jobdir.At(t.TempDir())
	coord := &trackedCoord{flush: []byte(`{"mode":"blocking"}`)}
	var events, commits int
	cfg := Config{NewCoordinator: func(uint64, string) (Coordinator, error) { return coord, nil },
		Event: func(Event) { events++ }}
	coords := &Coordinators{OnCommit: func(uint64, string) { commits++ }}
	tr := Track(dir, "auto", "xor:4", &cfg, coords)
	if st, err := dir.ReadStatus(); err != nil || st.State != "starting" || st.Interval != "auto" {
		t.Fatalf("status at the start: %+v, %v", st, err)
	}
	if _, err := cfg.NewCoordinator(0, "t"); err != nil {
		t.Fatal(err)
	}
	cfg.Event(Event{Kind: "launch"})
	cfg.Event(Event{Kind: "restored", Source: "none"})
	coords.OnDecision(7, policy.Decision{Checkpoint: true})
	coords.OnCommit(0, "c7")
	if err := dir.Request(jobdir.CheckpointFile); err != nil {
		t.Fatal(err)
	}
	// The loop takes the request and publishes the flush counts.
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, _ := dir.ReadStatus()
		if st.CheckpointRequests == 1 && strings.Contains(string(st.Flush), `"blocking"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the tracker did not take the request or publish the flush: %+v", st)
		}
		time.Sleep(10 * time.Millisecond) // polling a file another goroutine writes
	}
	if !coords.now.Load() {
		t.Error("the request did not reach the coordinators")
	}
	cfg.Event(Event{Kind: "fail", Reason: "rank 1 exited"})
	tr.Finish(Report{}, errors.New("gave up"))
	st, err := dir.ReadStatus()
	if err != nil {
		t.Fatal(err)
	}
	lc := st.LastCheckpoint
	if st.State != "failed" || st.LastFailure != "gave up" || st.Attempt != 1 || st.Failures != 1 || st.Checkpoints != 1 ||
		lc == nil || lc.Name != "c7" || lc.Step == nil || *lc.Step != 7 || lc.Redundancy != "xor:4" || st.Restored == nil || st.Restored.Source != "none" {
		t.Errorf("last status %+v (last checkpoint %+v)", st, lc)
	}
	if events != 3 || commits != 1 {
		t.Errorf("the wrapped hooks saw %d events and %d commits; want 3 and 1", events, commits)
	}
}
