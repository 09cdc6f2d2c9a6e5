package flush

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// scriptedStates is a transfer's view of its flushes, set by a test.
type scriptedStates map[string]scripted

type scripted struct {
	st      State
	reason  string
	latency time.Duration
}

func (s scriptedStates) State(name string) (State, string, bool) {
	e, ok := s[name]
	return e.st, e.reason, ok
}

func (s scriptedStates) Latency(name string) (time.Duration, bool) {
	e, ok := s[name]
	return e.latency, ok && e.st != Pending
}

// The flush statistics follow each announced flush to its end: durable
// when the node's part is, failed instead if another node's part fails
// after that (the server fails the whole flush), counted once either way.
func TestTracker(t *testing.T) {
	states := scriptedStates{}
	set := func(name string, st State, reason string, lat time.Duration) {
		states[name] = scripted{st, reason, lat}
	}
	var tr Tracker
	var f Stats
	for _, n := range []string{"a", "b", "c", "d"} {
		tr.Add(n)
		set(n, Pending, "", 0)
	}
	tr.Refresh(states, &f)
	if f.Durable != 0 || f.Failed != 0 || len(tr.names) != 4 {
		t.Fatalf("all pending: %+v, following %v", f, tr.names)
	}
	set("a", Durable, "", 2*time.Second)   // this node's part; another server commits
	set("b", Committed, "", 3*time.Second) // committed by this node's server
	set("c", Durable, "", 4*time.Second)   // then another node's part fails
	set("d", Failed, "refused", 0)
	tr.Refresh(states, &f)
	tr.Refresh(states, &f) // counted once
	if f.Durable != 3 || f.Failed != 1 || f.Latency != 9 || f.LastFailure != "refused" {
		t.Fatalf("after a durable, b committed, c durable, d failed: %+v", f)
	}
	set("c", Failed, "rank 3: node lost with its cache", 4*time.Second)
	tr.Refresh(states, &f)
	if f.Durable != 2 || f.Failed != 2 || f.Latency != 5 || !strings.Contains(f.LastFailure, "node lost") {
		t.Errorf("c failed after its part was durable: %+v, want 2 durable (5 s), 2 failed", f)
	}
	if !slices.Equal(tr.names, []string{"a"}) {
		t.Errorf("still following %v, want [a] (durable, may yet fail)", tr.names)
	}
	delete(states, "a") // the client forgot it: done with it
	tr.Refresh(states, &f)
	if len(tr.names) != 0 || len(tr.durableAt) != 0 || f.Durable != 2 {
		t.Errorf("after the client forgot a: following %v (%v), stats %+v", tr.names, tr.durableAt, f)
	}
}
