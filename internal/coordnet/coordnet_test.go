package coordnet

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
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

const token = "secret"

func startCoord(t *testing.T, cfg coord.Config) *Coordinator {
	t.Helper()
	if cfg.Token == "" {
		cfg.Token = token
	}
	c, err := StartCoordinator("127.0.0.1:0", cfg, Options{Tick: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// dialAll connects ranks 0..size-1 to addrs[r % len(addrs)] concurrently.
func dialAll(t *testing.T, ctx context.Context, size int, addr func(r int) string) []*Client {
	t.Helper()
	clients := make([]*Client, size)
	errs := make([]error, size)
	var wg sync.WaitGroup
	for r := range size {
		wg.Go(func() {
			clients[r], errs[r] = Dial(ctx, ClientConfig{Addr: addr(r), Token: token, Node: fmt.Sprintf("n%d", r/2),
				Rank: r, Size: size, HeartbeatInterval: 100 * time.Millisecond})
		})
	}
	testwait.Group(t, &wg, "the dials")
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	t.Cleanup(func() {
		for _, c := range clients {
			c.Close()
		}
	})
	return clients
}

// each runs fn on every client concurrently and fails on any error.
func each(t *testing.T, clients []*Client, fn func(r int, c *Client) error) {
	t.Helper()
	errs := make([]error, len(clients))
	var wg sync.WaitGroup
	for r, c := range clients {
		wg.Go(func() { errs[r] = fn(r, c) })
	}
	testwait.Group(t, &wg, "the clients")
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
}

// finishedWell waits for co's job to end, every rank having left, and
// fails t if it did not, or ended with an error.
func finishedWell(t *testing.T, ctx context.Context, co *Coordinator) {
	t.Helper()
	select {
	case <-co.Done():
	case <-ctx.Done():
		t.Fatal("the coordinator did not see every rank leave")
	}
	if err := co.Err(); err != nil {
		t.Fatalf("job ended with %v", err)
	}
}

// exercise runs every kind of request through a job and checks the
// answers, then has every rank leave.
func exercise(t *testing.T, ctx context.Context, clients []*Client) {
	t.Helper()
	size := len(clients)
	each(t, clients, func(r int, c *Client) error {
		for round := range 3 {
			all, err := c.AllGather(ctx, []byte(fmt.Sprintf("r%d-%d", r, round)))
			if err != nil {
				return err
			}
			for i, d := range all {
				if want := fmt.Sprintf("r%d-%d", i, round); string(d) != want {
					return fmt.Errorf("round %d: entry %d = %q, want %q", round, i, d, want)
				}
			}
			if err := c.Barrier(ctx); err != nil {
				return err
			}
		}
		ans, err := c.Decide(ctx, []byte{byte(r)})
		if err != nil || !bytes.Equal(ans, []byte{0}) {
			return fmt.Errorf("decide: %q, %v; want rank 0's contribution", ans, err)
		}
		// Peer discovery: each rank publishes its address and waits for
		// its neighbour's, published or not yet.
		if err := c.Publish(ctx, fmt.Sprintf("addr/%d", r), []byte(fmt.Sprintf("host:%d", 1000+r))); err != nil {
			return err
		}
		next := (r + 1) % size
		v, ok, err := c.Lookup(ctx, fmt.Sprintf("addr/%d", next), true)
		if err != nil || !ok || string(v) != fmt.Sprintf("host:%d", 1000+next) {
			return fmt.Errorf("lookup of rank %d: %q %v %v", next, v, ok, err)
		}
		if _, ok, err := c.Lookup(ctx, "nothing", false); ok || err != nil {
			return fmt.Errorf("lookup of an absent key without wait: %v %v", ok, err)
		}
		committed, err := c.Commit(ctx, "ckpt-7", true)
		if err != nil || !committed {
			return fmt.Errorf("commit: %v %v", committed, err)
		}
		return nil
	})
	each(t, clients, func(r int, c *Client) error { return c.Leave() })
}

func TestFlatJob(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	co := startCoord(t, coord.Config{Size: 8})
	clients := dialAll(t, ctx, 8, func(int) string { return co.Addr() })
	exercise(t, ctx, clients)
	finishedWell(t, ctx, co)
	if st := co.Status(); st.Committed != "ckpt-7" || st.Phase != coord.Finished {
		t.Errorf("status %+v", st)
	}
	if v, ok := co.Value("addr/3"); !ok || string(v) != "host:1003" {
		t.Errorf("Value(addr/3) = %q %v", v, ok)
	}
}

// startRelay runs a node's sub-coordinator for ranks, upstream of co.
func startRelay(t *testing.T, co *Coordinator, node string, ranks []int32) *Server {
	t.Helper()
	return relayVia(t, co.Addr(), node, ranks, 0)
}

func TestTreeJob(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	co := startCoord(t, coord.Config{Size: 8})
	relays := []*Server{
		startRelay(t, co, "n0", []int32{0, 1, 2, 3}),
		startRelay(t, co, "n1", []int32{4, 5, 6, 7}),
	}
	clients := dialAll(t, ctx, 8, func(r int) string { return relays[r/4].Addr() })
	exercise(t, ctx, clients)
	finishedWell(t, ctx, co)
	if st := co.Status(); st.Conns > 2 {
		t.Errorf("the coordinator held %d connections; the relays should be the only ones", st.Conns)
	}
	// A relay whose ranks all left closes its connection to the
	// coordinator and does not dial it again (it did: a third connection
	// appeared a moment after the job, nobody using it). Its first dial
	// would come within milliseconds; half a second is plenty to see it.
	before := co.Status().Conns
	for deadline := time.Now().Add(500 * time.Millisecond); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if st := co.Status(); st.Conns > before {
			t.Fatalf("after the job the coordinator went from %d to %d connections: a relay dialled it again", before, st.Conns)
		}
	}
}

func TestWrongTokenRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	co := startCoord(t, coord.Config{Size: 2})
	_, err := Dial(ctx, ClientConfig{Addr: co.Addr(), Token: "guess", Rank: 0, Size: 2})
	if !errors.Is(err, ErrRefused) {
		t.Fatalf("wrong token: %v, want ErrRefused", err)
	}
	_, err = Dial(ctx, ClientConfig{Addr: co.Addr(), Token: token, Incarnation: 5, Rank: 0, Size: 2})
	if !errors.Is(err, ErrRefused) {
		t.Fatalf("wrong incarnation: %v, want ErrRefused", err)
	}
	// The job still runs for the right ranks.
	clients := dialAll(t, ctx, 2, func(int) string { return co.Addr() })
	each(t, clients, func(r int, c *Client) error { return c.Barrier(ctx) })
}

func TestCrashAborts(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	co := startCoord(t, coord.Config{Size: 3})
	clients := dialAll(t, ctx, 3, func(int) string { return co.Addr() })
	clients[2].Close() // a crash: the connection drops without Leave
	for r := range 2 {
		_, err := clients[r].AllGather(ctx, []byte("x"))
		if !errors.Is(err, group.ErrFailed) || !strings.Contains(err.Error(), "2") {
			t.Errorf("rank %d: %v, want a failure naming rank 2", r, err)
		}
	}
	testwait.Recv(t, co.Done(), "the coordinator's end")
	if err := co.Err(); err == nil || !strings.Contains(err.Error(), "2") {
		t.Errorf("coordinator: %v, want an abort naming rank 2", err)
	}
}

// rawHello joins rank with a bare connection that then says nothing.
func rawHello(t *testing.T, addr string, rank, inc int) net.Conn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	if err := wire.WriteFrame(nc, &wire.Hello{Token: token, Incarnation: uint64(inc), Node: "hung", Ranks: []int32{int32(rank)}}); err != nil {
		t.Fatal(err)
	}
	return nc
}

