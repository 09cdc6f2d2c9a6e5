package launch

import (
	"strings"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/policy"
)

func TestJoinAllowance(t *testing.T) {
	if got := JoinAllowance(1, 2); got < time.Minute {
		t.Errorf("1 rank: %v, want at least a minute", got)
	}
	// The allowance grows with the ranks and shrinks with the CPUs: 1000
	// ranks on 2 CPUs get well over the 3.3 s the heartbeat interval used
	// to leave them.
	if a, b := JoinAllowance(1000, 2), JoinAllowance(100, 2); a <= b || a < 2*time.Minute {
		t.Errorf("1000 ranks: %v, 100 ranks: %v", a, b)
	}
	if a, b := JoinAllowance(1000, 2), JoinAllowance(1000, 64); a <= b {
		t.Errorf("2 CPUs: %v, 64 CPUs: %v", a, b)
	}
	if got := JoinAllowance(1<<62, 0); got != joinMax {
		t.Errorf("absurd ranks: %v, want the cap %v", got, joinMax)
	}
}

func TestNeedsOf(t *testing.T) {
	if got := NeedsOf(100000, 100000, false, 0); got.Procs != 100000 || got.FDs != 300000+fdsBase {
		t.Errorf("100000 ranks: %+v", got)
	}
	if got := NeedsOf(8, 4, true, 2); got.Procs != 10 || got.FDs != 24+12+8+fdsBase {
		t.Errorf("tree: %+v", got)
	}
	if got := NeedsOf(1<<62, 1<<62, true, 1<<62); got.FDs < 0 || got.Procs < 0 {
		t.Errorf("overflow: %+v", got)
	}
}

// The join timeout reaches the attempt's coordinator: ranks that never
// join fail the attempt with a reason naming them.
func TestCoordinatorsJoinTimeout(t *testing.T) {
	f := &Coordinators{Ranks: 2, Nodes: 1, Policy: mustPolicy(t, "none"), JoinTimeout: 300 * time.Millisecond}
	co, err := f.New(0, "tok")
	if err != nil {
		t.Fatal(err)
	}
	defer co.Close()
	select {
	case <-co.Done():
	case <-time.After(60 * time.Second):
		t.Fatal("the attempt did not end within 60s of a 300ms join timeout")
	}
	if err := co.Err(); err == nil || !strings.Contains(err.Error(), "ranks [0-1] did not join within the join timeout of 300ms") {
		t.Fatalf("Err() = %v", err)
	}
}

func mustPolicy(t *testing.T, s string) policy.Policy {
	t.Helper()
	p, err := policy.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
