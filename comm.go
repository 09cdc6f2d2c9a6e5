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
// launcher needs none. Programs with a communicator of their own (MPI,
// another runtime) implement it.
//
// Collective calls must be made by every rank in the same order. They must
// not wait forever for a rank that died: once a rank fails, every pending
// and later collective call, and every transport of its sets, should
// return an error.
type Comm interface {
	// Rank is this rank, in [0, Size).
	Rank() int
	// Size is the job's number of ranks.
	Size() int
	// AllGather contributes data and returns every rank's contribution,
	// indexed by rank. Callers do not modify the returned slices, which
	// may be shared between ranks; data is not modified.
	AllGather(ctx context.Context, data []byte) ([][]byte, error)
	// SetTransport connects this rank to the other members of a redundancy
	// set. members are job ranks in set order and include this rank; every
	// member calls it with the same members and the same epoch, which tells
	// uses apart (each commit and each rebuild has its own). Closing the
	// returned Closer ends this member's participation: peers still waiting
	// for it then fail instead of hanging.
	SetTransport(ctx context.Context, members []int, epoch uint64) (Transport, io.Closer, error)
}

// Transport is one member's connection to the other members of a
// redundancy set, through which parity is encoded and lost members are
// rebuilt. Members are the indices 0..n−1 of the set (the order of
// SetTransport's members), not ranks. An implementation keeps this
// contract:
//
//  1. Ordering: messages from one member to another arrive in the order
//     sent (one FIFO stream per ordered pair). Recv(from, tag) takes the
//     next message of the stream from→me; the tag does not select, it
//     checks: a next message with another tag is an error, and the stream
//     is then broken.
//  2. Buffers: Send does not retain msg once it returns. Recv stores the
//     message in buf if it fits (cap(buf)), else allocates; the returned
//     slice belongs to the caller. Messages may be empty.
//  3. Flow control: each ordered pair buffers a bounded amount (at least
//     one message); Send blocks while the receiver's buffer is full.
//  4. Failure: Send and Recv return promptly with an error when ctx is
//     done, when this endpoint is closed, or when the peer closed or
//     failed (Recv first delivers what the peer sent before). They never
//     block forever on a dead peer.
//  5. Concurrency: calls for different peers may run concurrently; calls
//     for the same peer and direction do not.
type Transport interface {
	Send(ctx context.Context, to int, tag uint64, msg []byte) error
	Recv(ctx context.Context, from int, tag uint64, buf []byte) ([]byte, error)
}

// engineComm hands a Comm to the engine, whose transports are the
// redundancy package's (the same methods).
type engineComm struct{ Comm }

func (c engineComm) SetTransport(ctx context.Context, members []int, epoch uint64) (redundancy.Transport, io.Closer, error) {
	t, closer, err := c.Comm.SetTransport(ctx, members, epoch)
	if t == nil {
		// A nil Transport must stay nil, not become a non-nil interface.
		return nil, closer, err
	}
	return t, closer, err
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

func (c *localComm) SetTransport(ctx context.Context, members []int, epoch uint64) (Transport, io.Closer, error) {
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

func (solo) SetTransport(ctx context.Context, members []int, epoch uint64) (Transport, io.Closer, error) {
	return nil, nil, fmt.Errorf("a single process has no redundancy set peers (members %v)", members)
}
