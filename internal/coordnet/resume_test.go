package coordnet

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/coord"
	"github.com/ckpt/ckpt/internal/group"
	"github.com/ckpt/ckpt/internal/testwait"
	"github.com/ckpt/ckpt/internal/wire"
)

// proxy forwards TCP connections to target; cut drops the ones open, as a
// network failure between a relay and the coordinator would; mute makes
// what the coordinator sends on them vanish, as a hung coordinator or a
// black-holed route would, and muteAll does so for later ones too.
type proxy struct {
	ln       net.Listener
	target   string
	mu       sync.Mutex
	open     []net.Conn
	muted    []*atomic.Bool // per connection: the coordinator's side is lost
	all      bool           // new connections start muted
	refuse   bool           // new connections are closed at once
	refused  int
	accepted int
	attempts int // every connection accepted, forwarded or not
}

func startProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target}
	t.Cleanup(func() { ln.Close(); p.cut() })
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			p.attempts++
			refuse := p.refuse
			if refuse {
				p.refused++
			}
			p.mu.Unlock()
			if refuse {
				in.Close()
				continue
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				in.Close()
				continue
			}
			mute := new(atomic.Bool)
			p.mu.Lock()
			p.open = append(p.open, in, out)
			p.muted = append(p.muted, mute)
			mute.Store(p.all)
			p.accepted++
			p.mu.Unlock()
			go func() { io.Copy(out, in); out.Close() }()
			go func() { copyUnlessMuted(in, out, mute); in.Close() }()
		}
	}()
	return p
}

// copyUnlessMuted copies from src to dst until src ends, dropping what it
// reads while mute is set.
func copyUnlessMuted(dst io.Writer, src io.Reader, mute *atomic.Bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !mute.Load() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// mute silences the coordinator's side of the connections open now.
func (p *proxy) mute() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range p.muted {
		m.Store(true)
	}
}

// muteAll silences the coordinator's side of every connection, open now
// or later: the coordinator hung.
func (p *proxy) muteAll() {
	p.mu.Lock()
	p.all = true
	p.mu.Unlock()
	p.mute()
}

func (p *proxy) Addr() string { return p.ln.Addr().String() }

// cut closes every connection open through the proxy and returns how many
// it cut.
func (p *proxy) cut() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.open {
		c.Close()
	}
	n := len(p.open) / 2
	p.open, p.muted = nil, nil
	return n
}

// refusing closes new connections at once while on, as a route to the
// coordinator that is down would fail them.
func (p *proxy) refusing(on bool) {
	p.mu.Lock()
	p.refuse = on
	p.mu.Unlock()
}

// refusals is how many connections the proxy refused.
func (p *proxy) refusals() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refused
}

func (p *proxy) connections() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accepted
}

