package ckpt

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/ckpt/ckpt/internal/engine"
	"github.com/ckpt/ckpt/internal/jobenv"
	"github.com/ckpt/ckpt/internal/manifest"
	"github.com/ckpt/ckpt/internal/rank"
)

// Job is one rank's part in a parallel job: who it is, how it reaches the
// other ranks, its checkpoint store, and the collective decision when to
// checkpoint. Under `ckpt run` (or a launcher that starts ckpt's
// coordinator) Join connects to the job's coordinator; a process started
// on its own is a job of one rank, and every call works the same.
//
// A rank's loop:
//
//	job, _ := ckpt.Join(ctx, ckpt.JobOptions{})
//	defer job.Close()
//	if res, err := job.Restart(ctx); err == nil {
//		// read the state from res, step = saved step
//	}
//	for ; step < steps; step++ {
//		compute(step) // job.Send, job.Recv, job.AllGather ...
//		if need, _ := job.NeedCheckpoint(ctx, step); need {
//			job.Checkpoint(ctx, name, func(c *ckpt.Checkpoint) error { ... })
//		}
//		if job.Halting() {
//			break
//		}
//	}
//	job.Finish(ctx, "result line")
type Job struct {
	r     *rank.Runtime
	store *Store
}

// JobOptions configure Join. Zero fields take their defaults.
type JobOptions struct {
	// Store configures the checkpoint store; Join fills in the rank, the
	// size, the node and the Comm.
	Store Options
	// Interval is the checkpoint policy: "100steps", "30s", "auto",
	// "auto:6h" (with a known MTTI) or "none". Default CKPT_INTERVAL, else
	// "none" (the application decides itself).
	Interval string
	// FlushEvery: every FlushEvery-th checkpoint Checkpoint takes is also
	// flushed to the shared tier, if the store has one. Default
	// CKPT_FLUSH_EVERY ("K" or "auto:MTTI"), else 1.
	FlushEvery int
	// FlushAuto, if positive, lets the multi-level Markov model choose K
	// from the costs the job measures (SPEC-markov §4, §5): FlushAuto is
	// the mean time between failures the caches cannot survive.
	FlushAuto time.Duration
	// Coord, Token and Incarnation locate the job's coordinator and prove
	// membership (default CKPT_COORD, CKPT_TOKEN, CKPT_INCARNATION; Token
	// and Incarnation are read from the environment only when Coord is).
	// Without a coordinator the job is this one process.
	Coord, Token string
	Incarnation  uint64
	// Advertise is the host other ranks dial to reach this one (default
	// CKPT_ADVERTISE, else loopback when the coordinator is on loopback,
	// else this host's name).
	Advertise string
	// Staging lists staging servers (host:port, comma-separated; default
	// CKPT_STAGE). With them, flushes are non-blocking: each node's
	// lowest rank announces the checkpoint to its server, which pulls it
	// from the node's cache while the job goes on (paper 001). The store
	// still needs the shared tier, to restart from it.
	Staging string
	// FlushBusy says what a non-blocking flush that falls due does while
	// the previous one still runs: FlushSkip (default; every rank skips
	// it) or FlushWait (each node waits for its previous one). Default
	// CKPT_FLUSH_BUSY.
	FlushBusy string
	// Strategy is how the ranks checkpoint: "coordinated" (the default:
	// every rank at the same step, the messages in flight drained, and a
	// failure relaunches the whole job) or "uncoordinated" (each rank
	// alone, on its own schedule; every message is logged by its receiver
	// at its protector before the application sees it, and a failed rank
	// recovers alone while the others go on: docs/MESSAGE-LOGGING.md).
	// Default CKPT_STRATEGY (ckpt run --strategy).
	//
	// Under "uncoordinated": Send and Recv go through the message log;
	// Checkpoint is local to the rank (Path is not offered: write files
	// with Create); NeedCheckpoint decides per rank, without a round
	// (Fialho et al. 2011 eq. 11 for "auto"), and never halts; Restart
	// loads the rank's own checkpoint in a process the launcher restarted
	// alone, and starts from the beginning in a new launch (a whole-job
	// relaunch starts every rank from the beginning, with fresh logs);
	// Barrier and AllGather are built from the rank's logged messages
	// (rank 0 gathers the contributions and sends the set back), so a rank
	// recovering alone re-executes them against its log while the others
	// go on; their messages carry the tag CollectiveTag, which Send and
	// Recv refuse. They share each pair of ranks' channel with Send and Recv,
	// whose tags check and do not select: a message sent to or from
	// rank 0 before a collective must be received before it, or the
	// collective (or the Recv after it) fails on the other's tag — unlike
	// the coordinated strategy's, where Send, Barrier, Recv is allowed.
	Strategy string
}

// Join joins this process to its job: it connects to the coordinator named
// by the environment, starts the rank's endpoint for messages from other
// ranks and publishes its address, and opens the checkpoint store. It
// returns when every rank of the job has joined, however far apart they
// started; ctx and the coordinator's join timeout bound the wait.
func Join(ctx context.Context, opts JobOptions) (*Job, error) {
	so := opts.Store
	cfg, err := rank.Configure(rank.Options{Set: jobenv.Env{Rank: so.Rank, Size: so.Size, Node: so.Node,
		Coord: opts.Coord, Token: opts.Token, Incarnation: opts.Incarnation, Advertise: opts.Advertise,
		Stage: jobenv.ParseStage(opts.Staging), FlushBusy: opts.FlushBusy, Strategy: opts.Strategy},
		Interval: opts.Interval, FlushEvery: opts.FlushEvery, FlushAuto: opts.FlushAuto}, os.LookupEnv)
	if err != nil {
		return nil, configError(err)
	}
	r, err := rank.Join(ctx, cfg)
	if err != nil {
		return nil, err
	}
	// The store takes the identity the runtime resolved and, in a job of
	// several ranks, reaches them through the job's coordinator and peers.
	so.Rank, so.Size = cfg.Rank, cfg.Size
	if c := r.Comm(); c != nil {
		so.Node, so.Comm = r.Node(), commOf{c}
	}
	s, err := Open(so)
	if err != nil {
		r.Close()
		return nil, err
	}
	r.Attach(s.eng)
	s.alone = r.Uncoordinated()
	if err := r.StartStrategy(ctx); err != nil {
		r.Close()
		s.Close()
		return nil, err
	}
	return &Job{r: r, store: s}, nil
}

