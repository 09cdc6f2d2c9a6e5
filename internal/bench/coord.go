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
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ckpt/ckpt/internal/coord"
	"github.com/ckpt/ckpt/internal/coordnet"
	"github.com/ckpt/ckpt/internal/netns"
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
	// Hosts, if set, has the three measured again in the same run with
	// the ranks on hosts of their own (package netns): the coordinator and
	// the raw server on the first host, the clients spread over the others
	// in equal blocks, each node's sub-coordinator on its first rank's
	// host; every connection then crosses a bridge between network
	// namespaces instead of one loopback device.
	Hosts *netns.Net
}

// CoordResult holds durations in seconds: over loopback, and over
// Config.Hosts (Spread hosts of clients; zero without).
type CoordResult struct {
	Raw, Flat, Tree float64
	Spread          int
	SpreadRaw       float64
	SpreadFlat      float64
	SpreadTree      float64
}

const benchToken = "bench"

// benchHeartbeat is the heartbeat timeout of the benchmark's coordinators
// and sub-coordinators. It measures how fast ranks join and complete a
// round, not how fast a failure is seen: beside a CPU hog, on a machine
// with a load of 15 on 2 cores, a relay process holding 16K connections
// went unscheduled long enough for the coordinator to call it silent for
// 30s, the default, and the benchmark failed.
const benchHeartbeat = 2 * time.Minute

// RunCoord runs the three measurements over loopback, then, with Hosts,
// over the hosts.
func RunCoord(ctx context.Context, cfg CoordConfig) (CoordResult, error) {
	var r CoordResult
	if cfg.Progress == nil {
		cfg.Progress = func(string) {}
	}
	loopback := placement{listen: func() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }}
	var err error
	if r.Raw, r.Flat, r.Tree, err = runCoordOn(ctx, cfg, loopback); err != nil || cfg.Hosts == nil {
		return r, err
	}
	hosts := cfg.Hosts.Hosts()
	if len(hosts) < 2 {
		return r, fmt.Errorf("bench coord: %d hosts: need the coordinator's and at least one of clients", len(hosts))
	}
	r.Spread = len(hosts) - 1
	cfg.Progress(fmt.Sprintf("again with the clients on %d hosts (network namespaces), the coordinator on another", r.Spread))
	if r.SpreadRaw, r.SpreadFlat, r.SpreadTree, err = runCoordOn(ctx, cfg, spreadOver(hosts[0], hosts[1:])); err != nil {
		return r, fmt.Errorf("over %d hosts: %w", r.Spread, err)
	}
	return r, nil
}

// placement is where one run of the three measurements happens: where
// the coordinator and the raw server listen, and the workers' first
// argument ("netns=..." for clients on hosts; none on loopback).
type placement struct {
	listen func() (net.Listener, error)
	args   []string
}

// spreadOver places the coordinator on coord and the clients on hosts.
func spreadOver(coord *netns.Host, hosts []*netns.Host) placement {
	var list []string
	for _, h := range hosts {
		list = append(list, h.NS+"@"+h.Addr)
	}
	return placement{
		listen: func() (net.Listener, error) { return coord.Listen("tcp", coord.Addr+":0") },
		args:   []string{spreadArg + strings.Join(list, ",")},
	}
}

// spreadArg starts the workers' argument that lists the clients' hosts,
// NAMESPACE@ADDRESS,...
const spreadArg = "netns="

