package coordnet

import (
	"bufio"
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/coord"
	"github.com/ckpt/ckpt/internal/wire"
)

// waitFor polls cond until it holds, failing the test after limit.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up after %v waiting for %s", limit, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A rank that joins long after the others — more than the heartbeat
// timeout later — still makes the job: the ranks that joined first wait
// for Welcome, neither killed by a Heartbeat nor timed out for silence.
func TestLateJoinerAdmitted(t *testing.T) {
	const hb = 300 * time.Millisecond
	co := startCoord(t, coord.Config{Size: 2, HeartbeatTimeout: hb, HeartbeatInterval: hb / 3})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	type dialed struct {
		c   *Client
		err error
	}
	first := make(chan dialed, 1)
	go func() {
		c, err := Dial(ctx, ClientConfig{Addr: co.Addr(), Token: token, Node: "n0", Rank: 0, Size: 2,
			HeartbeatInterval: 100 * time.Millisecond})
		first <- dialed{c, err}
	}()
	waitFor(t, 30*time.Second, "rank 0 to join", func() bool { return co.Status().Joined == 1 })
	// The gap between the ranks' starts is what is tested: several
	// heartbeat timeouts, in which the coordinator used to heartbeat (and
	// kill) rank 0, or drop it for silence.
	time.Sleep(4 * hb)
	if st := co.Status(); st.Joined != 1 || st.Phase != coord.Joining {
		t.Fatalf("after the gap: %+v, want rank 0 still joined and the job joining", st)
	}
	late, err := Dial(ctx, ClientConfig{Addr: co.Addr(), Token: token, Node: "n1", Rank: 1, Size: 2,
		HeartbeatInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("late rank 1: %v", err)
	}
	defer late.Close()
	var d dialed
	select {
	case d = <-first:
	case <-time.After(30 * time.Second):
		t.Fatal("rank 0 was not welcomed within 30s of rank 1 joining")
	}
	if d.err != nil {
		t.Fatalf("rank 0: %v", d.err)
	}
	defer d.c.Close()
	// The job runs: a collective completes and both leave.
	clients := []*Client{d.c, late}
	each(t, clients, func(r int, c *Client) error { return c.Barrier(ctx) })
	each(t, clients, func(r int, c *Client) error { return c.Leave() })
	select {
	case <-co.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the coordinator did not finish within 30s of every rank leaving")
	}
	if err := co.Err(); err != nil {
		t.Fatalf("job failed: %v", err)
	}
}

// Ranks still waiting when the join timeout passes get the reason, naming
// the rank missing, and so does the coordinator.
func TestJoinTimeoutNamesMissingRanks(t *testing.T) {
	co := startCoord(t, coord.Config{Size: 3, JoinTimeout: 500 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, err := Dial(ctx, ClientConfig{Addr: co.Addr(), Token: token, Node: "n0", Rank: 1, Size: 3})
	if !errors.Is(err, ErrAborted) || !strings.Contains(err.Error(), "ranks [0 2] did not join") {
		t.Fatalf("rank 1: %v, want an abort naming ranks [0 2]", err)
	}
	select {
	case <-co.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the coordinator did not end within 30s")
	}
	if err := co.Err(); err == nil || !strings.Contains(err.Error(), "ranks [0 2] did not join") {
		t.Fatalf("coordinator: %v, want the join timeout naming ranks [0 2]", err)
	}
}

// A rank waiting for Welcome ignores Heartbeats (coordinators before the
// join timeout sent them) and heartbeats itself meanwhile.
func TestDialToleratesHeartbeatBeforeWelcome(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	served := make(chan error, 1)
	go func() {
		served <- func() error {
			nc, err := ln.Accept()
			if err != nil {
				return err
			}
			defer nc.Close()
			nc.SetDeadline(time.Now().Add(60 * time.Second))
			br := bufio.NewReader(nc)
			if m, err := wire.ReadFrame(br, wire.DefaultLimit); err != nil {
				return err
			} else if _, ok := m.(*wire.Hello); !ok {
				return errors.New("first message is " + m.String())
			}
			for range 3 {
				if err := wire.WriteFrame(nc, &wire.Heartbeat{}); err != nil {
					return err
				}
			}
			// The client heartbeats while it waits.
			if m, err := wire.ReadFrame(br, wire.DefaultLimit); err != nil {
				return err
			} else if _, ok := m.(*wire.Heartbeat); !ok {
				return errors.New("expected a Heartbeat from the waiting client, got " + m.String())
			}
			if err := wire.WriteFrame(nc, &wire.Welcome{Size: 1}); err != nil {
				return err
			}
			_, err = wire.ReadFrame(br, wire.DefaultLimit) // until the client closes
			return nil
		}()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := Dial(ctx, ClientConfig{Addr: ln.Addr().String(), Token: token, Rank: 0, Size: 1,
		HeartbeatInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	c.Close()
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("fake coordinator: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("fake coordinator did not finish within 30s")
	}
}
