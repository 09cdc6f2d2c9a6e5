package peer_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/ckpt/ckpt/internal/group"
	"github.com/ckpt/ckpt/internal/peer"
	"github.com/ckpt/ckpt/internal/testwait"
)

// msgFor is message i from rank from to rank to; some are large enough
// to be still on the wire when Drain starts.
func msgFor(from, to, i int) []byte {
	size := []int{10, 0, 1 << 20, 3000, 300 << 10}[(from+to+i)%5]
	b := bytes.Repeat([]byte{byte(from*16 + to)}, size)
	copy(b, fmt.Sprintf("%d>%d#%d", from, to, i))
	return b
}

func tagOf(from, to, i int) uint64 { return uint64(from)<<40 | uint64(to)<<20 | uint64(i) }

// drainAll runs Drain on every node at once.
func drainAll(t *testing.T, nodes []*peer.Node, g []*group.Member) ([][]peer.Pending, []error) {
	t.Helper()
	ctx := ctxT(t)
	pend := make([][]peer.Pending, len(nodes))
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pend[i], errs[i] = nodes[i].Drain(ctx, g[i])
		}()
	}
	testwait.Group(t, &wg, "the drains")
	return pend, errs
}

// Messages in flight at a checkpoint are captured by Drain, in order,
// and after a restart Inject delivers them before anything sent later.
func TestDrainAndInject(t *testing.T) {
	const n, sent, received = 4, 6, 2
	ctx := ctxT(t)
	nodes, res := cluster(t, n)
	// Every rank sends to every other except that rank 3 sends to nobody
	// (so some streams have no connection at all), then receives the first
	// few of each.
	sends := func(from, to int) int {
		if from == 3 {
			return 0
		}
		return sent
	}
	var wg sync.WaitGroup
	errc := make(chan error, n*n)
	for from := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for to := range n {
				for i := range sends(from, to) {
					if to != from {
						if err := nodes[from].Send(ctx, to, tagOf(from, to, i), msgFor(from, to, i)); err != nil {
							errc <- err
						}
					}
				}
			}
		}()
	}
	testwait.Group(t, &wg, "the senders")
	for to := range n {
		for from := range n {
			for i := range min(received, sends(from, to)) {
				if from == to {
					continue
				}
				got, err := nodes[to].Recv(ctx, from, tagOf(from, to, i), nil)
				if err != nil || !bytes.Equal(got, msgFor(from, to, i)) {
					t.Fatalf("%d→%d #%d before the drain: %d bytes, %v", from, to, i, len(got), err)
				}
			}
		}
	}
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}

	pend, errs := drainAll(t, nodes, group.Local(n))
	saved := make([][]byte, n)
	for to := range n {
		if errs[to] != nil {
			t.Fatalf("rank %d: drain: %v", to, errs[to])
		}
		var want []peer.Pending
		for from := range n {
			for i := received; i < sends(from, to) && from != to; i++ {
				want = append(want, peer.Pending{From: from, Tag: tagOf(from, to, i), Data: msgFor(from, to, i)})
			}
		}
		if err := samePending(pend[to], want); err != nil {
			t.Fatalf("rank %d: %v", to, err)
		}
		saved[to] = peer.MarshalPending(pend[to])
	}

	// The channel goes on after the drain, without the drained messages.
	for from := range n {
		for to := range n {
			if from != to {
				if err := nodes[from].Send(ctx, to, 99, []byte("after")); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	for to := range n {
		for from := range n {
			if from != to {
				if got, err := nodes[to].Recv(ctx, from, 99, nil); err != nil || string(got) != "after" {
					t.Fatalf("%d→%d after the drain: %q, %v", from, to, got, err)
				}
			}
		}
	}
	// A second drain right away finds nothing.
	pend, errs = drainAll(t, nodes, group.Local(n))
	for i := range n {
		if errs[i] != nil || len(pend[i]) != 0 {
			t.Fatalf("rank %d: second drain: %d messages, %v", i, len(pend[i]), errs[i])
		}
	}

	// Restart: new Nodes on new ports; each injects what it saved, peers
	// send new messages, and the application sees the saved ones first.
	for i := range nodes {
		nodes[i].Close()
	}
	for i := range nodes {
		nodes[i] = start(t, i, n, res)
	}
	for from := range n {
		for to := range n {
			if from != to {
				if err := nodes[from].Send(ctx, to, tagOf(from, to, sent), msgFor(from, to, sent)); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	for to := range n {
		msgs, err := peer.UnmarshalPending(saved[to])
		if err != nil {
			t.Fatal(err)
		}
		if err := nodes[to].Inject(msgs); err != nil {
			t.Fatal(err)
		}
		for from := range n {
			if from == to {
				continue
			}
			for i := received; i <= sent; i++ {
				if i < sent && i >= sends(from, to) {
					continue
				}
				got, err := nodes[to].Recv(ctx, from, tagOf(from, to, i), make([]byte, 0, 64))
				if err != nil || !bytes.Equal(got, msgFor(from, to, i)) {
					t.Fatalf("%d→%d #%d after the restart: %d bytes, %v", from, to, i, len(got), err)
				}
			}
		}
	}
}

func samePending(got, want []peer.Pending) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d pending messages, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i].From != want[i].From || got[i].Tag != want[i].Tag || !bytes.Equal(got[i].Data, want[i].Data) {
			return fmt.Errorf("pending %d: from %d tag %#x %d bytes, want from %d tag %#x %d bytes",
				i, got[i].From, got[i].Tag, len(got[i].Data), want[i].From, want[i].Tag, len(want[i].Data))
		}
	}
	return nil
}

// A rank whose Node died cannot drain: every rank's Drain fails.
func TestDrainAborts(t *testing.T) {
	ctx := ctxT(t)
	nodes, _ := cluster(t, 3)
	for from := range 3 {
		for to := range 3 {
			if from != to {
				if err := nodes[from].Send(ctx, to, 1, []byte("x")); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	nodes[2].Close()
	_, errs := drainAll(t, nodes, group.Local(3))
	for i, err := range errs {
		if !errors.Is(err, peer.ErrDrainAborted) {
			t.Errorf("rank %d: %v, want ErrDrainAborted", i, err)
		}
	}
	// The messages stay queued for the application.
	if got, err := nodes[0].Recv(ctx, 1, 1, nil); err != nil || string(got) != "x" {
		t.Errorf("after the aborted drain: %q, %v", got, err)
	}
}

// Drain with a group that does not match the Node.
func TestDrainWrongGroup(t *testing.T) {
	nodes, _ := cluster(t, 2)
	if _, err := nodes[0].Drain(context.Background(), group.Solo{}); err == nil {
		t.Fatal("Drain accepted a group of one")
	}
}

func TestInjectChecks(t *testing.T) {
	nodes, _ := cluster(t, 2)
	for _, from := range []int{-1, 0, 2} {
		if err := nodes[0].Inject([]peer.Pending{{From: from}}); err == nil {
			t.Errorf("Inject from %d accepted", from)
		}
	}
}

func TestPendingRoundTrip(t *testing.T) {
	msgs := []peer.Pending{{From: 3, Tag: 1 << 63, Data: []byte("abc")}, {From: 0, Tag: 0, Data: nil}, {From: 1 << 30, Tag: 7, Data: make([]byte, 1000)}}
	b := peer.MarshalPending(msgs)
	got, err := peer.UnmarshalPending(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := samePending(got, msgs); err != nil {
		t.Fatal(err)
	}
	if got, err := peer.UnmarshalPending(peer.MarshalPending(nil)); err != nil || len(got) != 0 {
		t.Fatalf("empty: %v, %v", got, err)
	}
	for i := range len(b) {
		if _, err := peer.UnmarshalPending(b[:i]); err == nil {
			t.Fatalf("truncated to %d bytes: accepted", i)
		}
	}
}
