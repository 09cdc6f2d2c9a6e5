package peer

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ckpt/ckpt/internal/redundancy"
	"github.com/ckpt/ckpt/internal/tcp"
)

// Errors of this package. Peer failure, closing and tag mismatches use
// the redundancy package's errors (ErrPeerClosed, ErrClosed,
// ErrTagMismatch), whatever the channel.
var (
	// ErrRefused: the peer refused the connection: wrong job token, wrong
	// rank, or a channel it does not belong to. A configuration error,
	// not a failure.
	ErrRefused = errors.New("peer: connection refused by the peer")
	// ErrMalformed: a handshake or frame broke the protocol; the
	// connection that carried it was closed.
	ErrMalformed = errors.New("peer: malformed handshake or frame")
	// ErrTooLarge: a message exceeds the receiver's frame limit.
	ErrTooLarge = errors.New("peer: message exceeds the receiver's frame limit")
)

// maxPendingSets bounds the set channels that peers may open on this Node
// before its owner calls OpenSet; maxTombs the closed sets remembered so
// that late connections to them are answered "closed".
const (
	maxPendingSets = 1024
	maxTombs       = 4096
)

// Node is one rank's endpoint: a listener, the application channel, and
// the set channels of the store. See the package documentation.
type Node struct {
	rank, size int
	token      string
	res        Resolver
	o          options
	log        *slog.Logger
	ln         net.Listener

	ctx    context.Context // done when the Node closes
	cancel context.CancelFunc

	mu     sync.Mutex
	closed bool
	app    *channel
	sets   map[setKey]*channel
	tombs  map[setKey]bool
	tombQ  []setKey
	conns  map[conn]bool  // every open connection; true: an outbound one
	wg     sync.WaitGroup // every goroutine of the Node

	refused, malformed atomic.Uint64
}

// setKey names a set channel: its epoch and members.
type setKey struct {
	epoch   uint64
	members string // uvarint-encoded ranks
}

func keyOf(members []int, epoch uint64) setKey {
	var b []byte
	for _, m := range members {
		b = binary.AppendUvarint(b, uint64(m))
	}
	return setKey{epoch: epoch, members: string(b)}
}

var _ redundancy.Transport = (*Node)(nil)