// Rank is this rank; Size the number of ranks; Node the node it runs on.
func (j *Job) Rank() int    { return j.r.Rank() }
func (j *Job) Size() int    { return j.r.Size() }
func (j *Job) Node() string { return j.r.Node() }

// Incarnation counts the job's launches: 0 for the first, one more for
// each relaunch after a failure. Checkpoint names that include it never
// collide with one a failed launch left behind.
func (j *Job) Incarnation() uint64 { return j.r.Incarnation() }

// Store is the job's checkpoint store, for applications that manage
// checkpoints themselves.
func (j *Job) Store() *Store { return j.store }

// CollectiveTag is reserved, under the uncoordinated strategy, for the
// messages of Barrier and AllGather: Send and Recv refuse it.
const CollectiveTag = rank.CollectiveTag

// Barrier waits until every rank reached it.
func (j *Job) Barrier(ctx context.Context) error { return j.r.Barrier(ctx) }

// AllGather contributes data and returns every rank's, indexed by rank
// (collective). The result must not be modified.
func (j *Job) AllGather(ctx context.Context, data []byte) ([][]byte, error) {
	return j.r.AllGather(ctx, data)
}

// Publish stores value under key in the job's key–value service.
func (j *Job) Publish(ctx context.Context, key string, value []byte) error {
	return j.r.Publish(ctx, key, value)
}

// Lookup returns key's value, waiting until some rank publishes it.
func (j *Job) Lookup(ctx context.Context, key string) ([]byte, error) { return j.r.Lookup(ctx, key) }

// Send sends msg to rank to. Messages between two ranks arrive in order;
// the tag must match the receiver's (it checks, it does not select). Ranks
// are virtual: after a relaunch on other hosts or ports they find each
// other again through the coordinator.
func (j *Job) Send(ctx context.Context, to int, tag uint64, msg []byte) error {
	return j.r.Send(ctx, to, tag, msg)
}

// Recv receives the next message from rank from into buf (if it fits).
func (j *Job) Recv(ctx context.Context, from int, tag uint64, buf []byte) ([]byte, error) {
	return j.r.Recv(ctx, from, tag, buf)
}

// NeedCheckpoint tells whether to checkpoint at step; every rank gets the
// same answer for the same step. Call it once per step, on every rank, with
// steps that increase. Most calls return at once without any
// communication; at decision steps (about once a second, at every step a
// checkpoint falls due, and at the step after a checkpoint, to report its
// cost) the ranks ask the coordinator together, which
// applies the job's policy to the slowest rank's measurements.
func (j *Job) NeedCheckpoint(ctx context.Context, step int64) (bool, error) {
	return j.r.NeedCheckpoint(ctx, step)
}

// Halting reports that the job was asked to halt: the checkpoint
// NeedCheckpoint just asked for is the last; after it, Finish.
func (j *Job) Halting() bool { return j.r.Halting() }

// Checkpoint takes a checkpoint named name, collectively: every rank calls
// it at the same step, with no message sends in progress. Messages in
// flight between ranks are captured with it (and delivered again after a
// restart); save writes the rank's files.
func (j *Job) Checkpoint(ctx context.Context, name string, save func(c *Checkpoint) error) error {
	if j.r.Uncoordinated() {
		if err := manifest.ValidName(name); err != nil {
			return fmt.Errorf("ckpt: checkpoint %q: %w", name, err)
		}
		return j.r.CheckpointAlone(ctx, func() ([]byte, error) {
			oc := &ownCheckpoint{name: name}
			if err := save(&Checkpoint{own: oc}); err != nil {
				return nil, fmt.Errorf("ckpt: checkpoint %q: %w", name, err)
			}
			return oc.encode()
		})
	}
	return engineError(j.r.Checkpoint(ctx, name, func(c *engine.Checkpoint) error { return save(&Checkpoint{c: c}) }))
}

// Restart restores the newest checkpoint the job can recover (see
// Store.Restart) and delivers again the messages that were in flight when
// it was taken. It returns ErrNoCheckpoint on a fresh start.
func (j *Job) Restart(ctx context.Context) (*Restored, error) {
	if j.r.Uncoordinated() {
		state, err := j.r.RestartAlone(ctx)
		if err != nil {
			return restored(nil, err)
		}
		return restoredOwn(state)
	}
	return restored(j.r.Restart(ctx))
}

// FlushStats reports this launch's flushes so far.
func (j *Job) FlushStats() FlushStats { return j.r.FlushStats() }

// Finish ends the rank's part in the job cleanly; rank 0 reports result
// (one line) to the launcher. The job is finished when every rank has.
func (j *Job) Finish(ctx context.Context, result string) error { return j.r.Finish(ctx, result) }

// Close releases the rank's resources. A rank that closes without Finish
// counts as failed.
func (j *Job) Close() error { return errors.Join(j.r.Close(), j.store.Close()) }
