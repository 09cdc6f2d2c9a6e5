package ckptexternal

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/ckpt/ckpt"
)

// pending is how many messages each ordered pair of ranks (or of set
// members) buffers before a sender waits. Collective rounds need two: a
// rank may send the next round's message before a slower peer has taken
// the last one.
const pending = 4

// ChanJob is a job of ranks that run as goroutines and talk over channels.
type ChanJob struct {
	size int
	coll [][]chan []byte // coll[from][to]: collective messages

	mu   sync.Mutex
	sets map[string]*chanSet // by epoch and members
}

// NewChanJob returns a job of n ranks.
func NewChanJob(n int) *ChanJob {
	j := &ChanJob{size: n, coll: make([][]chan []byte, n), sets: map[string]*chanSet{}}
	for from := range n {
		j.coll[from] = make([]chan []byte, n)
		for to := range n {
			j.coll[from][to] = make(chan []byte, pending)
		}
	}
	return j
}

// Comm is rank's ckpt.Comm.
func (j *ChanJob) Comm(rank int) ckpt.Comm { return &chanComm{job: j, rank: rank} }

type chanComm struct {
	job  *ChanJob
	rank int
}

var _ ckpt.Comm = (*chanComm)(nil)

func (c *chanComm) Rank() int { return c.rank }
func (c *chanComm) Size() int { return c.job.size }

// AllGather sends data to every other rank and takes one message from
// each. Every rank makes the same calls in the same order, so the k-th
// message between two ranks belongs to their k-th collective call.
func (c *chanComm) AllGather(ctx context.Context, data []byte) ([][]byte, error) {
	out := make([][]byte, c.job.size)
	out[c.rank] = slices.Clone(data)
	for to := range c.job.size {
		if to == c.rank {
			continue
		}
		select {
		case c.job.coll[c.rank][to] <- out[c.rank]:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	for from := range c.job.size {
		if from == c.rank {
			continue
		}
		select {
		case out[from] = <-c.job.coll[from][c.rank]:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return out, nil
}

// SetTransport joins the set's channels, which the first member to ask
// for them creates.
func (c *chanComm) SetTransport(ctx context.Context, members []int, epoch uint64) (ckpt.Transport, io.Closer, error) {
	me := slices.Index(members, c.rank)
	if me < 0 {
		return nil, nil, fmt.Errorf("rank %d is not a member of set %v", c.rank, members)
	}
	key := fmt.Sprint(epoch, members)
	c.job.mu.Lock()
	s := c.job.sets[key]
	if s == nil {
		s = newChanSet(len(members))
		c.job.sets[key] = s
	}
	c.job.mu.Unlock()
	ep := &endpoint{set: s, me: me}
	return ep, ep, nil
}

// chanSet connects the members of one set for one epoch.
type chanSet struct {
	links [][]chan message // links[from][to]
	gone  []chan struct{}  // closed when member i closes its endpoint
	once  []sync.Once
}

type message struct {
	tag  uint64
	data []byte
}

func newChanSet(n int) *chanSet {
	s := &chanSet{links: make([][]chan message, n), gone: make([]chan struct{}, n), once: make([]sync.Once, n)}
	for from := range n {
		s.links[from] = make([]chan message, n)
		for to := range n {
			s.links[from][to] = make(chan message, pending)
		}
		s.gone[from] = make(chan struct{})
	}
	return s
}

// endpoint is one member's ckpt.Transport.
type endpoint struct {
	set *chanSet
	me  int
}

var errTag = errors.New("message tag mismatch")

func (e *endpoint) Send(ctx context.Context, to int, tag uint64, msg []byte) error {
	select {
	case <-e.set.gone[e.me]:
		return errors.New("send on a closed endpoint")
	default:
	}
	select {
	case e.set.links[e.me][to] <- message{tag, slices.Clone(msg)}:
		return nil
	case <-e.set.gone[to]:
		return fmt.Errorf("member %d closed", to)
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (e *endpoint) Recv(ctx context.Context, from int, tag uint64, buf []byte) ([]byte, error) {
	var m message
	select {
	case m = <-e.set.links[from][e.me]:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-e.set.gone[from]:
		// What the peer sent before it closed is still delivered.
		select {
		case m = <-e.set.links[from][e.me]:
		default:
			return nil, fmt.Errorf("member %d closed", from)
		}
	}
	if m.tag != tag {
		return nil, fmt.Errorf("from member %d: %w: got %#x, want %#x", from, errTag, m.tag, tag)
	}
	if len(m.data) <= cap(buf) {
		return append(buf[:0], m.data...), nil
	}
	return m.data, nil
}

// Close ends this member's part: peers waiting for it fail.
func (e *endpoint) Close() error {
	e.set.once[e.me].Do(func() { close(e.set.gone[e.me]) })
	return nil
}
