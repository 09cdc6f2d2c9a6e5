package transparent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// before reports whether event a comes before event b in ev (both there).
func before(ev []string, a, b string) bool {
	i, j := slices.Index(ev, a), slices.Index(ev, b)
	return i >= 0 && j >= 0 && i < j
}

// TestConnectionsQuietAcrossDumpsAndRestores: with Config.Net, each rank
// locks its tree's connections before the freeze's agreement (so before
// any rank's dump), unlocks them after its own dump and before its tree
// resumes; the checkpoint records them, CRIU is asked to dump them; at
// the restart each rank locks them before its restore and unlocks them
// only once every rank restored.
func TestConnectionsQuietAcrossDumpsAndRestores(t *testing.T) {
	w := newWorld(2, 4)
	net := func(r int, cfg *Config) { cfg.Net = fakeLock{w: w, rank: r} }
	ctx, cancel := context.WithCancel(t.Context())
	rs := startRanksWith(t, ctx, w, net)
	waitCommits(t, w, 1)
	cancel()
	w.wake()
	rs.wait(t)
	ev := w.eventList()
	for r := range 2 {
		lock := fmt.Sprintf("lock %d [%v]", r, fakeConn(r))
		for d := range 2 {
			if !before(ev, lock, fmt.Sprintf("dump %d", d)) {
				t.Errorf("events %q: want %q before rank %d's dump", ev, lock, d)
			}
		}
		// The first unlock is begin's (a dead supervisor's table); the
		// dump's is the one after the lock.
		i := slices.Index(ev, lock)
		rest := ev[i:]
		if !before(rest, fmt.Sprintf("dump %d", r), fmt.Sprintf("unlock %d", r)) || !before(rest, fmt.Sprintf("unlock %d", r), fmt.Sprintf("thaw %d", r)) {
			t.Errorf("events %q: want rank %d's dump, unlock, thaw in that order", rest, r)
		}
		m, _ := w.lastMeta(r)
		if len(m.Conns) != 1 || m.Conns[0] != fakeConn(r) {
			t.Errorf("rank %d's checkpoint records connections %v, want %v", r, m.Conns, fakeConn(r))
		}
	}
	// The relaunch.
	w.mu.Lock()
	w.seq, w.gathers, w.events = make([]int, 2), map[int][][]byte{}, nil
	w.mu.Unlock()
	before1 := w.committed()
	rs = startRanksWith(t, t.Context(), w, net)
	waitCommits(t, w, before1+1)
	rs.endAll(0)
	rs.wait(t)
	for r, err := range rs.errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	ev = w.eventList()
	for r := range 2 {
		lock := fmt.Sprintf("lock %d [%v]", r, fakeConn(r))
		if !before(ev, lock, fmt.Sprintf("restore %d", r)) {
			t.Errorf("events %q: want %q before rank %d's restore", ev, lock, r)
		}
		i := slices.Index(ev, lock)
		unlock := slices.Index(ev[i:], fmt.Sprintf("unlock %d", r)) + i
		for o := range 2 {
			if restore := slices.Index(ev, fmt.Sprintf("restore %d", o)); unlock < i || restore > unlock {
				t.Errorf("events %q: want rank %d unlocked only after rank %d's restore", ev, r, o)
			}
		}
	}
}

// TestConnectionLockFailureFailsEveryRank: a rank that cannot lock its
// connections for its restore fails the restart on every rank (no rank
// lets its restored connections through to a peer that is not back).
func TestConnectionLockFailureFailsEveryRank(t *testing.T) {
	w := newWorld(2, 4)
	ctx, cancel := context.WithCancel(t.Context())
	rs := startRanksWith(t, ctx, w, func(r int, cfg *Config) { cfg.Net = fakeLock{w: w, rank: r} })
	waitCommits(t, w, 1)
	cancel()
	w.wake()
	rs.wait(t)
	w.mu.Lock()
	w.seq, w.gathers = make([]int, 2), map[int][][]byte{}
	w.mu.Unlock()
	rs = startRanksWith(t, t.Context(), w, func(r int, cfg *Config) {
		l := fakeLock{w: w, rank: r}
		if r == 1 {
			l.failLock = errors.New("no nftables")
		}
		cfg.Net = l
	})
	rs.wait(t)
	if rs.errs[1] == nil || !strings.Contains(rs.errs[1].Error(), "no nftables") {
		t.Errorf("rank 1: %v: want its lock's error", rs.errs[1])
	}
	if rs.errs[0] == nil || !strings.Contains(rs.errs[0].Error(), "another rank could not restore") {
		t.Errorf("rank 0: %v: want another rank's failure named", rs.errs[0])
	}
}

// TestConnectionUnlockFailureBeforeRestartAgreesOnNothing: a rank whose
// removal of a dead supervisor's table fails before the job's restart
// returns that error without entering the restart's agreement: its
// gather would meet the other ranks' restart collectives out of step
// (the real job's first restart round gathers every rank's offer).
func TestConnectionUnlockFailureBeforeRestartAgreesOnNothing(t *testing.T) {
	w := newWorld(1, 4)
	cfg := Config{Runner: &fakeRunner{w: w}, Tool: fakeTool(w), Scratch: t.TempDir(), Tick: time.Millisecond,
		Net: fakeLock{w: w, failUnlock: errors.New("no nftables")}}
	_, err := Run(t.Context(), fakeJob{w: w}, cfg)
	if err == nil || !strings.Contains(err.Error(), "no nftables") {
		t.Fatalf("Run: %v: want the unlock's error", err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seq[0] != 0 {
		t.Errorf("the failed rank gathered %d times, want none (no agreement before the restart)", w.seq[0])
	}
}
