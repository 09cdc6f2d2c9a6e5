package inproc_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/redundancy"
	"github.com/ckpt/ckpt/internal/redundancy/inproc"
)

func TestFIFOAndOwnership(t *testing.T) {
	ctx := context.Background()
	nw := inproc.New(3, inproc.WithDepth(8))
	a, b := nw.Endpoint(0), nw.Endpoint(2)
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
	if got, err := b.Recv(ctx, 0, 10, make([]byte, 0, 2)); err != nil || string(got) != "a longer message" {
		t.Fatalf("long message: %q, %v", got, err)
	}
}

func TestTagMismatch(t *testing.T) {
	ctx := context.Background()
	nw := inproc.New(2)
	if err := nw.Endpoint(0).Send(ctx, 1, 7, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := nw.Endpoint(1).Recv(ctx, 0, 8, nil); !errors.Is(err, redundancy.ErrTagMismatch) {
		t.Fatalf("Recv with the wrong tag: %v", err)
	}
}

func TestBadPeer(t *testing.T) {
	ctx := context.Background()
	ep := inproc.New(2).Endpoint(0)
	for _, p := range []int{-1, 0, 2} {
		if err := ep.Send(ctx, p, 0, nil); err == nil {
			t.Errorf("Send to %d accepted", p)
		}
		if _, err := ep.Recv(ctx, p, 0, nil); err == nil {
			t.Errorf("Recv from %d accepted", p)
		}
	}
}

// Send blocks when the pair's queue is full, and only that pair's.
func TestBackpressure(t *testing.T) {
	nw := inproc.New(3, inproc.WithDepth(2))
	a := nw.Endpoint(0)
	ctx := context.Background()
	for i := range 2 {
		if err := a.Send(ctx, 1, uint64(i), []byte{1}); err != nil {
			t.Fatal(err)
		}
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if err := a.Send(short, 1, 2, []byte{1}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Send to a full queue: %v, want a timeout", err)
	}
	if err := a.Send(ctx, 2, 0, []byte{1}); err != nil {
		t.Fatalf("Send to another member: %v", err)
	}
	if _, err := nw.Endpoint(1).Recv(ctx, 0, 0, nil); err != nil {
		t.Fatal(err)
	}
	if err := a.Send(ctx, 1, 2, []byte{1}); err != nil {
		t.Fatalf("Send after the receiver made room: %v", err)
	}
}

func TestCancelUnblocks(t *testing.T) {
	nw := inproc.New(2, inproc.WithDepth(1))
	if err := nw.Endpoint(1).Send(context.Background(), 0, 1, nil); err != nil { // fills 1→0
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 2)
	go func() { // nothing comes from 0→1
		_, err := nw.Endpoint(1).Recv(ctx, 0, 0, nil)
		done <- err
	}()
	go func() { done <- nw.Endpoint(1).Send(ctx, 0, 2, nil) }() // 1→0 is full
	time.Sleep(10 * time.Millisecond)
	cancel()
	for range 2 {
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("after cancel: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("cancel did not unblock")
		}
	}
}

func TestCloseFailsPeers(t *testing.T) {
	ctx := context.Background()
	nw := inproc.New(3, inproc.WithDepth(1))
	a, b, c := nw.Endpoint(0), nw.Endpoint(1), nw.Endpoint(2)
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
	time.Sleep(10 * time.Millisecond)
	b.Close()
	b.Close() // idempotent
	for name, ch := range map[string]chan error{"blocked Recv": recvErr, "blocked Send": sendErr} {
		select {
		case err := <-ch:
			if !errors.Is(err, redundancy.ErrPeerClosed) {
				t.Errorf("%s from a closed peer: %v", name, err)
			}
		case <-time.After(5 * time.Second):
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

func TestRun(t *testing.T) {
	nw := inproc.New(4)
	boom := errors.New("boom")
	errs := nw.Run(context.Background(), func(ctx context.Context, me int, ep *inproc.Endpoint) error {
		if me == 3 {
			return boom
		}
		// Everyone else waits for member 3, which never sends: they must
		// fail once it returns, not hang.
		_, err := ep.Recv(ctx, 3, 0, nil)
		return err
	})
	for i, err := range errs {
		want := redundancy.ErrPeerClosed
		if i == 3 {
			want = boom
		}
		if !errors.Is(err, want) {
			t.Errorf("member %d: %v, want %v", i, err, want)
		}
	}
}
