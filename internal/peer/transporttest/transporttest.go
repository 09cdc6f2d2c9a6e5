// Package transporttest is the conformance suite of redundancy.Transport:
// one set of tests of the numbered contract in the redundancy package,
// run against every implementation through a Factory. The in-process
// transport (inproc) passes it, and so must the network ones.
package transporttest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/redundancy"
)

// Net is one set of members under test.
type Net struct {
	// Endpoints are the members' transports, indexed by member.
	Endpoints []redundancy.Transport
	// Close makes member i leave or fail, as inproc.Endpoint.Close does:
	// its calls then fail with redundancy.ErrClosed, its peers' with
	// redundancy.ErrPeerClosed once they have received what it sent.
	Close func(i int) error
}

// Factory returns a fresh set of n members in which every ordered pair
// buffers depth messages (as inproc.WithDepth). It releases what it
// made through t.Cleanup.
type Factory func(t *testing.T, n, depth int) Net

// hang bounds every wait of the suite: an implementation that blocks
// fails the test instead of hanging it. It is a bound, not a budget: the
// whole ConcurrentPeers exchange runs under it, and took more than 10 s
// under -race on a machine loaded 15 times over its cores.
const hang = 60 * time.Second

// Run runs the suite.
func Run(t *testing.T, f Factory) {
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, Factory)
	}{
		{"FIFOAndOwnership", testFIFOAndOwnership},
		{"TagMismatch", testTagMismatch},
		{"BadPeer", testBadPeer},
		{"Backpressure", testBackpressure},
		{"CancelUnblocks", testCancelUnblocks},
		{"CloseFailsPeers", testCloseFailsPeers},
		{"SendToClosedPeer", testSendToClosedPeer},
		{"ConcurrentPeers", testConcurrentPeers},
		{"LargeMessages", testLargeMessages},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, f) })
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	t.Cleanup(cancel)
	return ctx
}

