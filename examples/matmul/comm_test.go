package matmul

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
)

// localJob is a job whose ranks are goroutines of the test: a channel per
// ordered pair of ranks carries messages, and all-gathers meet in rounds.
// With buffer 0 a Send waits for the matching Recv, the strictest
// semantics Comm allows. A failure aborts the job: every blocked or later
// call then fails, as the runtime's abort does.
type localJob struct {
	size  int
	links [][]chan message // links[from][to]

	abort chan struct{}
	once  sync.Once
	cause error

	mu     sync.Mutex
	rounds map[int]*round // all-gathers in progress by sequence number
	ranks  []Comm
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

var errAborted = errors.New("job aborted")

func newLocalJob(size, buffer int) *localJob {
	j := &localJob{
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

func (j *localJob) fail(err error) {
	j.once.Do(func() {
		j.cause = err
		close(j.abort)
	})
}

func (j *localJob) aborted() error { return fmt.Errorf("%w: %v", errAborted, j.cause) }

// comms returns the ranks' Comms, the same ones on every call.
func (j *localJob) comms() []Comm {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.ranks == nil {
		j.ranks = make([]Comm, j.size)
		for r := range j.ranks {
			j.ranks[r] = &localComm{job: j, rank: r}
		}
	}
	return j.ranks
}

type localComm struct {
	job  *localJob
	rank int
	seq  int // all-gathers this rank has started
}

var _ Comm = (*localComm)(nil)

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

// faultyComm fails the call numbered failAt (counting Send, Recv and
// AllGather calls from 0) and aborts the job, as a rank whose connection
// breaks does.
type faultyComm struct {
	Comm
	job    *localJob
	failAt int
	calls  int
}

var errInjected = errors.New("injected failure")

func (f *faultyComm) tick() error {
	f.calls++
	if f.calls-1 == f.failAt {
		err := fmt.Errorf("rank %d call %d: %w", f.Rank(), f.failAt, errInjected)
		f.job.fail(err)
		return err
	}
	return nil
}

func (f *faultyComm) Send(ctx context.Context, to int, tag uint64, msg []byte) error {
	if err := f.tick(); err != nil {
		return err
	}
	return f.Comm.Send(ctx, to, tag, msg)
}

func (f *faultyComm) Recv(ctx context.Context, from int, tag uint64, buf []byte) ([]byte, error) {
	if err := f.tick(); err != nil {
		return nil, err
	}
	return f.Comm.Recv(ctx, from, tag, buf)
}

func (f *faultyComm) AllGather(ctx context.Context, data []byte) ([][]byte, error) {
	if err := f.tick(); err != nil {
		return nil, err
	}
	return f.Comm.AllGather(ctx, data)
}

// run runs body on every rank of job, each in its own goroutine, and
// returns their errors by rank. The first error aborts the job so that no
// rank waits for a failed one.
func run(job *localJob, comms []Comm, body func(rank int, c Comm) error) []error {
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

// runOK is run that fails the test on any error.
func runOK(t testing.TB, job *localJob, body func(rank int, c Comm) error) {
	t.Helper()
	for r, err := range run(job, job.comms(), body) {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
}
