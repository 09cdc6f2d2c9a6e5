package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/ckpt/ckpt/internal/coord"
	"github.com/ckpt/ckpt/internal/coordnet"
)

// CoordConfig is what `ckpt bench coord` measures: Clients ranks over
// loopback sockets join a coordinator and complete one checkpoint round,
// flat (every rank connects to the coordinator) and as a tree (ranks
// connect to their node's sub-coordinator, PerNode ranks per node), against
// a bare TCP accept-all-then-barrier of the same clients.
type CoordConfig struct {
	Clients, PerNode int
	// Worker starts this program's worker process with args (the clients,
	// or the sub-coordinators): the open files of 16K sockets on each side
	// do not fit one process.
	Worker   func(args ...string) *exec.Cmd
	Progress func(step string)
}

// CoordResult holds durations in seconds.
type CoordResult struct {
	Raw, Flat, Tree float64
}

const benchToken = "bench"

// benchHeartbeat is the heartbeat timeout of the benchmark's coordinators
// and sub-coordinators. It measures how fast ranks join and complete a
// round, not how fast a failure is seen: beside a CPU hog, on a machine
// with a load of 15 on 2 cores, a relay process holding 16K connections
// went unscheduled long enough for the coordinator to call it silent for
// 30s, the default, and the benchmark failed.
const benchHeartbeat = 2 * time.Minute

// RunCoord runs the three measurements.
func RunCoord(ctx context.Context, cfg CoordConfig) (CoordResult, error) {
	var r CoordResult
	if cfg.Progress == nil {
		cfg.Progress = func(string) {}
	}
	n := fmt.Sprint(cfg.Clients)
	cfg.Progress("raw TCP: accept every client, then one barrier")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return r, err
	}
	rawDone := make(chan error, 1)
	go func() { rawDone <- rawBarrierServer(ln, cfg.Clients) }()
	r.Raw, err = runClients(ctx, cfg, "raw", n, ln.Addr().String())
	ln.Close()
	if err == nil {
		err = <-rawDone
	}
	if err != nil {
		return r, fmt.Errorf("raw: %w", err)
	}

	cfg.Progress("flat: every rank joins the coordinator, one checkpoint round")
	co, err := coordnet.StartCoordinator("127.0.0.1:0", coord.Config{Size: cfg.Clients, Token: benchToken, HeartbeatTimeout: benchHeartbeat}, coordnet.Options{})
	if err != nil {
		return r, err
	}
	r.Flat, err = runClients(ctx, cfg, "flat", n, co.Addr())
	if err == nil {
		err = waitDone(ctx, co)
	}
	co.Close()
	if err != nil {
		return r, fmt.Errorf("flat: %w", err)
	}

	cfg.Progress(fmt.Sprintf("tree: %d ranks per node's sub-coordinator, one checkpoint round", cfg.PerNode))
	// As `ckpt run --tree` configures it: a relay cut off may come back.
	co, err = coordnet.StartCoordinator("127.0.0.1:0", coord.Config{Size: cfg.Clients, Token: benchToken, HeartbeatTimeout: benchHeartbeat, Relays: true}, coordnet.Options{})
	if err != nil {
		return r, err
	}
	defer co.Close()
	relays := cfg.Worker("relays", n, fmt.Sprint(cfg.PerNode), co.Addr())
	relays.Stderr = os.Stderr
	out, err := relays.StdoutPipe()
	if err != nil {
		return r, err
	}
	if err := relays.Start(); err != nil {
		return r, err
	}
	defer func() { relays.Process.Kill(); relays.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		return r, fmt.Errorf("tree: sub-coordinators: %w", err)
	}
	var addrs []string
	if err := json.Unmarshal([]byte(line), &addrs); err != nil {
		return r, fmt.Errorf("tree: sub-coordinators said %q: %w", line, err)
	}
	r.Tree, err = runClients(ctx, cfg, "tree", n, fmt.Sprint(cfg.PerNode), strings.Join(addrs, ","))
	if err == nil {
		err = waitDone(ctx, co)
	}
	if err != nil {
		return r, fmt.Errorf("tree: %w", err)
	}
	return r, nil
}

func waitDone(ctx context.Context, co *coordnet.Coordinator) error {
	select {
	case <-co.Done():
		return co.Err()
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(30 * time.Second):
		return errors.New("the coordinator did not see every rank leave")
	}
}

// runClients runs the clients worker and returns the seconds it reports.
func runClients(ctx context.Context, cfg CoordConfig, args ...string) (float64, error) {
	cmd := cfg.Worker(append([]string{"clients"}, args...)...)
	var stdout strings.Builder
	var stderr lastLine
	cmd.Stdout, cmd.Stderr = &stdout, io.MultiWriter(os.Stderr, &stderr)
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	stop := context.AfterFunc(ctx, func() { cmd.Process.Kill() })
	defer stop()
	if err := cmd.Wait(); err != nil {
		// The worker's last word is the first client's error: what failed.
		if why := stderr.String(); why != "" {
			return 0, fmt.Errorf("clients: %w: %s", err, why)
		}
		return 0, fmt.Errorf("clients: %w", err)
	}
	var secs float64
	if _, err := fmt.Sscan(stdout.String(), &secs); err != nil {
		return 0, fmt.Errorf("clients said %q: %w", stdout.String(), err)
	}
	return secs, nil
}

// lastLine keeps the last non-empty line written to it.
type lastLine struct {
	mu   sync.Mutex
	line []byte // the last complete line
	part []byte // the line being written
}

