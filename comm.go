package ckpt

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

// Comm is how one rank talks to the other ranks of its job: the collective
// calls of a checkpoint, and point-to-point transports for redundancy sets.
// The job runtime provides one over the network; LocalJob provides them for
// ranks that run as goroutines of one process; a single process with no
// launcher needs none.
type Comm interface {
	group.Group
	// SetTransport connects this rank to the other members of a redundancy
	// set. members are job ranks in set order and include this rank; every
	// member calls it with the same members and the same epoch, which tells
	// uses apart (each commit and each rebuild has its own). Closing the
	// returned Closer ends this member's participation: peers still waiting
	// for it then fail instead of hanging.
	SetTransport(ctx context.Context, members []int, epoch uint64) (redundancy.Transport, io.Closer, error)
}

// LocalJob returns the Comms of a job of n ranks that run as goroutines of
// this process, rank i using the i-th.
func LocalJob(n int) []Comm {
	job := &localJob{nets: map[string]*inproc.Network{}}
	out := make([]Comm, n)
	for i, m := range group.Local(n) {
		out[i] = &localComm{Member: m, job: job}
	}
	return out
}

type localJob struct {
	mu   sync.Mutex
	nets map[string]*inproc.Network
}

type localComm struct {
	*group.Member
	job *localJob
}

func (c *localComm) SetTransport(ctx context.Context, members []int, epoch uint64) (redundancy.Transport, io.Closer, error) {
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

// Fail makes the rank fail as a crash would: every collective call and set
// transport of the job then errs instead of waiting for it.
func (c *localComm) Fail(reason error) { c.Member.Fail(reason) }

// solo is the Comm of a single process.
type solo struct{ group.Solo }

func (solo) SetTransport(ctx context.Context, members []int, epoch uint64) (redundancy.Transport, io.Closer, error) {
	return nil, nil, fmt.Errorf("a single process has no redundancy set peers (members %v)", members)
}