func TestHungRankTimesOut(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	co := startCoord(t, coord.Config{Size: 2, HeartbeatTimeout: 400 * time.Millisecond, HeartbeatInterval: 100 * time.Millisecond})
	rawHello(t, co.Addr(), 1, 0) // joins, then never heartbeats
	c, err := Dial(ctx, ClientConfig{Addr: co.Addr(), Token: token, Rank: 0, Size: 2, HeartbeatInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	err = c.Barrier(ctx)
	if !errors.Is(err, group.ErrFailed) || !strings.Contains(err.Error(), "1") {
		t.Fatalf("barrier with a hung rank: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the hung rank was detected after %v", d)
	}
}

// Both listeners, the coordinator's and a node's sub-coordinator's, drop a
// connection that sends a malformed frame, and go on serving.
func TestMalformedInput(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	co := startCoord(t, coord.Config{Size: 1})
	relay := startRelay(t, co, "n0", []int32{0})
	for _, addr := range []string{co.Addr(), relay.Addr()} {
		malformed(t, addr)
	}
	// The coordinator, through the relay, still serves a well-behaved rank.
	c, err := Dial(ctx, ClientConfig{Addr: relay.Addr(), Token: token, Rank: 0, Size: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Barrier(ctx); err != nil {
		t.Fatal(err)
	}
	c.Leave()
}

// malformed sends malformed frames to the listener at addr, each on a
// connection of its own, and checks that each connection is closed.
func malformed(t *testing.T, addr string) {
	t.Helper()
	for _, frame := range [][]byte{
		append(binary.LittleEndian.AppendUint32(nil, 1<<30), byte(wire.TypeHello)), // oversized length
		{3, 0, 0, 0, 99, 1, 2, 3},                              // unknown type
		{1, 0, 0, 0, byte(wire.TypeHello), 0xff},               // a payload that does not decode
		append(binary.LittleEndian.AppendUint32(nil, 3), 1, 7), // the stream ends inside a frame
	} {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		nc.Write(frame)
		if len(frame) == 6 && frame[4] == 1 {
			nc.(*net.TCPConn).CloseWrite()
		}
		nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		buf := make([]byte, 64)
		for {
			if _, err := nc.Read(buf); err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					t.Errorf("%s: frame %x: the listener kept the connection open", addr, frame)
				}
				break
			}
		}
		nc.Close()
	}
}

func TestCoordinatorLost(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	co := startCoord(t, coord.Config{Size: 2})
	clients := dialAll(t, ctx, 2, func(int) string { return co.Addr() })
	co.Close()
	for r, c := range clients {
		if err := c.Barrier(ctx); !errors.Is(err, group.ErrFailed) {
			t.Errorf("rank %d after the coordinator died: %v", r, err)
		}
	}
}

func TestDialGivesUp(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	_, err = Dial(ctx, ClientConfig{Addr: addr, Token: token, Rank: 0, Size: 1})
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), addr) {
		t.Errorf("dial with nobody listening: %v", err)
	}
}