func (l *lastLine) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, b := range p {
		if b != '\n' {
			if len(l.part) < 4096 {
				l.part = append(l.part, b)
			}
			continue
		}
		if len(l.part) > 0 {
			l.line, l.part = append(l.line[:0], l.part...), l.part[:0]
		}
	}
	return len(p), nil
}

func (l *lastLine) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.part) > 0 {
		return string(l.part)
	}
	return string(l.line)
}

// rawBarrierServer accepts n connections, reads one byte from each, then
// writes one byte to each: the least a barrier of n clients costs.
func rawBarrierServer(ln net.Listener, n int) error {
	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	arrived := make(chan error, n)
	for len(conns) < n {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		c.(*net.TCPConn).SetNoDelay(true)
		conns = append(conns, c)
		go func() {
			var b [1]byte
			_, err := io.ReadFull(c, b[:])
			arrived <- err
		}()
	}
	for range n {
		if err := <-arrived; err != nil {
			return err
		}
	}
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Go(func() { c.Write([]byte{1}) })
	}
	wg.Wait()
	return nil
}

// CoordWorker is the worker process: args are what RunCoord passed,
//
//	clients raw|flat N ADDR
//	clients tree N PER-NODE ADDR,ADDR,...
//	relays N PER-NODE UPSTREAM
//
// The clients print the seconds they took on w; the relays print their
// addresses as a JSON list, then serve until ctx is done.
func CoordWorker(ctx context.Context, args []string, w io.Writer) error {
	bad := fmt.Errorf("coord worker: args %q", args)
	atoi := func(s string) int {
		var v int
		if _, err := fmt.Sscan(s, &v); err != nil {
			return 0
		}
		return v
	}
	switch {
	case len(args) == 4 && args[0] == "relays":
		n, perNode := atoi(args[1]), atoi(args[2])
		if n < 1 || perNode < 1 {
			return bad
		}
		return relaysWorker(ctx, n, perNode, args[3], w)
	case len(args) >= 4 && args[0] == "clients":
		n := atoi(args[2])
		if n < 1 {
			return bad
		}
		start := time.Now()
		var err error
		switch {
		case args[1] == "raw" && len(args) == 4:
			err = rawClients(ctx, n, args[3])
		case args[1] == "flat" && len(args) == 4:
			err = roundClients(ctx, n, func(int) string { return args[3] })
		case args[1] == "tree" && len(args) == 5:
			perNode, addrs := atoi(args[3]), strings.Split(args[4], ",")
			if perNode < 1 || len(addrs) < (n+perNode-1)/perNode {
				return bad
			}
			err = roundClients(ctx, n, func(r int) string { return addrs[r/perNode] })
		default:
			return bad
		}
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(w, time.Since(start).Seconds())
		return err
	}
	return bad
}

func rawClients(ctx context.Context, n int, addr string) error {
	errs := make(chan error, n)
	for range n {
		go func() {
			var d net.Dialer
			c, err := d.DialContext(ctx, "tcp", addr)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			c.(*net.TCPConn).SetNoDelay(true)
			if _, err := c.Write([]byte{1}); err != nil {
				errs <- err
				return
			}
			var b [1]byte
			_, err = io.ReadFull(c, b[:])
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			return err
		}
	}
	return nil
}

// roundClients runs n ranks through one checkpoint round: join, the
// collective decision to checkpoint, the commit vote, leave.
func roundClients(ctx context.Context, n int, addr func(r int) string) error {
	errs := make(chan error, n)
	for r := range n {
		go func() {
			c, err := coordnet.Dial(ctx, coordnet.ClientConfig{Addr: addr(r), Token: benchToken, Rank: r, Size: n,
				Node: fmt.Sprintf("node%d", r)})
			if err != nil {
				errs <- err
				return
			}
			if _, err := c.Decide(ctx, []byte{1}); err != nil {
				errs <- err
				return
			}
			if ok, err := c.Commit(ctx, "bench", true); err != nil || !ok {
				errs <- fmt.Errorf("rank %d: commit: %v %v", r, ok, err)
				return
			}
			errs <- c.Leave()
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			return err
		}
	}
	return nil
}

// relaysWorker runs the sub-coordinators of n ranks, perNode per node, and
// prints their addresses as a JSON list once they listen.
func relaysWorker(ctx context.Context, n, perNode int, upstream string, w io.Writer) error {
	if perNode < 1 {
		return fmt.Errorf("coord worker: %d ranks per node", perNode)
	}
	var addrs []string
	var servers []*coordnet.Server
	defer func() {
		for _, s := range servers {
			s.Close()
		}
	}()
	for lo := 0; lo < n; lo += perNode {
		var ranks []int32
		for r := lo; r < min(lo+perNode, n); r++ {
			ranks = append(ranks, int32(r))
		}
		relay, err := coord.NewRelay(coord.RelayConfig{Token: benchToken, Node: fmt.Sprintf("node%d", lo/perNode), Ranks: ranks,
			HeartbeatTimeout: benchHeartbeat})
		if err != nil {
			return err
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		s := coordnet.Serve(ln, relay, coordnet.Options{Upstream: upstream})
		servers = append(servers, s)
		addrs = append(addrs, s.Addr())
	}
	b, _ := json.Marshal(addrs)
	if _, err := fmt.Fprintf(w, "%s\n", b); err != nil {
		return err
	}
	<-ctx.Done() // until the benchmark is done with them
	return nil
}