// Listen starts the Node of rank in a job of size ranks. token is the job
// token every handshake must carry; res finds the other ranks. The caller
// publishes Addr under AddrKey(rank) so that peers can find this Node.
func Listen(rank, size int, token string, res Resolver, opts ...Option) (*Node, error) {
	o := defaults()
	for _, opt := range opts {
		opt(&o)
	}
	switch {
	case size < 1 || size > maxRank:
		return nil, fmt.Errorf("peer: job size %d", size)
	case rank < 0 || rank >= size:
		return nil, fmt.Errorf("peer: rank %d outside a job of %d", rank, size)
	case len(token) > maxToken:
		return nil, fmt.Errorf("peer: token of %d bytes exceeds %d", len(token), maxToken)
	case res == nil:
		return nil, errors.New("peer: no resolver")
	case o.depth < 1 || o.depth > math.MaxInt32:
		return nil, fmt.Errorf("peer: depth %d", o.depth)
	case o.window < 1:
		return nil, fmt.Errorf("peer: window %d", o.window)
	case o.maxFrame < 0 || int64(o.maxFrame) > math.MaxUint32:
		return nil, fmt.Errorf("peer: max frame %d", o.maxFrame)
	}
	if o.log == nil {
		o.log = slog.Default()
	}
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return nil, fmt.Errorf("peer: rank %d: %w", rank, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := &Node{
		rank: rank, size: size, token: token, res: res, o: o,
		log: o.log.With("rank", rank), ln: ln, ctx: ctx, cancel: cancel,
		sets: map[setKey]*channel{}, tombs: map[setKey]bool{}, conns: map[conn]bool{},
	}
	n.app = newChannel(n, nil, rank, size, setKey{})
	n.app.opened = true
	n.wg.Add(1)
	go n.accept()
	return n, nil
}

// Rank is this Node's rank; Size the job's.
func (n *Node) Rank() int { return n.rank }
func (n *Node) Size() int { return n.size }

// Addr is the address peers dial: publish it under AddrKey(Rank()).
func (n *Node) Addr() string { return n.ln.Addr().String() }

// Stats counts the connections this Node refused (bad token, rank or
// channel; malformed handshakes) and closed for protocol errors.
type Stats struct {
	Refused   uint64
	Malformed uint64
}

// Stats returns the Node's counters.
func (n *Node) Stats() Stats {
	return Stats{Refused: n.refused.Load(), Malformed: n.malformed.Load()}
}

// Send sends msg to rank to on the application channel, with the
// redundancy.Transport contract (ranks are the indices).
func (n *Node) Send(ctx context.Context, to int, tag uint64, msg []byte) error {
	return n.app.send(ctx, to, tag, msg)
}

// Recv receives the next message from rank from on the application
// channel, with the redundancy.Transport contract.
func (n *Node) Recv(ctx context.Context, from int, tag uint64, buf []byte) ([]byte, error) {
	return n.app.recv(ctx, from, tag, buf)
}

// Set is one member's endpoint of a set channel (see OpenSet). It is a
// redundancy.Transport whose indices are members of the set, and its
// Close ends this member's participation.
type Set struct{ ch *channel }

var _ redundancy.Transport = (*Set)(nil)

// Send sends msg to member to of the set.
func (s *Set) Send(ctx context.Context, to int, tag uint64, msg []byte) error {
	return s.ch.send(ctx, to, tag, msg)
}

// Recv receives the next message from member from of the set.
func (s *Set) Recv(ctx context.Context, from int, tag uint64, buf []byte) ([]byte, error) {
	return s.ch.recv(ctx, from, tag, buf)
}

// Member is this endpoint's index in the set.
func (s *Set) Member() int { return s.ch.me }

// Close closes this endpoint as inproc.Endpoint.Close does: this member's
// pending and later calls fail with redundancy.ErrClosed, peers receive
// what it sent and then redundancy.ErrPeerClosed, and their sends to it
// fail with redundancy.ErrPeerClosed. It is idempotent and does not
// block.
func (s *Set) Close() error {
	n := s.ch.n
	n.mu.Lock()
	if n.sets[s.ch.key] == s.ch {
		delete(n.sets, s.ch.key)
		n.tombLocked(s.ch.key)
	}
	n.mu.Unlock()
	s.ch.close()
	return nil
}

// OpenSet connects this rank to the other members of a redundancy set,
// for Comm.SetTransport: members are job ranks in member order and
// include this rank once; every member opens the same members and epoch,
// which tell uses apart. Each (members, epoch) runs on its own
// connections, so neither the application channel nor another set can
// hold its traffic up. Connections are made on first use; ctx is only
// checked. A (members, epoch) can be opened once per Node: reopening it,
// even after Close, is an error.
func (n *Node) OpenSet(ctx context.Context, members []int, epoch uint64) (redundancy.Transport, io.Closer, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	me, err := n.checkMembers(members)
	if err != nil {
		return nil, nil, err
	}
	key := keyOf(members, epoch)
	n.mu.Lock()
	defer n.mu.Unlock()
	switch ch := n.sets[key]; {
	case n.closed:
		return nil, nil, fmt.Errorf("peer: rank %d: open set %v epoch %d: %w", n.rank, members, epoch, redundancy.ErrClosed)
	case n.tombs[key]:
		return nil, nil, fmt.Errorf("peer: rank %d: set %v epoch %d was already used and closed", n.rank, members, epoch)
	case ch != nil && ch.opened:
		return nil, nil, fmt.Errorf("peer: rank %d: set %v epoch %d is already open", n.rank, members, epoch)
	case ch != nil: // peers connected first
		ch.opened = true
		s := &Set{ch}
		return s, s, nil
	}
	ch := newChannel(n, slices.Clone(members), me, len(members), key)
	ch.opened = true
	n.sets[key] = ch
	s := &Set{ch}
	return s, s, nil
}

// checkMembers returns this rank's index in members, which must be
// distinct ranks of the job.
func (n *Node) checkMembers(members []int) (int, error) {
	me := -1
	seen := make(map[int]bool, len(members))
	for i, r := range members {
		if r < 0 || r >= n.size || seen[r] {
			return -1, fmt.Errorf("peer: rank %d: set %v: bad or repeated rank %d in a job of %d", n.rank, members, r, n.size)
		}
		seen[r] = true
		if r == n.rank {
			me = i
		}
	}
	if me < 0 {
		return -1, fmt.Errorf("peer: rank %d is not a member of set %v", n.rank, members)
	}
	return me, nil
}

func (n *Node) tombLocked(k setKey) {
	n.tombs[k] = true
	n.tombQ = append(n.tombQ, k)
	if len(n.tombQ) > maxTombs {
		delete(n.tombs, n.tombQ[0])
		n.tombQ = n.tombQ[1:]
	}
}

// goAdd counts a goroutine the Node is about to start; false once the
// Node is closing.
func (n *Node) goAdd() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return false
	}
	n.wg.Add(1)
	return true
}

// track registers a connection so that Close finds it; false once the
// Node is closing (the caller then closes it).
func (n *Node) track(c conn, outbound bool) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return false
	}
	n.conns[c] = outbound
	return true
}

func (n *Node) untrack(c conn) {
	n.mu.Lock()
	delete(n.conns, c)
	n.mu.Unlock()
}

// Close stops the Node: the listener and every channel close, pending
// and later calls fail with redundancy.ErrClosed, and peers receive what
// this Node sent and then redundancy.ErrPeerClosed. Close waits (at most
// the linger time) for peers to read what was sent, then closes every
// connection and returns when the Node's goroutines have ended.
func (n *Node) Close() error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil
	}
	n.closed = true
	chans := []*channel{n.app}
	for _, ch := range n.sets {
		chans = append(chans, ch)
	}
	n.mu.Unlock()
	n.cancel()
	n.ln.Close()
	for _, ch := range chans {
		ch.close()
	}
	// Inbound and handshaking connections close now; outbound ones are
	// half-closed by ch.close and end when the peer has read them.
	n.mu.Lock()
	for c, out := range n.conns {
		if !out {
			c.Close()
		}
	}
	n.mu.Unlock()
	done := make(chan struct{})
	go func() { n.wg.Wait(); close(done) }()
	t := time.NewTimer(n.o.linger)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		n.mu.Lock()
		for c := range n.conns {
			c.Close()
		}
		n.mu.Unlock()
		<-done
	}
	return nil
}

