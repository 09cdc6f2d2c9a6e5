package torture

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ckpt/ckpt/internal/hostile"
	"github.com/ckpt/ckpt/internal/peer"
	"github.com/ckpt/ckpt/internal/stage"
)

// A hostile fault plays every attack of internal/hostile against every
// listener the live job has open, found in /proc:
//
//   - the launcher's listening sockets are the coordinator and, with
//     --tree, one relay per node; a rank's CKPT_COORD names the one it
//     talks to (its relay, or the coordinator without relays);
//   - a rank's one listening socket is its peer listener;
//   - a staging server's is its own.
//
// The ranks' environment gives the job's token, incarnation and node
// names, from which the Hellos and the frames to replay are built as a
// legitimate client's. The token is only put in frames: torture never
// prints it.
//
// A listener holds an attack when it drops the attacker within the bound
// (hostile.Target); after the attacks, it must also have closed every
// connection the attackers opened (seen in its process's sockets): a
// leak is a failure too. Whether the job survives is the campaign's to
// see (rideOut): no restart, and its next checkpoints right.

// staleToken stands for a previous launch's token, which torture does not
// know: any token but the job's.
const staleToken = "the-previous-launch-token"

// leakBound bounds the wait, after the attacks, for a listener to close
// the attackers' connections it still holds. Each attack that held saw
// its connection closed, so this is only the time for the process to run.
const leakBound = 15 * time.Second

// listener is a listening socket of the job, and the attacks' target.
type listener struct {
	kind string // coordinator, relay, peer, stage
	pid  int
	addr netip.AddrPort
	tg   hostile.Target
}

// Attacks is what the last hostile fault's attacks found.
func (j *procJob) Attacks() Attacks { return j.attacked }

// dialer is how torture reaches the job's listeners: every attack's
// connection goes through it (a job in a network namespace of its own
// would be reached from inside it).
func (j *procJob) dialer() func(ctx context.Context, addr string) (net.Conn, error) {
	if j.dial != nil {
		return j.dial
	}
	if j.sb != nil {
		return j.sb.dial
	}
	var d net.Dialer
	return func(ctx context.Context, addr string) (net.Conn, error) { return d.DialContext(ctx, "tcp", addr) }
}

// attack plays the hostile client against every listener of the job, all
// at once, and keeps the account for Attacks.
func (j *procJob) attack(ctx context.Context) (time.Time, error) {
	j.attacked = Attacks{Held: map[string]int{}}
	ranks, err := j.ranks(ctx)
	if err != nil {
		return time.Time{}, err
	}
	ls, err := j.listeners(ranks)
	if err != nil {
		return time.Time{}, err
	}
	at := time.Now()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, l := range ls {
		wg.Go(func() {
			held, cut, failed := j.attackOne(ctx, l)
			mu.Lock()
			defer mu.Unlock()
			j.attacked.Held[l.kind] += held
			j.attacked.Cut += cut
			j.attacked.Failed = append(j.attacked.Failed, failed...)
		})
	}
	wg.Wait()
	slices.Sort(j.attacked.Failed)
	return at, ctx.Err()
}

