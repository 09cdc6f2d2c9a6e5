// Package commtest runs the ranks of an example as goroutines of a test:
// a comm.Comm per rank over channels, with failure injection.
package commtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/ckpt/ckpt/examples/comm"
)

// Job is a job whose ranks are goroutines of the test: a channel per
// ordered pair of ranks carries messages, and all-gathers meet in rounds.
// With buffer 0 a Send waits for the matching Recv, the strictest
// semantics Comm allows. A failure aborts the job: every blocked or later
// call then fails, as the runtime's abort does.
type Job struct {
	size  int
	links [][]chan message // links[from][to]

	abort chan struct{}
	once  sync.Once
	cause error

	mu     sync.Mutex
	rounds map[int]*round // all-gathers in progress by sequence number
	ranks  []comm.Comm
}

type message struct {
	tag  uint64
	data []byte
}

type round struct {
	data [][]byte
	n    int
	done chan struct{}
}

// ErrAborted wraps the errors of calls made after the job failed.
var ErrAborted = errors.New("job aborted")

func New(size, buffer int) *Job {
	j := &Job{
		size:   size,
		links:  make([][]chan message, size),
		abort:  make(chan struct{}),
		rounds: map[int]*round{},
	}
	for from := range size {
		j.links[from] = make([]chan message, size)
		for to := range size {
			j.links[from][to] = make(chan message, buffer)
		}
	}
	return j
}

func (j *Job) fail(err error) {
	j.once.Do(func() {
		j.cause = err
		close(j.abort)
	})
}

func (j *Job) aborted() error { return fmt.Errorf("%w: %v", ErrAborted, j.cause) }

// Comms returns the ranks' Comms, the same ones on every call.
func (j *Job) Comms() []comm.Comm {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.ranks == nil {
		j.ranks = make([]comm.Comm, j.size)
		for r := range j.ranks {
			j.ranks[r] = &localComm{job: j, rank: r}
		}
	}
	return j.ranks
}

type localComm struct {
	job  *Job
	rank int
	seq  int // all-gathers this rank has started
}

var _ comm.Comm = (*localComm)(nil)

func (c *localComm) Rank() int { return c.rank }
func (c *localComm) Size() int { return c.job.size }

func (c *localComm) peer(r int) error {
	if r < 0 || r >= c.job.size || r == c.rank {
		return fmt.Errorf("rank %d: bad peer %d", c.rank, r)
	}
	return nil
}

func (c *localComm) Send(ctx context.Context, to int, tag uint64, msg []byte) error {
	if err := c.peer(to); err != nil {
		return err
	}
	select {
	case c.job.links[c.rank][to] <- message{tag, bytes.Clone(msg)}:
		return nil
	case <-c.job.abort:
		return c.job.aborted()
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *localComm) Recv(ctx context.Context, from int, tag uint64, buf []byte) ([]byte, error) {
	if err := c.peer(from); err != nil {
		return nil, err
	}
	select {
	case m := <-c.job.links[from][c.rank]:
		if m.tag != tag {
			return nil, fmt.Errorf("rank %d: message from rank %d has tag %d, want %d", c.rank, from, m.tag, tag)
		}
		if len(m.data) <= cap(buf) {
			return append(buf[:0], m.data...), nil
		}
		return m.data, nil
	case <-c.job.abort:
		return nil, c.job.aborted()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *localComm) AllGather(ctx context.Context, data []byte) ([][]byte, error) {
	j := c.job
	j.mu.Lock()
	r := j.rounds[c.seq]
	if r == nil {
		r = &round{data: make([][]byte, j.size), done: make(chan struct{})}
		j.rounds[c.seq] = r
	}
	r.data[c.rank] = bytes.Clone(data)
	if r.n++; r.n == j.size {
		delete(j.rounds, c.seq)
		close(r.done)
	}
	j.mu.Unlock()
	c.seq++
	select {
	case <-r.done:
		return slices.Clone(r.data), nil
	case <-j.abort:
		return nil, j.aborted()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Faulty fails the call numbered failAt (counting Send, Recv and
// AllGather calls from 0) and aborts the job, as a rank whose connection
// breaks does.
type Faulty struct {
	comm.Comm
	job    *Job
	failAt int
	calls  int
}

// ErrInjected is the error of the call a Faulty fails.
var ErrInjected = errors.New("injected failure")

// NewFaulty wraps rank c of job so that its call numbered failAt fails.
func NewFaulty(c comm.Comm, job *Job, failAt int) *Faulty {
	return &Faulty{Comm: c, job: job, failAt: failAt}
}

func (f *Faulty) tick() error {
	f.calls++
	if f.calls-1 == f.failAt {
		err := fmt.Errorf("rank %d call %d: %w", f.Rank(), f.failAt, ErrInjected)
		f.job.fail(err)
		return err
	}
	return nil
}

func (f *Faulty) Send(ctx context.Context, to int, tag uint64, msg []byte) error {
	if err := f.tick(); err != nil {
		return err
	}
	return f.Comm.Send(ctx, to, tag, msg)
}

func (f *Faulty) Recv(ctx context.Context, from int, tag uint64, buf []byte) ([]byte, error) {
	if err := f.tick(); err != nil {
		return nil, err
	}
	return f.Comm.Recv(ctx, from, tag, buf)
}

func (f *Faulty) AllGather(ctx context.Context, data []byte) ([][]byte, error) {
	if err := f.tick(); err != nil {
		return nil, err
	}
	return f.Comm.AllGather(ctx, data)
}

// Run runs body on every rank of job, each in its own goroutine, and
// returns their errors by rank. The first error aborts the job so that no
// rank waits for a failed one.
func Run(job *Job, comms []comm.Comm, body func(rank int, c comm.Comm) error) []error {
	errs := make([]error, job.size)
	var wg sync.WaitGroup
	for r := range job.size {
		wg.Go(func() {
			if errs[r] = body(r, comms[r]); errs[r] != nil {
				job.fail(errs[r])
			}
		})
	}
	wg.Wait()
	return errs
}

// RunOK is run that fails the test on any error.
func RunOK(t testing.TB, job *Job, body func(rank int, c comm.Comm) error) {
	t.Helper()
	for r, err := range Run(job, job.Comms(), body) {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
}
