// Package localcomm connects the ranks of a job that run as goroutines of
// one process: collective calls through group.Local, and the transports of
// redundancy sets through in-process channels (redundancy/inproc). The
// root's LocalJob hands these to applications and tests; the benchmarks
// drive the engine with them directly.
package localcomm

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/ckpt/ckpt/internal/group"
	"github.com/ckpt/ckpt/internal/redundancy"
	"github.com/ckpt/ckpt/internal/redundancy/inproc"
)

// Comm is one rank's connection to the others of its local job.
type Comm struct {
	*group.Member
	job *job
}

// job holds the in-process networks of the job's sets, one per set and
// epoch, created by the first member that asks for it.
type job struct {
	mu   sync.Mutex
	nets map[string]*inproc.Network
}

// Job returns the Comms of a job of n ranks, rank i using the i-th.
func Job(n int) []*Comm {
	j := &job{nets: map[string]*inproc.Network{}}
	out := make([]*Comm, n)
	for i, m := range group.Local(n) {
		out[i] = &Comm{Member: m, job: j}
	}
	return out
}

// SetTransport connects this rank to the other members of a set; every
// member calls it with the same members and epoch.
func (c *Comm) SetTransport(ctx context.Context, members []int, epoch uint64) (redundancy.Transport, io.Closer, error) {
	me := slices.Index(members, c.Rank())
	if me < 0 {
		return nil, nil, fmt.Errorf("rank %d is not a member of set %v", c.Rank(), members)
	}
	key := fmt.Sprint(epoch, members)
	c.job.mu.Lock()
	nw, ok := c.job.nets[key]
	if !ok {
		nw = inproc.New(len(members))
		c.job.nets[key] = nw
	}
	c.job.mu.Unlock()
	ep := nw.Endpoint(me)
	return ep, ep, nil
}

// Solo is the Comm of a single process: collectives return at once, and
// there are no set peers.
type Solo struct{ group.Solo }

func (Solo) SetTransport(ctx context.Context, members []int, epoch uint64) (redundancy.Transport, io.Closer, error) {
	return nil, nil, fmt.Errorf("a single process has no redundancy set peers (members %v)", members)
}
