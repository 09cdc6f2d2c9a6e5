// Package inproc is the in-process redundancy.Transport: the members of a
// set are goroutines of one process, and every ordered pair of members is
// a bounded FIFO queue of messages. It serves tests, benchmarks and
// one-process runs of several ranks.
//
// A Network holds the queues of one set; Endpoint(i) is member i's
// Transport. Closing an endpoint is how a member fails: its own pending and
// later calls fail with redundancy.ErrClosed, its peers' sends to it fail
// with redundancy.ErrPeerClosed, and their receives from it deliver what
// it sent before closing and then fail with redundancy.ErrPeerClosed.
// Context cancellation always unblocks a call.
package inproc

import (
	"context"
	"fmt"
	"sync"

	"github.com/ckpt/ckpt/internal/redundancy"
)

// DefaultDepth is the number of messages each ordered pair buffers.
const DefaultDepth = 4

// Option configures a Network.
type Option func(*Network)

// WithDepth sets how many messages each ordered pair buffers before Send
// blocks (≥ 1; default DefaultDepth).
func WithDepth(d int) Option { return func(nw *Network) { nw.depth = d } }

// Network connects the n members of one set.
type Network struct {
	n, depth int
	pipes    [][]*pipe // pipes[from][to]
	eps      []*Endpoint
}

// message is one queued message; data comes from the pipe's free list.
type message struct {
	tag  uint64
	data []byte
}

// pipe is the stream from one member to another.
type pipe struct {
	q    chan message
	free chan []byte // recycled message buffers, so steady state allocates nothing
}

// Endpoint is one member's Transport.
type Endpoint struct {
	nw        *Network
	me        int
	closeOnce sync.Once
	closed    chan struct{} // closed by Close
}

var _ redundancy.Transport = (*Endpoint)(nil)

// New returns a network of n members (n ≥ 1).
func New(n int, opts ...Option) *Network {
	nw := &Network{n: n, depth: DefaultDepth}
	for _, o := range opts {
		o(nw)
	}
	if n < 1 || nw.depth < 1 {
		panic(fmt.Sprintf("inproc.New(%d) with depth %d: need n ≥ 1 and depth ≥ 1", n, nw.depth))
	}
	nw.pipes = make([][]*pipe, n)
	for i := range nw.pipes {
		nw.pipes[i] = make([]*pipe, n)
		for j := range nw.pipes[i] {
			if i != j {
				nw.pipes[i][j] = &pipe{q: make(chan message, nw.depth), free: make(chan []byte, nw.depth+2)}
			}
		}
	}
	nw.eps = make([]*Endpoint, n)
	for i := range nw.eps {
		nw.eps[i] = &Endpoint{nw: nw, me: i, closed: make(chan struct{})}
	}
	return nw
}

// Members is n.
func (nw *Network) Members() int { return nw.n }

// Endpoint returns member i's transport.
func (nw *Network) Endpoint(i int) *Endpoint { return nw.eps[i] }

// Close closes every endpoint.
func (nw *Network) Close() {
	for _, e := range nw.eps {
		e.Close()
	}
}

// Member is the index of this endpoint in its set.
func (e *Endpoint) Member() int { return e.me }

// Close makes this member leave or fail (see the package documentation).
// It is idempotent and never blocks.
func (e *Endpoint) Close() error {
	e.closeOnce.Do(func() { close(e.closed) })
	return nil
}

func (e *Endpoint) peer(op string, i int) (*Endpoint, error) {
	if i < 0 || i >= e.nw.n || i == e.me {
		return nil, fmt.Errorf("inproc: member %d: %s member %d: not a peer in a set of %d", e.me, op, i, e.nw.n)
	}
	return e.nw.eps[i], nil
}

// Send copies msg into a queue buffer and enqueues it; it blocks while the
// queue to the peer is full.
func (e *Endpoint) Send(ctx context.Context, to int, tag uint64, msg []byte) error {
	peer, err := e.peer("send to", to)
	if err != nil {
		return err
	}
	select {
	case <-e.closed:
		return fmt.Errorf("inproc: member %d: send to %d: %w", e.me, to, redundancy.ErrClosed)
	case <-peer.closed:
		return fmt.Errorf("inproc: member %d: send to %d: %w", e.me, to, redundancy.ErrPeerClosed)
	default:
	}
	p := e.nw.pipes[e.me][to]
	var buf []byte
	select {
	case buf = <-p.free:
	default:
	}
	if cap(buf) < len(msg) {
		buf = make([]byte, len(msg))
	}
	m := message{tag: tag, data: append(buf[:0], msg...)}
	select {
	case p.q <- m:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("inproc: member %d: send to %d: %w", e.me, to, ctx.Err())
	case <-e.closed:
		return fmt.Errorf("inproc: member %d: send to %d: %w", e.me, to, redundancy.ErrClosed)
	case <-peer.closed:
		return fmt.Errorf("inproc: member %d: send to %d: %w", e.me, to, redundancy.ErrPeerClosed)
	}
}

// Recv dequeues the next message from a peer and copies it into buf.
func (e *Endpoint) Recv(ctx context.Context, from int, tag uint64, buf []byte) ([]byte, error) {
	peer, err := e.peer("receive from", from)
	if err != nil {
		return nil, err
	}
	p := e.nw.pipes[from][e.me]
	var m message
	select {
	case <-e.closed:
		return nil, fmt.Errorf("inproc: member %d: receive from %d: %w", e.me, from, redundancy.ErrClosed)
	default:
	}
	select {
	case m = <-p.q:
	case <-ctx.Done():
		return nil, fmt.Errorf("inproc: member %d: receive from %d: %w", e.me, from, ctx.Err())
	case <-e.closed:
		return nil, fmt.Errorf("inproc: member %d: receive from %d: %w", e.me, from, redundancy.ErrClosed)
	case <-peer.closed:
		// Deliver what the peer sent before it closed.
		select {
		case m = <-p.q:
		default:
			return nil, fmt.Errorf("inproc: member %d: receive from %d: %w", e.me, from, redundancy.ErrPeerClosed)
		}
	}
	out := append(buf[:0], m.data...)
	select {
	case p.free <- m.data:
	default:
	}
	if m.tag != tag {
		return nil, fmt.Errorf("inproc: member %d: receive from %d: %w: got %s, want %s",
			e.me, from, redundancy.ErrTagMismatch, redundancy.TagString(m.tag), redundancy.TagString(tag))
	}
	return out, nil
}
