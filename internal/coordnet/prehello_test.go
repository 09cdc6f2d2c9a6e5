package coordnet

import (
	"bufio"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/coord"
	"github.com/ckpt/ckpt/internal/wire"
)

// Before its Hello a connection has not shown the job's token, and the
// listener reads no frame larger than a Hello from it: a request over
// wire.HelloLimit is dropped unanswered (not read whole and answered
// "before Hello"), on the coordinator and on a relay. After a Hello the
// full limit applies: the same request is read, and answered.
func TestFramesBeforeHelloHeldToHelloSize(t *testing.T) {
	co := startCoord(t, coord.Config{Size: 1})
	relay := startRelay(t, co, "n0", []int32{0})
	big := &wire.Collective{Seq: 1, Kind: wire.AllGather, Contribs: []wire.Contrib{{Rank: 0, Data: make([]byte, wire.HelloLimit)}}}
	for _, addr := range []string{co.Addr(), relay.Addr()} {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		go wire.WriteFrame(nc, big) // the listener may stop reading halfway
		nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		msg, err := wire.ReadFrame(bufio.NewReader(nc), wire.DefaultLimit)
		if err == nil {
			t.Errorf("%s: an oversized frame before Hello was answered with %v", addr, msg)
		} else if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() {
			t.Errorf("%s: the listener kept the connection open", addr)
		}
	}

	// After its Hello the same frame is read whole, and answered (with a
	// Result or an Error: the machine's limits are not the reader's).
	co2 := startCoord(t, coord.Config{Size: 1})
	nc := rawHello(t, co2.Addr(), 0, 0)
	br := bufio.NewReader(nc)
	nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if msg, err := wire.ReadFrame(br, wire.DefaultLimit); err != nil {
		t.Fatalf("waiting for Welcome: %v", err)
	} else if _, ok := msg.(*wire.Welcome); !ok {
		t.Fatalf("got %v, want Welcome", msg)
	}
	go wire.WriteFrame(nc, big)
	if msg, err := wire.ReadFrame(br, wire.DefaultLimit); err != nil {
		t.Fatalf("a frame of %d bytes after Hello was not answered: %v", wire.HelloLimit, err)
	} else {
		t.Logf("answered %v", msg)
	}
}

// A connection that sends heartbeats and never a Hello is held to the
// same time as a silent one, counted from its start: the coordinator and a
// relay refuse it, saying why, and close it, though its heartbeats never
// stop (a slowloris that talks).
func TestHeartbeatsWithoutHelloRefused(t *testing.T) {
	const timeout = time.Second // a Hello is due within two while joining
	co := startCoord(t, coord.Config{Size: 2, HeartbeatTimeout: timeout})
	relay := relayVia(t, co.Addr(), "n0", []int32{0}, timeout)
	for _, addr := range []string{co.Addr(), relay.Addr()} {
		// The server's clock starts when it accepts, which may be before
		// Dial returns here: start before dialling.
		start := time.Now()
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		stop := make(chan struct{})
		defer close(stop)
		go func() {
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for {
				if wire.WriteFrame(nc, &wire.Heartbeat{}) != nil {
					return
				}
				select {
				case <-tick.C:
				case <-stop:
					return
				}
			}
		}()
		nc.SetReadDeadline(start.Add(30 * time.Second))
		br := bufio.NewReader(nc)
		msg, err := wire.ReadFrame(br, wire.DefaultLimit)
		if err != nil {
			t.Fatalf("%s: a talker without Hello: %v, want Refused", addr, err)
		}
		if r, ok := msg.(*wire.Refused); !ok || r.Reason != "no Hello within 2s of connecting" {
			t.Fatalf("%s: a talker without Hello got %v, want Refused for no Hello", addr, msg)
		}
		if d := time.Since(start); d < 2*timeout {
			t.Errorf("%s: refused after %v, before the %v a Hello is due in", addr, d, 2*timeout)
		}
		// Closed: an end, or a reset when heartbeats it never read were
		// still in its buffer; not a read that times out.
		_, err = wire.ReadFrame(br, wire.DefaultLimit)
		if ne := net.Error(nil); err == nil || errors.As(err, &ne) && ne.Timeout() {
			t.Errorf("%s: after the Refused: %v, want the connection closed", addr, err)
		}
	}
}