// Messages arrive in order, Send does not retain msg, Recv uses buf when
// it fits and allocates when it does not, empty messages travel.
func testFIFOAndOwnership(t *testing.T, f Factory) {
	ctx := ctxT(t)
	nw := f(t, 3, 8)
	a, b := nw.Endpoints[0], nw.Endpoints[2]
	msg := []byte("hello")
	for i := range 5 {
		msg[0] = byte('0' + i)
		if err := a.Send(ctx, 2, uint64(i), msg); err != nil {
			t.Fatal(err)
		}
	}
	msg[0] = 'X' // the sender may reuse its buffer at once
	buf := make([]byte, 0, 16)
	for i := range 5 {
		got, err := b.Recv(ctx, 0, uint64(i), buf)
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("%dello", i); string(got) != want {
			t.Fatalf("message %d = %q, want %q", i, got, want)
		}
		if &got[0] != &buf[:1][0] {
			t.Fatal("Recv did not use the caller's buffer")
		}
	}
	// A Recv that waits before the message is sent gets it in buf too.
	done := make(chan error, 1)
	go func() {
		got, err := b.Recv(ctx, 0, 99, buf)
		if err == nil && (string(got) != "late" || &got[0] != &buf[:1][0]) {
			err = fmt.Errorf("waiting Recv got %q (in buf: %v)", got, len(got) > 0 && &got[0] == &buf[:1][0])
		}
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	if err := a.Send(ctx, 2, 99, []byte("late")); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// Empty messages and buffers too small.
	if err := a.Send(ctx, 2, 9, nil); err != nil {
		t.Fatal(err)
	}
	if got, err := b.Recv(ctx, 0, 9, nil); err != nil || len(got) != 0 {
		t.Fatalf("empty message: %q, %v", got, err)
	}
	if err := a.Send(ctx, 2, 10, []byte("a longer message")); err != nil {
		t.Fatal(err)
	}
	small := make([]byte, 0, 2)
	got, err := b.Recv(ctx, 0, 10, small)
	if err != nil || string(got) != "a longer message" {
		t.Fatalf("long message: %q, %v", got, err)
	}
	// The other direction is a stream of its own.
	if err := b.Send(ctx, 0, 11, []byte("back")); err != nil {
		t.Fatal(err)
	}
	if got, err := a.Recv(ctx, 2, 11, nil); err != nil || string(got) != "back" {
		t.Fatalf("reply: %q, %v", got, err)
	}
}

func testTagMismatch(t *testing.T, f Factory) {
	ctx := ctxT(t)
	nw := f(t, 2, 4)
	if err := nw.Endpoints[0].Send(ctx, 1, 7, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := nw.Endpoints[1].Recv(ctx, 0, 8, nil); !errors.Is(err, redundancy.ErrTagMismatch) {
		t.Fatalf("Recv with the wrong tag: %v", err)
	}
}

func testBadPeer(t *testing.T, f Factory) {
	ctx := ctxT(t)
	ep := f(t, 2, 4).Endpoints[0]
	for _, p := range []int{-1, 0, 2} {
		if err := ep.Send(ctx, p, 0, nil); err == nil {
			t.Errorf("Send to %d accepted", p)
		}
		if _, err := ep.Recv(ctx, p, 0, nil); err == nil {
			t.Errorf("Recv from %d accepted", p)
		}
	}
}

// Send blocks when the pair's buffer is full, and only that pair's.
func testBackpressure(t *testing.T, f Factory) {
	ctx := ctxT(t)
	nw := f(t, 3, 2)
	a := nw.Endpoints[0]
	for i := range 2 {
		if err := a.Send(ctx, 1, uint64(i), []byte{1}); err != nil {
			t.Fatal(err)
		}
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := a.Send(short, 1, 2, []byte{1}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Send to a full buffer: %v, want a timeout", err)
	}
	if err := a.Send(ctx, 2, 0, []byte{1}); err != nil {
		t.Fatalf("Send to another member: %v", err)
	}
	if _, err := nw.Endpoints[1].Recv(ctx, 0, 0, nil); err != nil {
		t.Fatal(err)
	}
	if err := a.Send(ctx, 1, 2, []byte{1}); err != nil {
		t.Fatalf("Send after the receiver made room: %v", err)
	}
	for i := 1; i <= 2; i++ {
		if _, err := nw.Endpoints[1].Recv(ctx, 0, uint64(i), nil); err != nil {
			t.Fatalf("message %d after the timed-out Send: %v", i, err)
		}
	}
}

func testCancelUnblocks(t *testing.T, f Factory) {
	nw := f(t, 2, 1)
	if err := nw.Endpoints[1].Send(ctxT(t), 0, 1, nil); err != nil { // fills 1→0
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 2)
	go func() { // nothing comes from 0→1
		_, err := nw.Endpoints[1].Recv(ctx, 0, 0, make([]byte, 0, 8))
		done <- err
	}()
	go func() { done <- nw.Endpoints[1].Send(ctx, 0, 2, nil) }() // 1→0 is full
	time.Sleep(20 * time.Millisecond)
	cancel()
	for range 2 {
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("after cancel: %v", err)
			}
		case <-time.After(hang):
			t.Fatal("cancel did not unblock")
		}
	}
	// The streams still work.
	ctx = ctxT(t)
	if _, err := nw.Endpoints[0].Recv(ctx, 1, 1, nil); err != nil {
		t.Fatal(err)
	}
	if err := nw.Endpoints[0].Send(ctx, 1, 3, []byte("after")); err != nil {
		t.Fatal(err)
	}
	if got, err := nw.Endpoints[1].Recv(ctx, 0, 3, nil); err != nil || string(got) != "after" {
		t.Fatalf("after cancel: %q, %v", got, err)
	}
}

func testCloseFailsPeers(t *testing.T, f Factory) {
	ctx := ctxT(t)
	nw := f(t, 3, 1)
	a, b, c := nw.Endpoints[0], nw.Endpoints[1], nw.Endpoints[2]
	// b sends one message, then fails; a still receives it, then an error.
	if err := b.Send(ctx, 0, 1, []byte("last words")); err != nil {
		t.Fatal(err)
	}
	recvErr := make(chan error, 1)
	go func() {
		_, err := c.Recv(ctx, 1, 1, nil) // blocked: b never sends to c
		recvErr <- err
	}()
	if err := a.Send(ctx, 1, 1, nil); err != nil { // fills a→b
		t.Fatal(err)
	}
	sendErr := make(chan error, 1)
	go func() { sendErr <- a.Send(ctx, 1, 2, nil) }() // blocked: a→b is full
	time.Sleep(50 * time.Millisecond)
	nw.Close(1)
	nw.Close(1) // idempotent
	for name, ch := range map[string]chan error{"blocked Recv": recvErr, "blocked Send": sendErr} {
		select {
		case err := <-ch:
			if !errors.Is(err, redundancy.ErrPeerClosed) {
				t.Errorf("%s from a closed peer: %v", name, err)
			}
		case <-time.After(hang):
			t.Fatalf("%s hangs after the peer closed", name)
		}
	}
	if got, err := a.Recv(ctx, 1, 1, nil); err != nil || string(got) != "last words" {
		t.Errorf("message sent before close: %q, %v", got, err)
	}
	if _, err := a.Recv(ctx, 1, 2, nil); !errors.Is(err, redundancy.ErrPeerClosed) {
		t.Errorf("Recv after the peer's messages: %v", err)
	}
	if err := b.Send(ctx, 0, 1, nil); !errors.Is(err, redundancy.ErrClosed) {
		t.Errorf("Send on a closed endpoint: %v", err)
	}
	if _, err := b.Recv(ctx, 2, 1, nil); !errors.Is(err, redundancy.ErrClosed) {
		t.Errorf("Recv on a closed endpoint: %v", err)
	}
}

// Sends to a closed peer fail with ErrPeerClosed, at once or (over a
// network, where the news travels) within a few messages; none hangs.
func testSendToClosedPeer(t *testing.T, f Factory) {
	ctx := ctxT(t)
	nw := f(t, 2, 4)
	if err := nw.Endpoints[0].Send(ctx, 1, 1, []byte("x")); err != nil {
		t.Fatal(err)
	}
	nw.Close(1)
	deadline := time.Now().Add(hang)
	for i := 0; ; i++ {
		err := nw.Endpoints[0].Send(ctx, 1, 2, []byte("y"))
		if errors.Is(err, redundancy.ErrPeerClosed) {
			break
		}
		if err != nil {
			t.Fatalf("Send to a closed peer: %v, want ErrPeerClosed", err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d Sends to a closed peer succeeded", i+1)
		}
		time.Sleep(time.Millisecond)
	}
	if _, err := nw.Endpoints[0].Recv(ctx, 1, 0, nil); !errors.Is(err, redundancy.ErrPeerClosed) {
		t.Fatalf("Recv from a closed peer that sent nothing: %v", err)
	}
}

// Every member sends to and receives from every other at once, with
// small buffers and mixed sizes: each stream arrives whole and in order.
func testConcurrentPeers(t *testing.T, f Factory) {
	const n, count = 4, 60
	ctx := ctxT(t)
	nw := f(t, n, 2)
	payload := func(from, to, i int) []byte {
		size := []int{0, 1, 100, 4096, 40 << 10, 150 << 10}[(from+to+i)%6]
		return randomBytes(uint64(from*n+to)<<32|uint64(i), size)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2*n*n)
	for me := range n {
		for peer := range n {
			if peer == me {
				continue
			}
			wg.Add(2)
			go func() {
				defer wg.Done()
				for i := range count {
					if err := nw.Endpoints[me].Send(ctx, peer, uint64(i), payload(me, peer, i)); err != nil {
						errs <- err
						return
					}
				}
			}()
			go func() {
				defer wg.Done()
				buf := make([]byte, 0, 64<<10)
				for i := range count {
					got, err := nw.Endpoints[me].Recv(ctx, peer, uint64(i), buf)
					if err != nil {
						errs <- err
						return
					}
					if !bytes.Equal(got, payload(peer, me, i)) {
						errs <- fmt.Errorf("%d→%d message %d: %d bytes, wrong content", peer, me, i, len(got))
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// randomBytes returns size bytes determined by seed.
func randomBytes(seed uint64, size int) []byte {
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	b := make([]byte, size)
	rand.NewChaCha8(key).Read(b)
	return b
}

// Messages of several MiB, larger than any small buffer, go through whole.
func testLargeMessages(t *testing.T, f Factory) {
	ctx := ctxT(t)
	nw := f(t, 2, 1)
	msgs := make([][]byte, 4)
	for i := range msgs {
		msgs[i] = randomBytes(uint64(i), (i+1)<<20+i)
	}
	errc := make(chan error, 1)
	go func() {
		for i, m := range msgs {
			if err := nw.Endpoints[0].Send(ctx, 1, uint64(i), m); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	buf := make([]byte, 0, 2<<20)
	for i := range msgs {
		got, err := nw.Endpoints[1].Recv(ctx, 0, uint64(i), buf)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, msgs[i]) {
			t.Fatalf("message %d: %d bytes, wrong content", i, len(got))
		}
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}
