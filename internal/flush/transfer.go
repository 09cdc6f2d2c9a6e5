package flush

import (
	"context"
	"fmt"
	"time"
)

// State is where one checkpoint's transfer to the shared tier stands.
// The staging protocol (internal/stage) sends it as one byte: the values
// are part of that protocol, never renumber them.
type State uint8

const (
	Pending   State = iota // started, not yet durable
	Durable                // this node's part is durable on the shared tier
	Committed              // the shared-tier manifest is written: the checkpoint exists there
	Failed                 // abandoned; the reason says why, nothing of it is visible on the tier
)

func (s State) String() string {
	switch s {
	case Pending:
		return "pending"
	case Durable:
		return "durable"
	case Committed:
		return "committed"
	case Failed:
		return "failed"
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

// Transfer is the one lifecycle of a flush, whichever way the bytes go
// (the model is AXL's, SCR's transfer library: create, dispatch, test,
// wait, cancel, resume). A blocking transfer (the ranks copy their own
// files, Moody et al. 2010) is over when Start returns; a staged one (a
// staging server pulls the checkpoint while the application computes,
// Sato et al. 2012) is Pending until the server reports it durable.
type Transfer interface {
	// Start begins the flush of committed checkpoint name. An error means
	// it did not start, or (blocking) that it failed.
	Start(ctx context.Context, name string) error
	// State reports a flush started here: ok is false for a name never
	// started (or long forgotten); reason says why a Failed one failed.
	State(name string) (st State, reason string, ok bool)
	// Latency is how long a finished flush took from its start.
	Latency(name string) (time.Duration, bool)
	// Busy tells whether a flush started here is still Pending.
	Busy() bool
	// Wait waits until none is Pending; an error if one can never finish.
	Wait(ctx context.Context) error
	// Cancel stops following the transfers: nothing more is sent from
	// here. What a staging server journaled stays with it and is taken up
	// again by Resume (or by a client of a relaunched rank).
	Cancel() error
	// Resume takes up again the transfers Cancel left, where a staging
	// server's journal allows it; a blocking transfer has nothing to
	// resume.
	Resume(ctx context.Context) error
}