// relayVia runs a node's sub-coordinator for ranks that dials upstream.
func relayVia(t *testing.T, upstream, node string, ranks []int32, timeout time.Duration) *Server {
	t.Helper()
	r, err := coord.NewRelay(coord.RelayConfig{Token: token, Node: node, Ranks: ranks, HeartbeatTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := Serve(ln, r, Options{Tick: 20 * time.Millisecond, Upstream: upstream})
	t.Cleanup(func() { s.Close() })
	return s
}

// twoNodes runs a job of four ranks on two nodes, each with a relay whose
// heartbeat timeout is relayTimeout: node n0's relay reaches the
// coordinator through a proxy, node n1's directly. The coordinator takes
// relays back for 10s.
func twoNodes(t *testing.T, ctx context.Context, relayTimeout time.Duration) (*Coordinator, *proxy, []*Client) {
	t.Helper()
	co := startCoord(t, coord.Config{Size: 4, Relays: true, HeartbeatTimeout: 10 * time.Second})
	p := startProxy(t, co.Addr())
	relays := []*Server{
		relayVia(t, p.Addr(), "n0", []int32{0, 1}, relayTimeout),
		relayVia(t, co.Addr(), "n1", []int32{2, 3}, relayTimeout),
	}
	clients := dialAll(t, ctx, 4, func(r int) string { return relays[r/2].Addr() })
	return co, p, clients
}

// A relay whose connection to the coordinator is cut while its ranks wait
// in a collective, and again later, dials again and resumes: the job goes
// on and finishes with every answer right.
func TestRelayResumesAfterCut(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	co, p, clients := twoNodes(t, ctx, 10*time.Second)

	// Node n0's ranks contribute and wait; the link drops; then n1's
	// ranks complete the collective.
	gathered := make(chan error, 2)
	for r := range 2 {
		go func() {
			all, err := clients[r].AllGather(ctx, []byte(fmt.Sprintf("a%d", r)))
			if err == nil && (len(all) != 4 || string(all[3]) != "a3") {
				err = fmt.Errorf("gathered %q", all)
			}
			gathered <- err
		}()
	}
	waitFor(t, 30*time.Second, "the relay's connection through the proxy", func() bool { return p.connections() == 1 })
	if n := p.cut(); n != 1 {
		t.Fatalf("cut %d connections, want the relay's one", n)
	}
	each(t, clients[2:], func(r int, c *Client) error {
		all, err := c.AllGather(ctx, []byte(fmt.Sprintf("a%d", r+2)))
		if err == nil && string(all[0]) != "a0" {
			err = fmt.Errorf("gathered %q", all)
		}
		return err
	})
	for range 2 {
		if err := testwait.Recv(t, gathered, "node n0's all-gather"); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 30*time.Second, "the relay to dial again", func() bool { return p.connections() >= 2 })

	// Cut again while a lookup waits upstream for its key.
	found := make(chan error, 1)
	go func() {
		v, ok, err := clients[0].Lookup(ctx, "late", true)
		if err == nil && (!ok || string(v) != "value") {
			err = fmt.Errorf("lookup: %q %v", v, ok)
		}
		found <- err
	}()
	p.cut()
	if err := clients[3].Publish(ctx, "late", []byte("value")); err != nil {
		t.Fatal(err)
	}
	if err := testwait.Recv(t, found, "the lookup across the cut"); err != nil {
		t.Fatal(err)
	}
	exercise(t, ctx, clients)
	finishedWell(t, ctx, co)
	if n := p.connections(); n < 2 {
		t.Errorf("%d connections through the proxy: the relay never dialled again", n)
	}
}

// giveUp waits for each of clients' barriers to fail with the relay's
// abort for losing the coordinator to cause (the end of the connection or
// its silence) and not having it back within timeout, no sooner than
// least after the call.
func giveUp(t *testing.T, ctx context.Context, clients []*Client, cause string, timeout, least time.Duration) {
	t.Helper()
	start := time.Now()
	each(t, clients, func(r int, c *Client) error {
		err := c.Barrier(ctx)
		switch msg := fmt.Sprint(err); {
		case !errors.Is(err, group.ErrFailed):
			return fmt.Errorf("barrier after the coordinator was lost: %v", err)
		case !strings.Contains(msg, "lost the coordinator: "+cause) ||
			!strings.Contains(msg, fmt.Sprintf("not reconnected within %v", timeout)):
			return fmt.Errorf("the abort does not say the relay gave up on the coordinator (%s): %v", cause, err)
		case time.Since(start) < least:
			return fmt.Errorf("aborted after %v, before %v", time.Since(start), least)
		}
		return nil
	})
}

// A relay whose coordinator died gives up after its heartbeat timeout and
// aborts its node, saying so; it does not abort before. Whether it sees
// the end of the connection or, on a busy machine, the coordinator's
// silence first, it waits the same reconnect window and says the same.
// Behind a proxy, every new connection is accepted and then ends (as at a
// port that answers and hangs up): the window counts from the first loss,
// so the relay gives up though it connects again and again.
func TestRelayGivesUpOnDeadCoordinator(t *testing.T) {
	for _, viaProxy := range []bool{false, true} {
		t.Run(fmt.Sprintf("proxy=%v", viaProxy), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			const timeout = 2 * time.Second
			co := startCoord(t, coord.Config{Size: 2, Relays: true, HeartbeatTimeout: timeout})
			upstream := co.Addr()
			var p *proxy
			if viaProxy {
				p = startProxy(t, co.Addr())
				upstream = p.Addr()
			}
			relay := relayVia(t, upstream, "n0", []int32{0, 1}, timeout)
			clients := dialAll(t, ctx, 2, func(int) string { return relay.Addr() })
			co.Close()
			giveUp(t, ctx, clients, "", timeout, timeout)
			if p != nil {
				// Spaced by the back-off (10ms doubling to 2s), not a
				// tight loop of connections hung up on.
				p.mu.Lock()
				n := p.attempts
				p.mu.Unlock()
				if n > 30 {
					t.Errorf("the relay dialled %d times in the %v it waited", n, timeout)
				}
			}
		})
	}
}

// A relay whose coordinator falls silent (its messages lost on the way,
// the coordinator alive) gives the connection up after the heartbeat
// timeout and dials again, as after the connection's end: the coordinator
// takes the node back on the new one and the job finishes right.
func TestRelayResumesAfterSilence(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	co, p, clients := twoNodes(t, ctx, 3*time.Second)
	waitFor(t, 30*time.Second, "the relay's connection through the proxy", func() bool { return p.connections() == 1 })
	p.mute()
	// The all-gather needs the coordinator's Result, which the muted
	// connection loses: node n0 gets it on the connection it dials after
	// giving up the silent one.
	exercise(t, ctx, clients)
	if n := p.connections(); n < 2 {
		t.Fatalf("%d connections through the proxy: the relay never dialled again", n)
	}
	finishedWell(t, ctx, co)
}

// A relay whose coordinator hung for good gives the silent connection up,
// dials again, and, with no answer on the new one either, aborts its node
// once the reconnect window has passed since the silence was found, saying
// so: silence is counted the heartbeat timeout, then the window the same.
func TestRelayGivesUpOnHungCoordinator(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	const timeout = 2 * time.Second
	co := startCoord(t, coord.Config{Size: 2, Relays: true, HeartbeatTimeout: 10 * time.Second})
	p := startProxy(t, co.Addr())
	relay := relayVia(t, p.Addr(), "n0", []int32{0, 1}, timeout)
	clients := dialAll(t, ctx, 2, func(int) string { return relay.Addr() })
	p.muteAll()
	// The coordinator's last heartbeat may have come up to an interval
	// (timeout/3) before the mute.
	giveUp(t, ctx, clients, "coordinator silent for", timeout, 2*timeout-timeout/3)
	if n := p.connections(); n < 2 {
		t.Errorf("%d connections through the proxy: the relay gave up without dialling again", n)
	}
}

// A server that closes the connection without a word before the Welcome:
// the rank's error says who closed it, not just EOF.
func TestDialNamesSilentClose(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			// Read the Hello first: closing with it unread would reset the
			// connection instead of ending it.
			wire.ReadFrame(bufio.NewReader(c), wire.DefaultLimit)
			c.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	_, err = Dial(ctx, ClientConfig{Addr: ln.Addr().String(), Token: token, Rank: 0, Size: 1})
	if err == nil || !strings.Contains(err.Error(), ln.Addr().String()+" closed the connection without a reason") {
		t.Fatalf("dial of a server that hangs up: %v", err)
	}
}

// A rank that fails while its relay is cut from the coordinator: the
// relay aborts its node and dials until it reaches the coordinator again
// (within the reconnect window) to tell it why, so that every rank's abort
// names the failed rank and its cause, not a relay that did not come back
// (the relay was fine, and came back).
func TestRelayCutReportsLocalFailure(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	co, p, clients := twoNodes(t, ctx, 10*time.Second)
	waitFor(t, 30*time.Second, "the relay's connection through the proxy", func() bool { return p.connections() == 1 })
	p.refusing(true)
	p.cut()
	// A refused dial means the relay saw the cut and is dialling again.
	waitFor(t, 30*time.Second, "the relay to dial again after the cut", func() bool { return p.refusals() > 0 })
	n := p.refusals()
	clients[0].Close() // rank 0 dies without leaving
	// The relay keeps dialling to tell the coordinator, refused still
	// (its first try may be among those): it tries until one gets through.
	waitFor(t, 30*time.Second, "the relay to dial again after the failure", func() bool { return p.refusals() > n+1 })
	p.refusing(false)
	each(t, clients[2:], func(r int, c *Client) error {
		err := c.Barrier(ctx)
		switch msg := fmt.Sprint(err); {
		case !errors.Is(err, group.ErrFailed):
			return fmt.Errorf("barrier after rank 0 failed: %v", err)
		case !strings.Contains(msg, "rank 0 (node n0)") || !strings.Contains(msg, "connection closed before leave") ||
			strings.Contains(msg, "did not come back"):
			return fmt.Errorf("the abort does not name rank 0's failure: %v", err)
		}
		return nil
	})
	if err := co.Err(); err == nil || !strings.Contains(err.Error(), "rank 0 (node n0): connection closed before leave") {
		t.Errorf("the coordinator's reason: %v, want rank 0's failure", err)
	}
}
