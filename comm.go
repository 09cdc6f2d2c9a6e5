package ckpt

import (
	"context"
	"io"

	"github.com/ckpt/ckpt/internal/engine"
	"github.com/ckpt/ckpt/internal/localcomm"
	"github.com/ckpt/ckpt/internal/redundancy"
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
	return c.Comm.SetTransport(ctx, members, epoch)
}

// commOf is an engine's Comm as the public one: a job's, over its
// coordinator and peers.
type commOf struct{ engine.Comm }

func (c commOf) SetTransport(ctx context.Context, members []int, epoch uint64) (Transport, io.Closer, error) {
	return c.Comm.SetTransport(ctx, members, epoch)
}

// LocalJob returns the Comms of a job of n ranks that run as goroutines of
// this process, rank i using the i-th.
func LocalJob(n int) []Comm {
	out := make([]Comm, n)
	for i, c := range localcomm.Job(n) {
		out[i] = &localComm{c}
	}
	return out
}

// localComm is a rank of a LocalJob. Tests make it fail as a crash would
// (Fail): every collective call and set transport of the job then errs
// instead of waiting for it.
type localComm struct{ *localcomm.Comm }

func (c *localComm) SetTransport(ctx context.Context, members []int, epoch uint64) (Transport, io.Closer, error) {
	return c.Comm.SetTransport(ctx, members, epoch)
}

// solo is the Comm of a single process.
type solo struct{ localcomm.Solo }

func (s solo) SetTransport(ctx context.Context, members []int, epoch uint64) (Transport, io.Closer, error) {
	return s.Solo.SetTransport(ctx, members, epoch)
}
