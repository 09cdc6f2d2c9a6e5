// Package group is the collective layer of a job's ranks: the few
// operations a checkpoint needs from all ranks together (exchange sizes and
// manifest parts, agree that everyone committed). The coordinator of the
// runtime implements it over the network; this package defines the
// interface and ships two implementations: Solo, for a single process with
// no launcher, and Local, for ranks running as goroutines of one process
// (tests, and one-process runs of several ranks).
package group

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Group is one rank's view of the job's ranks.
//
// Collective calls must be made by every rank in the same order. They block
// until every rank has made the call, the context is done, or the group has
// failed; after a failure every pending and later call returns an error
// wrapping ErrFailed, so no rank waits forever for a dead peer.
type Group interface {
	Rank() int
	Size() int
	// AllGather contributes data and returns every rank's contribution,
	// indexed by rank. The returned slices are shared between ranks: callers
	// must not modify them. data is not retained beyond the call's return
	// on any rank other than through the result.
	AllGather(ctx context.Context, data []byte) ([][]byte, error)
}

// ErrFailed is wrapped by every error of a group in which a rank failed or
// left.
var ErrFailed = errors.New("group failed")

// Barrier waits until every rank has reached it.
func Barrier(ctx context.Context, g Group) error {
	_, err := g.AllGather(ctx, nil)
	return err
}

// AllAgree reports whether every rank passed ok; it is a collective call.
// A rank that fails locally passes false so that nobody commits alone.
func AllAgree(ctx context.Context, g Group, ok bool) (bool, error) {
	b := []byte{0}
	if ok {
		b[0] = 1
	}
	all, err := g.AllGather(ctx, b)
	if err != nil {
		return false, err
	}
	for _, v := range all {
		if len(v) != 1 || v[0] != 1 {
			return false, nil
		}
	}
	return true, nil
}

// Solo is the group of a single process.
type Solo struct{}

func (Solo) Rank() int { return 0 }
func (Solo) Size() int { return 1 }
func (Solo) AllGather(ctx context.Context, data []byte) ([][]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return [][]byte{data}, nil
}

var _ Group = Solo{}

// local is the state shared by the ranks of a Local group.
type local struct {
	mu     sync.Mutex
	size   int
	buf    [][]byte // contributions to the current round
	count  int      // contributions so far
	done   chan struct{}
	result [][]byte
	err    error // set once the group failed
}

// Member is one rank of a Local group.
type Member struct {
	g    *local
	rank int
}

// Local returns the members of an in-process group of n ranks, one per
// goroutine.
func Local(n int) []*Member {
	if n < 1 {
		panic(fmt.Sprintf("group.Local(%d): need at least one rank", n))
	}
	g := &local{size: n, buf: make([][]byte, n), done: make(chan struct{})}
	out := make([]*Member, n)
	for i := range out {
		out[i] = &Member{g: g, rank: i}
	}
	return out
}

func (m *Member) Rank() int { return m.rank }
func (m *Member) Size() int { return m.g.size }

// Fail makes the group fail, as the loss of this rank would: every pending
// and later collective call of every rank returns an error wrapping
// ErrFailed.
func (m *Member) Fail(reason error) {
	g := m.g
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.err == nil {
		// reason is wrapped too, so that callers can tell why (a node
		// lost, a partition) with errors.Is.
		g.err = fmt.Errorf("%w: rank %d: %w", ErrFailed, m.rank, reason)
		close(g.done)
	}
}

func (m *Member) AllGather(ctx context.Context, data []byte) ([][]byte, error) {
	g := m.g
	g.mu.Lock()
	if g.err != nil {
		g.mu.Unlock()
		return nil, g.err
	}
	if g.buf[m.rank] != nil {
		g.mu.Unlock()
		return nil, fmt.Errorf("group: rank %d called AllGather twice in one round", m.rank)
	}
	if data == nil {
		data = []byte{}
	}
	g.buf[m.rank] = data
	g.count++
	done := g.done
	if g.count == g.size {
		// Last to arrive: publish the round and start the next one.
		g.result = g.buf
		g.buf = make([][]byte, g.size)
		g.count = 0
		close(done)
		g.done = make(chan struct{})
		res := g.result
		g.mu.Unlock()
		return res, nil
	}
	g.mu.Unlock()
	select {
	case <-done:
		g.mu.Lock()
		defer g.mu.Unlock()
		return m.resultFor(done)
	case <-ctx.Done():
		m.Fail(ctx.Err())
		return nil, fmt.Errorf("%w: %v", ErrFailed, ctx.Err())
	}
}

// resultFor returns the result of the round whose done channel was closed;
// called with the lock held. A completed round has already been replaced by
// the next (g.done != done), and its result stays until this rank joins the
// next round, which cannot complete without it; a round ended by a failure
// is still current.
func (m *Member) resultFor(done chan struct{}) ([][]byte, error) {
	g := m.g
	if g.err != nil && g.done == done {
		// The round was ended by a failure, not by completion.
		return nil, g.err
	}
	return g.result, nil
}
