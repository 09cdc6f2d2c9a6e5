// Package comm is what the example workloads need from a job runtime: one
// interface, satisfied by the module root's ckpt.Job, and by the ranks as
// goroutines of package commtest in the examples' tests.
package comm

import "context"

// Comm is what an example needs from the job runtime. ckpt.Job satisfies
// it; the tests use ranks that run as goroutines (package commtest). A
// solver calls it from the goroutine that calls Step or Checksum, one call
// at a time.
type Comm interface {
	// Rank is this rank's index in [0, Size).
	Rank() int
	// Size is the number of ranks in the job.
	Size() int
	// Send sends msg to rank to. Messages are FIFO per ordered pair of
	// ranks. Send does not retain msg after it returns. It may return
	// before the receiver has called Recv, or block until it has: the
	// solver orders its calls so that either is free of deadlock.
	Send(ctx context.Context, to int, tag uint64, msg []byte) error
	// Recv returns the next message from rank from. Its tag must equal
	// tag: Recv checks, it does not select, and a different tag is an
	// error. The message is stored into buf if it fits, and the returned
	// slice is the message.
	Recv(ctx context.Context, from int, tag uint64, buf []byte) ([]byte, error)
	// AllGather contributes data and returns every rank's data indexed by
	// rank. It is collective: every rank calls it, in the same order
	// relative to the other collectives. The caller does not modify the
	// returned slices.
	AllGather(ctx context.Context, data []byte) ([][]byte, error)
}