// conn is a connection between Nodes: TCP, or TLS over TCP (WithTLS).
// Both close their writing side alone, which a Node's Close needs.
type conn interface {
	net.Conn
	CloseWrite() error
}

// accept runs the listener.
func (n *Node) accept() {
	defer n.wg.Done()
	tcp.Accept(n.ln, n.ctx.Done(), func(err error, _ time.Duration) {
		n.log.Warn("peer: accept", "err", err)
	}, func(c net.Conn) {
		tc, ok := c.(*net.TCPConn)
		if !ok || !n.goAdd() {
			c.Close()
			return
		}
		tc.SetNoDelay(true)
		if n.o.tls != nil {
			// The TLS handshake runs at the first read of serve's, within
			// its handshake deadline.
			go n.serve(tls.Server(tc, n.o.tls.Server))
			return
		}
		go n.serve(tc)
	})
}

// serve runs one inbound connection: the handshake, then its reader.
func (n *Node) serve(c conn) {
	defer n.wg.Done()
	if !n.track(c, false) {
		c.Close()
		return
	}
	defer n.untrack(c)
	defer c.Close()
	c.SetDeadline(time.Now().Add(n.o.handshakeTimeout))
	// The token is checked (in constant time: it is a secret and the
	// network is not trusted) before the handshake is read whole.
	h, err := readHello(c, func(token string) bool {
		return subtle.ConstantTimeCompare([]byte(token), []byte(n.token)) == 1
	})
	if errors.Is(err, errWrongToken) {
		n.refuse(c, statusRefused, err)
		return
	}
	if err != nil {
		n.refuse(c, -1, err)
		return
	}
	if h.to != n.rank || h.from >= n.size || h.from == n.rank {
		n.refuse(c, statusRefused, fmt.Errorf("connection from rank %d for rank %d: this is rank %d of %d", h.from, h.to, n.rank, n.size))
		return
	}
	ch, from, status, err := n.route(h)
	if err != nil {
		if status == statusClosed {
			// Not an error: the set ended here first.
			writeReply(c, reply{status: statusClosed})
			return
		}
		n.refuse(c, int(status), err)
		return
	}
	ic := newInConn(ch.in[from], c)
	if !ic.slot.attach(ic) {
		writeReply(c, reply{status: statusClosed})
		return
	}
	r := reply{status: statusOK, depth: uint32(n.o.depth), window: uint64(n.o.window), maxFrame: uint64(n.o.maxFrame)}
	if err := writeReply(c, r); err != nil {
		ic.end(fmt.Errorf("%w: handshake reply: %v", redundancy.ErrPeerClosed, err))
		return
	}
	c.SetDeadline(time.Time{})
	ic.run()
}

// route finds the channel and the sender's index for a handshake,
// creating a set channel that peers reach before its owner opens it.
func (n *Node) route(h hello) (ch *channel, from int, status uint8, err error) {
	if h.kind == kindApp {
		return n.app, h.from, statusOK, nil
	}
	key := keyOf(h.members, h.epoch)
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed || n.tombs[key] {
		return nil, 0, statusClosed, fmt.Errorf("set closed")
	}
	ch = n.sets[key]
	if ch == nil {
		me, err := n.checkMembers(h.members)
		if err != nil {
			return nil, 0, statusRefused, err
		}
		pending := 0
		for _, c := range n.sets {
			if !c.opened {
				pending++
			}
		}
		if pending >= maxPendingSets {
			return nil, 0, statusRefused, fmt.Errorf("%d set channels opened by peers and not yet here", pending)
		}
		ch = newChannel(n, h.members, me, len(h.members), key)
		n.sets[key] = ch
	}
	from = slices.Index(ch.members, h.from)
	if from < 0 {
		return nil, 0, statusRefused, fmt.Errorf("rank %d is not a member of set %v", h.from, ch.members)
	}
	return ch, from, statusOK, nil
}

// refuse answers a handshake with status (none if negative), counts and
// logs it; the caller closes the connection.
func (n *Node) refuse(c conn, status int, err error) {
	n.refused.Add(1)
	n.log.Warn("peer: refused connection", "remote", c.RemoteAddr().String(), "err", err)
	if status >= 0 {
		writeReply(c, reply{status: uint8(status)})
	}
}

func writeReply(c conn, r reply) error {
	b := r.encode()
	_, err := c.Write(b[:])
	return err
}

// protocolError counts and logs a frame that broke the protocol.
func (n *Node) protocolError(c conn, err error) {
	n.malformed.Add(1)
	n.log.Warn("peer: closing connection", "remote", c.RemoteAddr().String(), "err", err)
}