// attackOne plays every attack against l. The attacks are cut short when
// l stops listening (its process ended: the job finished, or restarted),
// and an attack that ended about when it did is not counted as held: its
// connection may have closed with the listener. It counts the attacks
// held and cut short, and says what failed: an attack not held,
// connections kept after the attacks.
func (j *procJob) attackOne(ctx context.Context, l listener) (held, cut int, failed []string) {
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	var mine []netip.AddrPort  // the attackers' ends of their connections
	var listened time.Time     // when l was last seen listening
	stopped := make(chan bool) // whether l stopped listening before the attacks ended
	dial := j.dialer()
	l.tg.Dial = func(ctx context.Context, addr string) (net.Conn, error) {
		nc, err := dial(ctx, addr)
		if err == nil {
			if a, ok := nc.LocalAddr().(*net.TCPAddr); ok {
				mu.Lock()
				mine = append(mine, a.AddrPort())
				mu.Unlock()
			}
		}
		return nc, err
	}
	go func() {
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			seen := time.Now()
			if !j.listens(l) {
				cancel()
				stopped <- true
				return
			}
			mu.Lock()
			listened = seen
			mu.Unlock()
			select {
			case <-actx.Done():
				stopped <- false
				return
			case <-tick.C:
			}
		}
	}()
	start := time.Now()
	vs := hostile.RunAtOnce(actx, l.tg, hostile.Attacks())
	cancel()
	gone := <-stopped || !j.listens(l)
	mu.Lock()
	defer mu.Unlock()
	for _, v := range vs {
		switch {
		case gone && !start.Add(v.Took).Before(listened.Add(-closing)):
			cut++
		case v.Err == nil:
			held++
		case ctx.Err() != nil:
			cut++
		default:
			failed = append(failed, fmt.Sprintf("%s at %s: %v", l.tg.Name, l.addr, v))
		}
	}
	if gone || ctx.Err() != nil {
		return held, cut, failed
	}
	// The leak check: every connection an attacker opened is closed on
	// the listener's side too, soon.
	wait := j.leakWait
	if wait <= 0 {
		wait = leakBound
	}
	deadline := time.Now().Add(wait)
	for {
		kept, err := keptConns(l.pid, l.addr.Port(), mine)
		if err != nil || !j.listens(l) {
			return held, cut, failed // the process ended meanwhile
		}
		if kept == 0 {
			return held, cut, failed
		}
		if time.Now().After(deadline) {
			return held, cut, append(failed, fmt.Sprintf("%s at %s kept %d of the attackers' %d connections open %v after the attacks",
				l.tg.Name, l.addr, kept, len(mine), wait))
		}
		if sleep(ctx, 100*time.Millisecond) != nil {
			return held, cut, failed
		}
	}
}

// closing is how long before its listening socket is gone a listener
// that closes for the job's end may have closed its connections.
const closing = time.Second

// listens tells whether l's process still listens at l's address.
func (j *procJob) listens(l listener) bool {
	addrs, err := listening(l.pid)
	return err == nil && alive(l.pid) && slices.Contains(addrs, l.addr)
}

// listeners finds the job's listeners and builds their targets. ranks are
// the job's rank processes, by rank.
func (j *procJob) listeners(ranks []proc) ([]listener, error) {
	envs := make([]map[string]string, len(ranks))
	for i, r := range ranks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", r.pid))
		if err != nil {
			return nil, fmt.Errorf("%w: rank %d: %v", ErrNothingToHit, i, err)
		}
		envs[i] = parseEnviron(b)
	}
	job, err := jobOf(envs)
	if err != nil {
		return nil, err
	}
	var out []listener
	// The coordinator's and a relay's targets: their Hello is ranks', of
	// node; the replays are that Hello from the previous incarnation and,
	// if joined is not nil, a Hello of ranks that joined long ago. (A
	// relay's own Hello is never replayed at the coordinator: the
	// coordinator takes it as the relay coming back, coord's resume,
	// which the token alone allows.)
	coordTarget := func(name string, a netip.AddrPort, node string, ranks, joined []int32) hostile.Target {
		replays := [][]byte{hostile.CoordHello(job.token, hostile.Previous(job.inc), node, ranks...)}
		if joined != nil {
			replays = append(replays, hostile.CoordHello(job.token, job.inc, node, joined...))
		}
		return hostile.Target{Name: name, Addr: a.String(), Replays: replays, Silent: j.p.Heartbeat,
			Hello: func(tok string) []byte { return hostile.CoordHello(tok, job.inc, node, ranks...) }}
	}

	// The launcher listens as the coordinator and, with relays, as one
	// relay per node, whose addresses the ranks were given.
	launcher := j.cmd.Process.Pid
	addrs, err := listening(launcher)
	if err != nil {
		return nil, fmt.Errorf("%w: the launcher's sockets: %v", ErrNothingToHit, err)
	}
	relays := len(addrs) > 1
	for _, a := range addrs {
		node, isRelay := job.coord[a]
		switch {
		case relays && isRelay:
			first := job.byNode[node][:1]
			out = append(out, listener{kind: "relay", pid: launcher, addr: a,
				tg: coordTarget("relay of "+node, a, node, first, first)})
		case relays:
			node := job.nodes[0]
			ranks, joined := job.byNode[node], job.byNode[node][:1]
			if len(ranks) == 1 {
				joined = nil // the relay's own Hello
			}
			out = append(out, listener{kind: "coordinator", pid: launcher, addr: a,
				tg: coordTarget("coordinator", a, node, ranks, joined)})
		default:
			node := job.nodes[0]
			first := job.byNode[node][:1]
			out = append(out, listener{kind: "coordinator", pid: launcher, addr: a,
				tg: coordTarget("coordinator", a, node, first, first)})
		}
	}
	if n := countKind(out, "coordinator"); n != 1 {
		return nil, fmt.Errorf("%w: the launcher listens on %v: %d coordinators among them", ErrNothingToHit, addrs, n)
	}

	// The ranks' peer listeners.
	for i, r := range ranks {
		addrs, err := listening(r.pid)
		if err != nil || len(addrs) != 1 {
			return nil, fmt.Errorf("%w: rank %d listens on %v (%v), not on one peer address", ErrNothingToHit, i, addrs, err)
		}
		// A handshake meant for another rank, of this job.
		size := len(ranks)
		other := hostile.PeerHello(job.token, (i+2)%size, (i+1)%size)
		out = append(out, listener{kind: "peer", pid: r.pid, addr: addrs[0], tg: hostile.Target{
			Name: fmt.Sprintf("peer of rank %d", i), Addr: addrs[0].String(),
			Hello:   func(tok string) []byte { return hostile.PeerHello(tok, (i+1)%size, i) },
			Replays: [][]byte{other}, Silent: peer.DefaultTimeout}})
	}

	// The staging servers.
	for _, p := range j.children() {
		if p.stage < 0 {
			continue
		}
		addrs, err := listening(p.pid)
		if err != nil || len(addrs) != 1 {
			return nil, fmt.Errorf("%w: staging server %d listens on %v (%v)", ErrNothingToHit, p.stage, addrs, err)
		}
		node := job.nodes[0]
		out = append(out, listener{kind: "stage", pid: p.pid, addr: addrs[0], tg: hostile.Target{
			Name: fmt.Sprintf("stage%d", p.stage), Addr: addrs[0].String(),
			Hello: func(tok string) []byte { return hostile.StageHello(tok, node) },
			// A Hello of the previous launch's (its token is another), and
			// a frame a client sends only after its Hello. A Hello with
			// the job's token would be a node's reconnection, which the
			// server takes.
			Replays: [][]byte{hostile.StageHello(staleToken, node), hostile.StageData(1)},
			Silent:  stage.DefaultHelloTimeout}})
	}
	return out, nil
}

