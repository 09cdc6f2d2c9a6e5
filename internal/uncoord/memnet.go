package uncoord

import (
	"bytes"
	"context"
	"fmt"
	"sync"

	"github.com/ckpt/ckpt/internal/redundancy"
)

// MemNet is Net's in-memory twin: the ranks of a job as goroutines of one
// process, whose failures tests make happen (Kill). A message sent to a
// dead rank, or queued for it when it dies, is lost, as on a network.
type MemNet struct {
	mu      sync.Mutex
	queues  map[[2]int][][]byte
	live    map[int]*MemEndpoint
	dead    map[int]bool
	changed chan struct{}
	// Filter, if set before use, decides what goes on the wire for each
	// message sent between live ranks: nothing (lost), it, it twice
	// (duplicated), or others too. It is called with MemNet's lock held.
	Filter func(from, to int, msg []byte) [][]byte
}

// NewMemNet returns an empty network.
func NewMemNet() *MemNet {
	return &MemNet{queues: map[[2]int][][]byte{}, live: map[int]*MemEndpoint{}, dead: map[int]bool{}, changed: make(chan struct{})}
}

// MemEndpoint is one incarnation of a rank on a MemNet.
type MemEndpoint struct {
	n      *MemNet
	rank   int
	closed bool
}

// Endpoint starts a new incarnation of rank; the previous one, if any,
// is killed. Messages sent to a rank that has not started yet wait for it,
// as a peer's Send waits until the rank has published its address.
func (n *MemNet) Endpoint(rank int) *MemEndpoint {
	n.Kill(rank)
	n.mu.Lock()
	defer n.mu.Unlock()
	e := &MemEndpoint{n: n, rank: rank}
	n.live[rank] = e
	delete(n.dead, rank)
	return e
}

// Kill makes rank's current incarnation, if any, fail: its calls return
// redundancy.ErrClosed, the messages queued for it are lost, and so are
// those sent to it until its next Endpoint.
func (n *MemNet) Kill(rank int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	e := n.live[rank]
	if e == nil {
		return
	}
	e.closed = true
	delete(n.live, rank)
	n.dead[rank] = true
	for k := range n.queues {
		if k[1] == rank {
			delete(n.queues, k)
		}
	}
	n.notify()
}

func (n *MemNet) notify() {
	close(n.changed)
	n.changed = make(chan struct{})
}

// Send queues msg for rank to, or loses it when to is dead.
func (e *MemEndpoint) Send(ctx context.Context, to int, tag uint64, msg []byte) error {
	n := e.n
	n.mu.Lock()
	defer n.mu.Unlock()
	if e.closed {
		return redundancy.ErrClosed
	}
	if n.dead[to] {
		return nil // lost, as a send before the failure is noticed
	}
	ms := [][]byte{msg}
	if n.Filter != nil {
		ms = n.Filter(e.rank, to, msg)
	}
	k := [2]int{e.rank, to}
	for _, m := range ms {
		n.queues[k] = append(n.queues[k], append(binaryTag(tag), m...))
	}
	n.notify()
	return nil
}

// Recv returns the next message from rank from.
func (e *MemEndpoint) Recv(ctx context.Context, from int, tag uint64, _ []byte) ([]byte, error) {
	n := e.n
	k := [2]int{from, e.rank}
	for {
		n.mu.Lock()
		if e.closed {
			n.mu.Unlock()
			return nil, redundancy.ErrClosed
		}
		if q := n.queues[k]; len(q) > 0 {
			m := q[0]
			n.queues[k] = q[1:]
			n.mu.Unlock()
			if !bytes.HasPrefix(m, binaryTag(tag)) {
				return nil, fmt.Errorf("memnet: from rank %d: %w", from, redundancy.ErrTagMismatch)
			}
			return m[8:], nil
		}
		ch := n.changed
		n.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func binaryTag(tag uint64) []byte {
	b := make([]byte, 8)
	for i := range b {
		b[i] = byte(tag >> (8 * i))
	}
	return b
}