// runCoordOn runs raw, flat and tree where p says.
func runCoordOn(ctx context.Context, cfg CoordConfig, p placement) (raw, flat, tree float64, err error) {
	n := fmt.Sprint(cfg.Clients)
	worker := func(args ...string) *exec.Cmd { return cfg.Worker(append(slices.Clone(p.args), args...)...) }
	cfg.Progress("raw TCP: accept every client, then one barrier")
	ln, err := p.listen()
	if err != nil {
		return
	}
	rawDone := make(chan error, 1)
	go func(ln net.Listener) { rawDone <- rawBarrierServer(ln, cfg.Clients) }(ln)
	raw, err = runClients(ctx, worker, "raw", n, ln.Addr().String())
	ln.Close()
	if err == nil {
		err = <-rawDone
	}
	if err != nil {
		return raw, flat, tree, fmt.Errorf("raw: %w", err)
	}

	cfg.Progress("flat: every rank joins the coordinator, one checkpoint round")
	if ln, err = p.listen(); err != nil {
		return
	}
	co, err := coordnet.StartCoordinatorOn(ln, coord.Config{Size: cfg.Clients, Token: benchToken, HeartbeatTimeout: benchHeartbeat}, coordnet.Options{})
	if err != nil {
		return
	}
	flat, err = runClients(ctx, worker, "flat", n, co.Addr())
	if err == nil {
		err = waitDone(ctx, co)
	}
	co.Close()
	if err != nil {
		return raw, flat, tree, fmt.Errorf("flat: %w", err)
	}

	cfg.Progress(fmt.Sprintf("tree: %d ranks per node's sub-coordinator, one checkpoint round", cfg.PerNode))
	if ln, err = p.listen(); err != nil {
		return
	}
	// As `ckpt run --tree` configures it: a relay cut off may come back.
	co, err = coordnet.StartCoordinatorOn(ln, coord.Config{Size: cfg.Clients, Token: benchToken, HeartbeatTimeout: benchHeartbeat, Relays: true}, coordnet.Options{})
	if err != nil {
		return
	}
	defer co.Close()
	relays := worker("relays", n, fmt.Sprint(cfg.PerNode), co.Addr())
	relays.Stderr = os.Stderr
	out, err := relays.StdoutPipe()
	if err != nil {
		return
	}
	if err = relays.Start(); err != nil {
		return
	}
	defer func() { relays.Process.Kill(); relays.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		return raw, flat, tree, fmt.Errorf("tree: sub-coordinators: %w", err)
	}
	var addrs []string
	if err = json.Unmarshal([]byte(line), &addrs); err != nil {
		return raw, flat, tree, fmt.Errorf("tree: sub-coordinators said %q: %w", line, err)
	}
	tree, err = runClients(ctx, worker, "tree", n, fmt.Sprint(cfg.PerNode), strings.Join(addrs, ","))
	if err == nil {
		err = waitDone(ctx, co)
	}
	if err != nil {
		return raw, flat, tree, fmt.Errorf("tree: %w", err)
	}
	return raw, flat, tree, nil
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
func runClients(ctx context.Context, worker func(args ...string) *exec.Cmd, args ...string) (float64, error) {
	cmd := worker(append([]string{"clients"}, args...)...)
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
//	[netns=NS@ADDR,...] clients raw|flat N ADDR
//	[netns=NS@ADDR,...] clients tree N PER-NODE ADDR,ADDR,...
//	[netns=NS@ADDR,...] relays N PER-NODE UPSTREAM
//
// The clients print the seconds they took on w; the relays print their
// addresses as a JSON list, then serve until ctx is done. With netns=,
// the ranks are spread over those hosts in equal blocks: each client's
// socket is made in its rank's host, each relay listens on (and dials the
// coordinator from) its first rank's.
func CoordWorker(ctx context.Context, args []string, w io.Writer) error {
	bad := fmt.Errorf("coord worker: args %q", args)
	var on spread
	if len(args) > 0 && strings.HasPrefix(args[0], spreadArg) {
		for _, h := range strings.Split(strings.TrimPrefix(args[0], spreadArg), ",") {
			ns, addr, ok := strings.Cut(h, "@")
			if !ok {
				return bad
			}
			on = append(on, &netns.Host{Name: ns, NS: ns, Addr: addr})
		}
		args = args[1:]
	}
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
		return relaysWorker(ctx, n, perNode, args[3], on, w)
	case len(args) >= 4 && args[0] == "clients":
		n := atoi(args[2])
		if n < 1 {
			return bad
		}
		start := time.Now()
		var err error
		switch {
		case args[1] == "raw" && len(args) == 4:
			err = rawClients(ctx, n, args[3], on)
		case args[1] == "flat" && len(args) == 4:
			err = roundClients(ctx, n, func(int) string { return args[3] }, on)
		case args[1] == "tree" && len(args) == 5:
			perNode, addrs := atoi(args[3]), strings.Split(args[4], ",")
			if perNode < 1 || len(addrs) < (n+perNode-1)/perNode {
				return bad
			}
			err = roundClients(ctx, n, func(r int) string { return addrs[r/perNode] }, on)
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

// spread is the hosts a worker's ranks are spread over (none: loopback).
type spread []*netns.Host

// dial is how rank r of n connects: from its host, or plainly.
func (s spread) dial(r, n int) coordnet.DialFunc {
	if len(s) == 0 {
		var d net.Dialer
		return func(ctx context.Context, addr string) (net.Conn, error) { return d.DialContext(ctx, "tcp", addr) }
	}
	return s.host(r, n).Dialer()
}

// host is rank r's host: the ranks fill the hosts in equal blocks.
func (s spread) host(r, n int) *netns.Host { return s[r*len(s)/n] }

func rawClients(ctx context.Context, n int, addr string, on spread) error {
	errs := make(chan error, n)
	for r := range n {
		go func() {
			c, err := on.dial(r, n)(ctx, addr)
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
func roundClients(ctx context.Context, n int, addr func(r int) string, on spread) error {
	errs := make(chan error, n)
	for r := range n {
		go func() {
			c, err := coordnet.Dial(ctx, coordnet.ClientConfig{Addr: addr(r), Token: benchToken, Rank: r, Size: n,
				Node: fmt.Sprintf("node%d", r), Dial: on.dial(r, n)})
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

// listen listens for rank r's sub-coordinator: on its host's address,
// or on loopback.
func (s spread) listen(r, n int) (net.Listener, error) {
	if len(s) == 0 {
		return net.Listen("tcp", "127.0.0.1:0")
	}
	h := s.host(r, n)
	return h.Listen("tcp", h.Addr+":0")
}

// relaysWorker runs the sub-coordinators of n ranks, perNode per node, and
// prints their addresses as a JSON list once they listen.
func relaysWorker(ctx context.Context, n, perNode int, upstream string, on spread, w io.Writer) error {
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
		ln, err := on.listen(lo, n)
		if err != nil {
			return err
		}
		s := coordnet.Serve(ln, relay, coordnet.Options{Upstream: upstream, Dial: on.dial(lo, n)})
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
