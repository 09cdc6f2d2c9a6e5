package hostile_test

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/coord"
	"github.com/ckpt/ckpt/internal/coordnet"
	"github.com/ckpt/ckpt/internal/hostile"
	"github.com/ckpt/ckpt/internal/peer"
	"github.com/ckpt/ckpt/internal/stage"
	"github.com/ckpt/ckpt/internal/storage/mem"
)

const (
	token    = "the-job-token"
	previous = "the-previous-launch-token"
	// silent is every listener's timeout for a client that completes no
	// frame; prompt bounds the drop of one whose frames tell it apart.
	// Seconds apart, so that a listener that waits for its timeout where
	// it could have judged at once fails, whatever the machine's load.
	silent = 8 * time.Second
	prompt = 4 * time.Second
	// coordSilent is the coordinator's and a relay's bound while the job
	// joins: a connection may stay silent before its Hello for two
	// heartbeat timeouts then (a busy server may not have read it).
	coordSilent = 2 * silent
)

func coordHello(tok string, inc uint64, rank int32) []byte {
	return hostile.CoordHello(tok, inc, "n0", rank)
}

func stageHello(tok string) []byte { return hostile.StageHello(tok, "node0") }

// listeners are the job's four kinds of listener, started for real in
// this process, each with what a legitimate client does to it.
type listeners struct {
	targets []hostile.Target
	// serve checks, after the attacks, that each still serves the job.
	serve []func(ctx context.Context, t *testing.T)
	conns func() int // the coordinators' and relay's live connections
}

