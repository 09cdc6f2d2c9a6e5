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
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/coord"
	"github.com/ckpt/ckpt/internal/group"
	"github.com/ckpt/ckpt/internal/testwait"
	"github.com/ckpt/ckpt/internal/wire"
)

// proxy forwards TCP connections to target; cut drops the ones open, as a
// network failure between a relay and the coordinator would.
type proxy struct {
	ln       net.Listener
	target   string
	mu       sync.Mutex
	open     []net.Conn
	accepted int
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
			out, err := net.Dial("tcp", target)
			if err != nil {
				in.Close()
				continue
			}
			p.mu.Lock()
			p.open = append(p.open, in, out)
			p.accepted++
			p.mu.Unlock()
			go func() { io.Copy(out, in); out.Close() }()
			go func() { io.Copy(in, out); in.Close() }()
		}
	}()
	return p
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
	p.open = nil
	return n
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

// A relay whose connection to the coordinator is cut while its ranks wait
// in a collective, and again later, dials again and resumes: the job goes
// on and finishes with every answer right.
func TestRelayResumesAfterCut(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	co := startCoord(t, coord.Config{Size: 4, Relays: true, HeartbeatTimeout: 10 * time.Second})
	p := startProxy(t, co.Addr())
	relays := []*Server{
		relayVia(t, p.Addr(), "n0", []int32{0, 1}, 10*time.Second),
		relayVia(t, co.Addr(), "n1", []int32{2, 3}, 10*time.Second),
	}
	clients := dialAll(t, ctx, 4, func(r int) string { return relays[r/2].Addr() })

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
	select {
	case <-co.Done():
	case <-ctx.Done():
		t.Fatal("the coordinator did not see every rank leave")
	}
	if err := co.Err(); err != nil {
		t.Fatalf("job ended with %v", err)
	}
	if n := p.connections(); n < 2 {
		t.Errorf("%d connections through the proxy: the relay never dialled again", n)
	}
}

// A relay whose coordinator died gives up after its heartbeat timeout and
// aborts its node, saying so; it does not abort before.
func TestRelayGivesUpOnDeadCoordinator(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	const timeout = 2 * time.Second
	co := startCoord(t, coord.Config{Size: 2, Relays: true, HeartbeatTimeout: timeout})
	relay := relayVia(t, co.Addr(), "n0", []int32{0, 1}, timeout)
	clients := dialAll(t, ctx, 2, func(int) string { return relay.Addr() })
	start := time.Now()
	co.Close()
	each(t, clients, func(r int, c *Client) error {
		err := c.Barrier(ctx)
		switch {
		case !errors.Is(err, group.ErrFailed):
			return fmt.Errorf("barrier after the coordinator died: %v", err)
		case !strings.Contains(err.Error(), "lost the coordinator") || !strings.Contains(err.Error(), "not reconnected within 2s"):
			// The relay may see the coordinator's silence before the end
			// of its connection (a busy machine reads the EOF late): it
			// gives up then too, saying so.
			if !strings.Contains(err.Error(), "coordinator silent for") {
				return fmt.Errorf("the abort does not say the relay gave up on the coordinator: %v", err)
			}
		}
		// Silence counts from the coordinator's last heartbeat, up to one
		// heartbeat interval (timeout/3) before it closed.
		if time.Since(start) < timeout-timeout/3 {
			return fmt.Errorf("aborted after %v, before the heartbeat timeout of %v", time.Since(start), timeout)
		}
		return nil
	})
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
