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
