package peer_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/peer"
	"github.com/ckpt/ckpt/internal/redundancy"
	"github.com/ckpt/ckpt/internal/testwait"
)

// waitFor polls cond until it holds or the test times out.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// A Node with another job's token is refused, and the refusal is counted;
// garbage instead of a handshake is refused the same way. The Node keeps
// serving.
func TestWrongTokenRefused(t *testing.T) {
	ctx := ctxT(t)
	nodes, res := cluster(t, 3)
	intruder, err := peer.Listen(2, 3, "another job", res, peer.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	defer intruder.Close()
	if err := intruder.Send(ctx, 0, 1, []byte("x")); !errors.Is(err, peer.ErrRefused) {
		t.Fatalf("Send with a wrong token: %v, want ErrRefused", err)
	}
	waitFor(t, "the refusal to be counted", func() bool { return nodes[0].Stats().Refused == 1 })

	for _, junk := range [][]byte{
		[]byte("GET / HTTP/1.1\r\n\r\n"),
		{0xff, 0xff, 0xff, 0xff, 1, 2, 3},   // claims a 4 GiB handshake
		{5, 0, 0, 0, 'c', 'k', 'p', 'P', 9}, // cut short after the magic
	} {
		c, err := net.Dial("tcp", nodes[0].Addr())
		if err != nil {
			t.Fatal(err)
		}
		c.Write(junk)
		c.SetReadDeadline(time.Now().Add(testTimeout))
		if _, err := c.Read(make([]byte, 64)); err == nil {
			// A refusal status may come first; then the connection closes.
			if _, err := c.Read(make([]byte, 64)); err == nil {
				t.Errorf("junk %q: connection still open", junk)
			}
		}
		c.Close()
	}
	waitFor(t, "the junk to be refused", func() bool { return nodes[0].Stats().Refused == 4 })
	if err := nodes[1].Send(ctx, 0, 5, []byte("still here")); err != nil {
		t.Fatal(err)
	}
	if got, err := nodes[0].Recv(ctx, 1, 5, nil); err != nil || string(got) != "still here" {
		t.Fatalf("after the refusals: %q, %v", got, err)
	}
}

// A set handshake that claims the largest size, from a dialler with the
// wrong token, is refused as soon as its head is in: the Node does not
// wait, for the handshake timeout, for a member list it would have had to
// hold before it knew the dialler was not of the job.
func TestWrongTokenRefusedBeforeTheHandshakeIsWhole(t *testing.T) {
	nodes, _ := cluster(t, 2, peer.WithHandshakeTimeout(10*time.Minute))
	head := binary.LittleEndian.AppendUint32(nil, 8<<20)
	head = append(head, "ckpP"...)
	head = append(head, 1, 1) // version, set channel
	head = binary.AppendUvarint(head, 5)
	head = append(head, "guess"...)
	c, err := net.Dial("tcp", nodes[0].Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write(head); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	status := make([]byte, 1)
	if _, err := io.ReadFull(c, status); err != nil || status[0] != 1 {
		t.Fatalf("answer to a wrong token: status %v, %v; want 1 (refused)", status, err)
	}
	waitFor(t, "the refusal to be counted", func() bool { return nodes[0].Stats().Refused == 1 })
}

// A rank relaunched as a new Node on another port is reached again under
// the same rank once its new address is published.
func TestRelaunchedPeerReachedAgain(t *testing.T) {
	ctx := ctxT(t)
	nodes, res := cluster(t, 2)
	a := nodes[0]
	if err := a.Send(ctx, 1, 1, []byte("before")); err != nil {
		t.Fatal(err)
	}
	if got, err := nodes[1].Recv(ctx, 0, 1, nil); err != nil || string(got) != "before" {
		t.Fatalf("%q, %v", got, err)
	}
	if err := nodes[1].Send(ctx, 0, 2, []byte("last words")); err != nil {
		t.Fatal(err)
	}
	oldAddr := nodes[1].Addr()
	nodes[1].Close()
	// a learns that rank 1 is gone: its messages, then ErrPeerClosed.
	if got, err := a.Recv(ctx, 1, 2, nil); err != nil || string(got) != "last words" {
		t.Fatalf("%q, %v", got, err)
	}
	if _, err := a.Recv(ctx, 1, 3, nil); !errors.Is(err, redundancy.ErrPeerClosed) {
		t.Fatalf("Recv from the dead rank: %v", err)
	}
	waitFor(t, "Send to notice the dead rank", func() bool {
		return errors.Is(a.Send(ctx, 1, 0, nil), redundancy.ErrPeerClosed)
	})

	b := start(t, 1, 2, res) // the relaunch publishes the new address
	if b.Addr() == oldAddr {
		t.Fatalf("relaunched on the same address %s", oldAddr)
	}
	// Each dead connection is reported once, to one Send, and forgotten
	// (outSlot.conn): one that a background liveness probe made to the
	// dying rank may still be found by the first Send after the relaunch
	// (seen once in a full -race run). The next Send must reach the new
	// rank.
	if stale := a.Send(ctx, 1, 3, []byte("hello again")); stale != nil {
		if !errors.Is(stale, redundancy.ErrPeerClosed) {
			t.Fatalf("Send to the relaunched rank: %v", stale)
		}
		if err := a.Send(ctx, 1, 3, []byte("hello again")); err != nil {
			t.Fatalf("Send to the relaunched rank, after one stale connection was reported (%v): %v", stale, err)
		}
	}
	if got, err := b.Recv(ctx, 0, 3, nil); err != nil || string(got) != "hello again" {
		t.Fatalf("relaunched rank received %q, %v", got, err)
	}
	if err := b.Send(ctx, 0, 4, []byte("back")); err != nil {
		t.Fatal(err)
	}
	if got, err := a.Recv(ctx, 1, 4, nil); err != nil || string(got) != "back" {
		t.Fatalf("from the relaunched rank: %q, %v", got, err)
	}
}

// A full application stream (its receiver not reading) holds up neither
// a set channel between the same two ranks nor another set.
func TestChannelsIndependent(t *testing.T) {
	ctx := ctxT(t)
	nodes, _ := cluster(t, 2, peer.WithDepth(2), peer.WithWindow(2<<20))
	big := make([]byte, 1<<20)
	for i := range 2 {
		if err := nodes[0].Send(ctx, 1, uint64(i), big); err != nil {
			t.Fatal(err)
		}
	}
	blocked := make(chan error, 1)
	go func() { blocked <- nodes[0].Send(ctx, 1, 2, big) }()
	for epoch := uint64(1); epoch <= 2; epoch++ {
		errs := runSet(ctx, t, nodes, []int{0, 1}, epoch, func(ctx context.Context, me int, tr redundancy.Transport) error {
			for i := range 10 {
				if me == 0 {
					if err := tr.Send(ctx, 1, uint64(i), big); err != nil {
						return err
					}
				} else if _, err := tr.Recv(ctx, 0, uint64(i), big); err != nil {
					return err
				}
			}
			return nil
		})
		for i, err := range errs {
			if err != nil {
				t.Fatalf("set epoch %d member %d: %v", epoch, i, err)
			}
		}
	}
	select {
	case err := <-blocked:
		t.Fatalf("the application Send to a full stream returned: %v", err)
	default:
	}
	for i := range 3 {
		if _, err := nodes[1].Recv(ctx, 0, uint64(i), big); err != nil {
			t.Fatal(err)
		}
	}
	if err := testwait.Recv(t, blocked, "the blocked Send"); err != nil {
		t.Fatal(err)
	}
}

// A peer killed in the middle of a stream of large messages: the sender
// fails, the receiver gets what arrived and then fails; nobody hangs.
func TestPeerKilledMidTransfer(t *testing.T) {
	ctx := ctxT(t)
	nodes, _ := cluster(t, 3)
	big := bytes.Repeat([]byte{7}, 1<<20)
	sendErr := make(chan error, 1)
	go func() {
		for i := 0; ; i++ {
			if err := nodes[0].Send(ctx, 1, uint64(i), big); err != nil {
				sendErr <- err
				return
			}
		}
	}()
	recvErr := make(chan error, 1)
	go func() {
		buf := make([]byte, 0, 1<<20)
		for i := 0; ; i++ {
			if _, err := nodes[0].Recv(ctx, 2, uint64(i), buf); err != nil {
				recvErr <- err
				return
			}
		}
	}()
	go func() {
		for i := 0; ; i++ {
			if err := nodes[2].Send(ctx, 0, uint64(i), big); err != nil {
				return
			}
		}
	}()
	buf := make([]byte, 0, 1<<20)
	for i := range 5 {
		if _, err := nodes[1].Recv(ctx, 0, uint64(i), buf); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(20 * time.Millisecond)
	nodes[1].Close()
	nodes[2].Close()
	if err := testwait.Recv(t, sendErr, "the sender"); !errors.Is(err, redundancy.ErrPeerClosed) {
		t.Errorf("sender: %v, want ErrPeerClosed", err)
	}
	if err := testwait.Recv(t, recvErr, "the receiver"); !errors.Is(err, redundancy.ErrPeerClosed) {
		t.Errorf("receiver: %v, want ErrPeerClosed", err)
	}
}

// A message larger than the receiver's limit is refused by the sender.
func TestTooLarge(t *testing.T) {
	ctx := ctxT(t)
	nodes, _ := cluster(t, 2, peer.WithMaxFrame(1000))
	if err := nodes[0].Send(ctx, 1, 1, make([]byte, 1001)); !errors.Is(err, peer.ErrTooLarge) {
		t.Fatalf("%v, want ErrTooLarge", err)
	}
	if err := nodes[0].Send(ctx, 1, 1, make([]byte, 1000)); err != nil {
		t.Fatal(err)
	}
	if got, err := nodes[1].Recv(ctx, 0, 1, nil); err != nil || len(got) != 1000 {
		t.Fatalf("%d bytes, %v", len(got), err)
	}
}

// A message larger than the window goes when nothing else is outstanding.
func TestMessageLargerThanWindow(t *testing.T) {
	ctx := ctxT(t)
	nodes, _ := cluster(t, 2, peer.WithWindow(1000), peer.WithDepth(8))
	errc := make(chan error, 1)
	go func() {
		for i := range 5 {
			if err := nodes[0].Send(ctx, 1, uint64(i), make([]byte, 600*(i+1))); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	for i := range 5 {
		if got, err := nodes[1].Recv(ctx, 0, uint64(i), nil); err != nil || len(got) != 600*(i+1) {
			t.Fatalf("message %d: %d bytes, %v", i, len(got), err)
		}
	}
	if err := testwait.Recv(t, errc, "the sender"); err != nil {
		t.Fatal(err)
	}
}

func TestOpenSetChecks(t *testing.T) {
	ctx := ctxT(t)
	nodes, _ := cluster(t, 3)
	for _, members := range [][]int{{1, 2}, {0, 0, 1}, {0, 3}, {-1, 0}} {
		if _, _, err := nodes[0].OpenSet(ctx, members, 1); err == nil {
			t.Errorf("OpenSet(%v) accepted", members)
		}
	}
	_, c, err := nodes[0].OpenSet(ctx, []int{0, 1}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := nodes[0].OpenSet(ctx, []int{0, 1}, 1); err == nil {
		t.Error("the same set opened twice")
	}
	c.Close()
	if _, _, err := nodes[0].OpenSet(ctx, []int{0, 1}, 1); err == nil {
		t.Error("a closed set reopened")
	}
	if _, _, err := nodes[0].OpenSet(ctx, []int{0, 1}, 2); err != nil {
		t.Errorf("the next epoch: %v", err)
	}
	if _, err := peer.Listen(3, 3, token, peer.NewMapResolver()); err == nil {
		t.Error("Listen accepted rank 3 of 3")
	}
}

// Close is idempotent, and calls made after it fail with ErrClosed.
func TestCloseNode(t *testing.T) {
	ctx := ctxT(t)
	nodes, _ := cluster(t, 2)
	nodes[0].Close()
	nodes[0].Close()
	if err := nodes[0].Send(ctx, 1, 0, nil); !errors.Is(err, redundancy.ErrClosed) {
		t.Errorf("Send: %v", err)
	}
	if _, err := nodes[0].Recv(ctx, 1, 0, nil); !errors.Is(err, redundancy.ErrClosed) {
		t.Errorf("Recv: %v", err)
	}
	if _, _, err := nodes[0].OpenSet(ctx, []int{0, 1}, 1); !errors.Is(err, redundancy.ErrClosed) {
		t.Errorf("OpenSet: %v", err)
	}
}
