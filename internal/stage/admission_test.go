package stage

import (
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/storage/mem"
)

// Before its Hello a client has shown nothing: a first frame longer than
// the largest Hello is refused from its header, at once, not waited for
// until the Hello timeout (10 minutes here).
func TestHelloLongerThanAHelloRefusedFromItsHeader(t *testing.T) {
	_, addr := startServer(t, Config{Shared: mem.New(), HelloTimeout: 10 * time.Minute})
	p := dialPeer(t, addr)
	p.sendRaw(frame(THello, maxHelloFrame+1, nil)) // the payload never comes
	p.expectClosed("a Hello longer than any")
	// The largest Hello fits.
	big := Append(nil, &Hello{Version: Version, Token: string(make([]byte, maxString)), Node: string(make([]byte, maxString))})
	if n := len(big) - headerSize; n > maxHelloFrame {
		t.Fatalf("the largest Hello has %d payload bytes, limit %d", n, maxHelloFrame)
	}
}

// A client that connects and trickles bytes without ever completing its
// Hello is dropped after Config.HelloTimeout, and does not hold up the
// clients that do say Hello.
func TestSlowHelloDropped(t *testing.T) {
	_, addr := startServer(t, Config{Shared: mem.New(), HelloTimeout: 500 * time.Millisecond})
	// The clock starts before the dial: the server's deadline runs from its
	// accept, which comes after the dial began but may come before the dial
	// returns here, so a clock started after the dial could read less.
	start := time.Now()
	slow := dialPeer(t, addr)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		hello := Append(nil, &Hello{Version: Version, Token: "tok", Node: "slow"})
		for _, b := range hello[:len(hello)-1] {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			if _, err := slow.nc.Write([]byte{b}); err != nil {
				return
			}
		}
	}()
	good := dialPeer(t, addr)
	if w := good.hello("tok", "node0"); w == nil {
		t.Fatal("no Welcome for a client beside a slow one")
	}
	slow.expectClosed("a Hello trickled a byte at a time")
	if d := time.Since(start); d < 500*time.Millisecond {
		t.Errorf("the slow client was dropped after %v, before its Hello timeout", d)
	}
}
