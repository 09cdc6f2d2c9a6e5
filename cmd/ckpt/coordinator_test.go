package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/coordnet"
	"github.com/ckpt/ckpt/internal/jobenv"
	"github.com/ckpt/ckpt/internal/jobtls"
	"github.com/ckpt/ckpt/internal/wire"
)

// coordinatorRun is `ckpt coordinator` running in this process.
type coordinatorRun struct {
	env         map[string]string // what it printed for the ranks
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
	lines := 4
	if slices.Contains(args, "--tls") {
		lines += 3 // the job's CA, certificate and key
	}
	for len(env) < lines && sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), "=")
		env[k] = v
	}
	go io.Copy(io.Discard, pr) // nothing more is expected; never block the coordinator
	if env["CKPT_COORD"] == "" || env["CKPT_TOKEN"] == "" {
		t.Fatalf("coordinator printed %v (stderr %q)", env, c.errText())
	}
	c.env, c.addr, c.token = env, env["CKPT_COORD"], env["CKPT_TOKEN"]
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

// ckpt coordinator listens on loopback unless told otherwise (a
// job's listeners on one machine bind loopback), on the port it always
// had, and its help says why and how to reach it from other machines.
func TestCoordinatorListensOnLoopback(t *testing.T) {
	cmd := newCoordinatorCmd()
	listen := cmd.Flags().Lookup("listen")
	if listen == nil {
		t.Fatal("ckpt coordinator has no --listen")
	}
	host, port, err := net.SplitHostPort(listen.DefValue)
	if err != nil {
		t.Fatalf("--listen's default %q: %v", listen.DefValue, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() || port != "7077" {
		t.Errorf("--listen's default %q: want a loopback address, port 7077", listen.DefValue)
	}
	// Bound as it is given (the port made free for the test).
	c := startCoordinator(t, "--ranks", "1", "--listen", net.JoinHostPort(host, "0"))
	if h, _, _ := net.SplitHostPort(c.addr); h != host {
		t.Errorf("the ranks are told %s, want the loopback address it listens on", c.addr)
	}
	for _, say := range []string{"loopback", "--listen 0.0.0.0:7077", "--tls"} {
		if !strings.Contains(listen.Usage+cmd.Long, say) {
			t.Errorf("the help does not say %q:\n%s\n%s", say, listen.Usage, cmd.Long)
		}
	}
	c.finish(t)
}

// finish runs the job of one rank to its end, which the coordinator exits
// 0 for.
func (c *coordinatorRun) finish(t *testing.T, tls ...*tls.Config) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cfg := coordnet.ClientConfig{Addr: c.addr, Token: c.token, Incarnation: c.inc, Node: "n0", Rank: 0, Size: 1}
	if len(tls) > 0 {
		cfg.TLS = tls[0]
	}
	cl, err := coordnet.Dial(ctx, cfg)
	if err != nil {
		t.Fatalf("the job's rank: %v", err)
	}
	if err := cl.Leave(); err != nil {
		t.Fatal(err)
	}
	if code := c.exit(t); code != 0 {
		t.Fatalf("exit %d, want 0; stderr %q", code, c.errText())
	}
}

// ckpt coordinator --tls speaks mutual TLS with a key pair it makes, which
// it prints for the ranks under the variables ckpt run --tls sets: a plain
// client is refused, a rank with the pair joins and finishes the job, and
// the pair, private to its user, is gone when the coordinator is.
func TestCoordinatorTLS(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	c := startCoordinator(t, "--ranks", "1", "--tls")
	files := jobtls.Files{CA: c.env[jobenv.VarTLSCA], Cert: c.env[jobenv.VarTLSCert], Key: c.env[jobenv.VarTLSKey]}
	tc, err := jobtls.Load(files)
	if err != nil || tc == nil {
		t.Fatalf("the printed TLS files %+v: %v", files, err)
	}
	dir := filepath.Dir(files.Key)
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the pair's directory %s: %v, %v; want mode 0700", dir, fi.Mode(), err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if cl, err := c.dial(ctx, 0, 1); err == nil {
		cl.Close()
		t.Fatal("a plain client joined a --tls coordinator")
	} else if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a plain client was left waiting, not refused: %v", err)
	}
	c.finish(t, tc.Client)
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the pair's directory outlived the coordinator: %v", err)
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
