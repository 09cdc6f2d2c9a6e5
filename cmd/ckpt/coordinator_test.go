package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/coordnet"
	"github.com/ckpt/ckpt/internal/wire"
)

// coordinatorRun is `ckpt coordinator` running in this process.
type coordinatorRun struct {
	addr, token string
	inc         uint64
	code        chan int
	stderr      *syncWriter
	errb        *bytes.Buffer
}

// startCoordinator runs `ckpt coordinator` with args and reads the
// environment it prints for the ranks.
func startCoordinator(t *testing.T, args ...string) *coordinatorRun {
	t.Helper()
	pr, pw := io.Pipe()
	var errb bytes.Buffer
	c := &coordinatorRun{code: make(chan int, 1), errb: &errb, stderr: &syncWriter{b: &errb}}
	go func() {
		c.code <- run(append([]string{"coordinator", "--listen", "127.0.0.1:0"}, args...), pw, c.stderr)
		pw.Close()
	}()
	sc := bufio.NewScanner(pr)
	env := map[string]string{}
	for len(env) < 4 && sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), "=")
		env[k] = v
	}
	go io.Copy(io.Discard, pr) // nothing more is expected; never block the coordinator
	if env["CKPT_COORD"] == "" || env["CKPT_TOKEN"] == "" {
		t.Fatalf("coordinator printed %v (stderr %q)", env, c.errText())
	}
	c.addr, c.token = env["CKPT_COORD"], env["CKPT_TOKEN"]
	c.inc, _ = strconv.ParseUint(env["CKPT_INCARNATION"], 10, 64)
	return c
}

func (c *coordinatorRun) errText() string {
	c.stderr.mu.Lock()
	defer c.stderr.mu.Unlock()
	return c.errb.String()
}

func (c *coordinatorRun) dial(ctx context.Context, rank, size int) (*coordnet.Client, error) {
	return coordnet.Dial(ctx, coordnet.ClientConfig{Addr: c.addr, Token: c.token, Incarnation: c.inc,
		Node: "n" + strconv.Itoa(rank), Rank: rank, Size: size, HeartbeatInterval: 100 * time.Millisecond})
}

// exit waits for the coordinator's exit status, failing after a bound.
func (c *coordinatorRun) exit(t *testing.T) int {
	t.Helper()
	select {
	case code := <-c.code:
		return code
	case <-time.After(60 * time.Second):
		t.Fatalf("ckpt coordinator did not exit within 60s; stderr %q", c.errText())
		return -1
	}
}

// A coordinator whose ranks do not all join within --join-timeout exits 1
// with a reason naming the missing ranks, and the rank waiting learns it.
func TestCoordinatorJoinTimeout(t *testing.T) {
	c := startCoordinator(t, "--ranks", "3", "--join-timeout", "1s")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, err := c.dial(ctx, 1, 3)
	if !errors.Is(err, coordnet.ErrAborted) || !strings.Contains(err.Error(), "ranks [0 2] did not join") {
		t.Errorf("rank 1: %v, want an abort naming ranks [0 2]", err)
	}
	if code := c.exit(t); code != exitError {
		t.Errorf("exit %d, want %d", code, exitError)
	}
	if got := c.errText(); !strings.Contains(got, "ckpt: the job failed: ranks [0 2] did not join within the join timeout of 1s") {
		t.Errorf("stderr %q, want the reason naming ranks [0 2]", got)
	}
	checkBadInput(t, []string{"--join-timeout", "-1s"}, "coordinator", "--ranks", "2", "--join-timeout", "-1s")
}

// A coordinator whose job fails after it started (a rank drops out without
// leaving) exits 1 with the reason.
func TestCoordinatorJobFailsWithReason(t *testing.T) {
	c := startCoordinator(t, "--ranks", "2")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	clients := make(chan *coordnet.Client, 2)
	errs := make(chan error, 2)
	for r := range 2 {
		go func() {
			cl, err := c.dial(ctx, r, 2)
			if err != nil {
				errs <- err
				return
			}
			clients <- cl
		}()
	}
	var got []*coordnet.Client
	for len(got) < 2 {
		select {
		case cl := <-clients:
			got = append(got, cl)
		case err := <-errs:
			t.Fatalf("join: %v", err)
		case <-ctx.Done():
			t.Fatal("ranks not welcomed within 60s")
		}
	}
	bad, good := got[0], got[1]
	bad.Close() // dies without leaving
	if err := good.Barrier(ctx); !errors.Is(err, coordnet.ErrAborted) {
		t.Errorf("the surviving rank's barrier: %v, want the job aborted", err)
	}
	if code := c.exit(t); code != exitError {
		t.Errorf("exit %d, want %d", code, exitError)
	}
	want := "rank " + strconv.Itoa(bad.Rank()) + " (node n" + strconv.Itoa(bad.Rank()) + "): connection closed before leave"
	if got := c.errText(); !strings.Contains(got, "ckpt: the job failed: "+want) {
		t.Errorf("stderr %q, want the reason %q", got, want)
	}
}

// Ranks started several heartbeat timeouts apart (srun on a busy machine)
// make a job: the first waits for Welcome unbothered.
func TestCoordinatorLateRank(t *testing.T) {
	c := startCoordinator(t, "--ranks", "2", "--heartbeat-timeout", "0.5s")
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	type dialed struct {
		c   *coordnet.Client
		err error
	}
	first := make(chan dialed, 1)
	go func() {
		cl, err := c.dial(ctx, 0, 2)
		first <- dialed{cl, err}
	}()
	// The gap between the ranks' starts is what is tested: four heartbeat
	// timeouts, after which rank 0 used to be dead of a Heartbeat.
	time.Sleep(2 * time.Second)
	late, err := c.dial(ctx, 1, 2)
	if err != nil {
		t.Fatalf("late rank 1: %v", err)
	}
	var d dialed
	select {
	case d = <-first:
	case <-ctx.Done():
		t.Fatal("rank 0 not welcomed within the test's bound")
	}
	if d.err != nil {
		t.Fatalf("rank 0: %v", d.err)
	}
	for _, cl := range []*coordnet.Client{d.c, late} {
		if err := cl.Leave(); err != nil {
			t.Errorf("leave: %v", err)
		}
	}
	if code := c.exit(t); code != exitOK {
		t.Errorf("exit %d, want 0; stderr %q", code, c.errText())
	}
}

// A rank that joins and drops out before the job started is reported on
// stderr (the coordinator waits for a replacement, not in silence), and a
// replacement completes the job.
func TestCoordinatorReportsRankDroppedBeforeStart(t *testing.T) {
	c := startCoordinator(t, "--ranks", "2")
	nc, err := net.Dial("tcp", c.addr)
	if err != nil {
		t.Fatal(err)
	}
	// Hello, then the end of the stream: the coordinator reads them in
	// this order, so rank 1 joins and then drops.
	if err := wire.WriteFrame(nc, &wire.Hello{Token: c.token, Incarnation: c.inc, Node: "gone", Ranks: []int32{1}}); err != nil {
		t.Fatal(err)
	}
	nc.Close()
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(c.errText(), "ckpt coordinator: ranks [1] left before the job started") {
		if time.Now().After(deadline) {
			t.Fatalf("no report of the dropped rank within 60s; stderr %q", c.errText())
		}
		time.Sleep(10 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	clients := make([]*coordnet.Client, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for r := range 2 {
		wg.Go(func() { clients[r], errs[r] = c.dial(ctx, r, 2) })
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	for _, cl := range clients {
		cl.Leave()
	}
	if code := c.exit(t); code != exitOK {
		t.Errorf("exit %d; stderr %q", code, c.errText())
	}
}
