package transfer

import (
	"context"
	"sync"
	"time"

	"github.com/ckpt/ckpt/internal/flush"
)

// Flusher copies a committed checkpoint to the shared tier collectively,
// returning once it is durable there: engine.Engine.Flush.
type Flusher interface {
	Flush(ctx context.Context, name string) error
}

// Blocking is the flush the ranks do themselves: Start returns when the
// checkpoint is committed on the shared tier, or failed (nothing of it
// visible there: the engine writes the shared manifest last). It is
// collective, as the Flusher is; nothing runs between calls, so Wait,
// Cancel and Resume have nothing to do (cancelling Start's context stops
// the copy under way).
type Blocking struct {
	f   Flusher
	now func() time.Time

	mu   sync.Mutex
	done map[string]outcome
}

type outcome struct {
	st      flush.State
	reason  string
	latency time.Duration
}

// blockingKeep bounds the outcomes a Blocking remembers.
const blockingKeep = 64

// NewBlocking returns the blocking transfer over f.
func NewBlocking(f Flusher) *Blocking {
	return &Blocking{f: f, now: time.Now, done: map[string]outcome{}}
}

var _ flush.Transfer = (*Blocking)(nil)

// Start copies checkpoint name to the shared tier and returns the copy's
// error.
func (b *Blocking) Start(ctx context.Context, name string) error {
	start := b.now()
	err := b.f.Flush(ctx, name)
	o := outcome{st: flush.Committed, latency: b.now().Sub(start)}
	if err != nil {
		o.st, o.reason = flush.Failed, err.Error()
	}
	b.mu.Lock()
	if len(b.done) >= blockingKeep {
		clear(b.done) // the caller follows one flush at a time
	}
	b.done[name] = o
	b.mu.Unlock()
	return err
}

// State reports a flush Start ran: Committed or Failed.
func (b *Blocking) State(name string) (flush.State, string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	o, ok := b.done[name]
	return o.st, o.reason, ok
}

// Latency is how long Start took.
func (b *Blocking) Latency(name string) (time.Duration, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	o, ok := b.done[name]
	return o.latency, ok
}

// Busy is false: no copy outlives Start.
func (b *Blocking) Busy() bool { return false }

// Wait returns at once: no copy outlives Start.
func (b *Blocking) Wait(ctx context.Context) error { return ctx.Err() }

// Cancel has nothing to stop between calls.
func (b *Blocking) Cancel() error { return nil }

// Resume has nothing to take up: a failed blocking flush left nothing
// behind to resume from.
func (b *Blocking) Resume(ctx context.Context) error { return nil }