func start(t *testing.T, ctx context.Context) *listeners {
	l := &listeners{}

	// The coordinator of a job of two ranks in its second incarnation;
	// rank 0 joins before the attacks, so that its Hello is one to replay.
	joined := make(chan struct{}, 1)
	co, err := coordnet.StartCoordinator("127.0.0.1:0", coord.Config{Size: 2, Token: token, Incarnation: 1,
		HeartbeatTimeout: silent, HeartbeatInterval: time.Second},
		coordnet.Options{Tick: 50 * time.Millisecond, OnNotice: func(n coord.Notice) {
			if n.Kind == coord.NoticeJoined {
				select {
				case joined <- struct{}{}:
				default:
				}
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { co.Close() })
	rank0 := make(chan *coordnet.Client, 1)
	go func() {
		c, err := coordnet.Dial(ctx, coordnet.ClientConfig{Addr: co.Addr(), Token: token, Incarnation: 1, Rank: 0, Size: 2})
		if err != nil {
			t.Errorf("rank 0: %v", err)
		}
		rank0 <- c
	}()
	select {
	case <-joined:
	case <-ctx.Done():
		t.Fatal("rank 0 never joined")
	}
	l.targets = append(l.targets, hostile.Target{Name: "coordinator", Addr: co.Addr(),
		Hello:   func(tok string) []byte { return coordHello(tok, 1, 1) },
		Replays: [][]byte{coordHello(token, 0, 1), coordHello(token, 1, 0)}, // the previous incarnation; a rank that joined
		Prompt:  prompt, Silent: coordSilent})
	l.serve = append(l.serve, func(ctx context.Context, t *testing.T) {
		c1, err := coordnet.Dial(ctx, coordnet.ClientConfig{Addr: co.Addr(), Token: token, Incarnation: 1, Rank: 1, Size: 2})
		if err != nil {
			t.Fatalf("coordinator: rank 1 after the attacks: %v", err)
		}
		defer c1.Close()
		c0 := <-rank0
		if c0 == nil {
			t.Fatal("coordinator: rank 0 was not welcomed")
		}
		defer c0.Close()
		var wg sync.WaitGroup
		for _, c := range []*coordnet.Client{c0, c1} {
			wg.Go(func() {
				if err := c.Barrier(ctx); err != nil {
					t.Errorf("coordinator: barrier after the attacks: %v", err)
				}
			})
		}
		wg.Wait()
	})

	// A node's relay, upstream of a coordinator of its own.
	up, err := coordnet.StartCoordinator("127.0.0.1:0", coord.Config{Size: 1, Token: token, Incarnation: 1,
		HeartbeatTimeout: silent, HeartbeatInterval: time.Second}, coordnet.Options{Tick: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { up.Close() })
	relay, err := coord.NewRelay(coord.RelayConfig{Token: token, Incarnation: 1, Node: "n0", Ranks: []int32{0},
		HeartbeatTimeout: silent, HeartbeatInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rs := coordnet.Serve(ln, relay, coordnet.Options{Tick: 50 * time.Millisecond, Upstream: up.Addr()})
	t.Cleanup(func() { rs.Close() })
	l.targets = append(l.targets, hostile.Target{Name: "relay", Addr: rs.Addr(),
		Hello:   func(tok string) []byte { return coordHello(tok, 1, 0) },
		Replays: [][]byte{coordHello(token, 0, 0)},
		Prompt:  prompt, Silent: coordSilent})
	l.serve = append(l.serve, func(ctx context.Context, t *testing.T) {
		c, err := coordnet.Dial(ctx, coordnet.ClientConfig{Addr: rs.Addr(), Token: token, Incarnation: 1, Rank: 0, Size: 1})
		if err != nil {
			t.Fatalf("relay: rank 0 after the attacks: %v", err)
		}
		defer c.Close()
		if err := c.Barrier(ctx); err != nil {
			t.Errorf("relay: barrier after the attacks: %v", err)
		}
	})
	l.conns = func() int { return co.Status().Conns + up.Status().Conns }

	// Two ranks' peer nodes; rank 0's is attacked.
	res := peer.NewMapResolver()
	var nodes [2]*peer.Node
	for r := range nodes {
		nd, err := peer.Listen(r, 2, token, res, peer.WithHandshakeTimeout(silent), peer.WithLogger(quiet()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nd.Close() })
		res.Publish(r, nd.Addr())
		nodes[r] = nd
	}
	l.targets = append(l.targets, hostile.Target{Name: "peer", Addr: nodes[0].Addr(),
		Hello: func(tok string) []byte { return hostile.PeerHello(tok, 1, 0) },
		// The previous launch's; one of this job's for another rank.
		Replays: [][]byte{hostile.PeerHello(previous, 1, 0), hostile.PeerHello(token, 0, 1)},
		Prompt:  prompt, Silent: silent})
	l.serve = append(l.serve, func(ctx context.Context, t *testing.T) {
		if err := nodes[1].Send(ctx, 0, 7, []byte("after the attacks")); err != nil {
			t.Fatalf("peer: send after the attacks: %v", err)
		}
		if got, err := nodes[0].Recv(ctx, 1, 7, nil); err != nil || string(got) != "after the attacks" {
			t.Errorf("peer: recv after the attacks: %q, %v", got, err)
		}
	})

	// A staging server.
	srv, err := stage.NewServer(stage.Config{Shared: mem.New(), Token: token, Name: "stage0", HelloTimeout: silent})
	if err != nil {
		t.Fatal(err)
	}
	sln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(sln)
	t.Cleanup(func() { srv.Close() })
	l.targets = append(l.targets, hostile.Target{Name: "stage", Addr: sln.Addr().String(),
		Hello:   stageHello,
		Replays: [][]byte{stageHello(previous), hostile.StageData(1)}, // another job's; a frame due after a Hello
		Prompt:  prompt, Silent: silent})
	l.serve = append(l.serve, func(ctx context.Context, t *testing.T) {
		nc, err := net.Dial("tcp", sln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		nc.SetDeadline(time.Now().Add(30 * time.Second))
		if _, err := nc.Write(stageHello(token)); err != nil {
			t.Fatal(err)
		}
		m, err := stage.ReadMsg(bufio.NewReader(nc))
		if w, ok := m.(*stage.Welcome); err != nil || !ok || w.Server != "stage0" {
			t.Errorf("stage: Hello after the attacks: %v, %v; want Welcome", m, err)
		}
	})
	return l
}

// Every attack against every listener: each drops the attacker within its
// bound, none crashes, every goroutine and connection the attacks cost is
// released, and each still serves the job afterwards.
func TestEveryAttackOnEveryListener(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	l := start(t, ctx)
	goroutines, conns := settle(), l.conns()

	var wg sync.WaitGroup
	verdicts := make([][]hostile.Verdict, len(l.targets))
	for i, tg := range l.targets {
		wg.Go(func() { verdicts[i] = hostile.Run(ctx, tg, hostile.Attacks()) })
	}
	wg.Wait()
	for _, vs := range verdicts {
		if len(vs) != len(hostile.Attacks()) {
			t.Fatalf("%d verdicts, want one per attack", len(vs))
		}
		for _, v := range vs {
			if v.Err != nil {
				t.Error(v)
			} else {
				t.Log(v)
			}
		}
	}

	waitFor(t, "the coordinators to forget the attackers' connections", func() bool { return l.conns() <= conns })
	waitFor(t, "the goroutines of the attacks to end", func() bool { return runtime.NumGoroutine() <= goroutines })
	for _, serve := range l.serve {
		serve(ctx, t)
	}
}

// A listener that accepts anything and keeps every connection open is
// what the attacks exist to catch: each of them fails against it (but the
// replay of nothing, which fails for want of a frame).
func TestAttacksFailAgainstAListenerThatHoldsEverything(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var held []net.Conn
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, nc)
			mu.Unlock()
			go func() { _, _ = bufio.NewReader(nc).Discard(1 << 30) }()
		}
	}()
	defer func() {
		ln.Close()
		mu.Lock()
		for _, nc := range held {
			nc.Close()
		}
		mu.Unlock()
	}()
	tg := hostile.Target{Name: "sink", Addr: ln.Addr().String(),
		Hello:  func(tok string) []byte { return coordHello(tok, 0, 0) },
		Prompt: 200 * time.Millisecond, Silent: 200 * time.Millisecond}
	for _, v := range hostile.Run(t.Context(), tg, hostile.Attacks()) {
		if v.Err == nil {
			t.Errorf("%s held against a listener that drops nothing", v.Attack)
		} else if v.Attack != "replay" && !strings.Contains(v.Err.Error(), "still open") {
			t.Errorf("%v: want a connection still open", v)
		}
	}
}

// settle waits for the goroutine count to stop falling and returns it.
func settle() int {
	n := runtime.NumGoroutine()
	for range 50 {
		time.Sleep(20 * time.Millisecond)
		m := runtime.NumGoroutine()
		if m == n {
			return n
		}
		n = m
	}
	return n
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up after 30s waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