func countKind(ls []listener, kind string) int {
	n := 0
	for _, l := range ls {
		if l.kind == kind {
			n++
		}
	}
	return n
}

// listening is the addresses process pid listens on (TCP).
func listening(pid int) ([]netip.AddrPort, error) {
	socks, err := sockets(pid)
	if err != nil {
		return nil, err
	}
	var out []netip.AddrPort
	for _, s := range socks {
		if s.state == tcpListen {
			out = append(out, s.local)
		}
	}
	return out, nil
}

// keptConns counts the connections process pid holds on its port that
// come from one of from.
func keptConns(pid int, port uint16, from []netip.AddrPort) (int, error) {
	socks, err := sockets(pid)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, s := range socks {
		if s.state != tcpListen && s.local.Port() == port && slices.Contains(from, s.remote) {
			n++
		}
	}
	return n, nil
}

// sockets is process pid's TCP sockets: those of its network namespace's
// tables (/proc/PID/net/tcp and tcp6) whose inode is one of its open
// files.
func sockets(pid int) ([]socket, error) {
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return nil, err
	}
	mine := map[uint64]bool{}
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join(fmt.Sprintf("/proc/%d/fd", pid), fd.Name()))
		if err != nil {
			continue // closed meanwhile
		}
		if s, ok := strings.CutPrefix(target, "socket:["); ok {
			if ino, err := strconv.ParseUint(strings.TrimSuffix(s, "]"), 10, 64); err == nil {
				mine[ino] = true
			}
		}
	}
	var out []socket
	for _, table := range []string{"tcp", "tcp6"} {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, table))
		if errors.Is(err, os.ErrNotExist) && table == "tcp6" {
			continue // no IPv6
		}
		if err != nil {
			return nil, err
		}
		socks, err := parseTCP(string(b))
		if err != nil {
			return nil, err
		}
		for _, s := range socks {
			if mine[s.inode] {
				out = append(out, s)
			}
		}
	}
	return out, nil
}

// alive tells whether process pid runs (neither gone nor a zombie).
func alive(pid int) bool { return syscall.Kill(pid, 0) == nil && !zombie(pid) }
