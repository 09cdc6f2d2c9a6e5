// Package ranks holds the rank programs of the examples: each joins its
// job through ckpt's rank API, restarts from the newest checkpoint the job
// can recover, computes with checkpoints as the job's policy asks for
// them, and reports a checksum of its result. `ckpt example himeno` and
// `ckpt example matmul` run them; `ckpt run` starts them as the ranks of a
// job, and `ckpt demo` does both with failures injected.
//
// Together they are how an application uses ckpt: the solvers
// (packages himeno and matmul) know nothing of checkpointing beyond
// writing and reading their state.
package ranks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/ckpt/ckpt"
	"github.com/ckpt/ckpt/examples/himeno"
	"github.com/ckpt/ckpt/examples/matmul"
)

// Report is what a rank program did.
type Report struct {
	// Result is the job's result line (the same on every rank).
	Result string
	// RestoredFrom is where the state came from: "none" (a fresh start),
	// "cache", "rebuild" or "shared"; Checkpoint its name.
	RestoredFrom, Checkpoint string
	// Checkpoints taken, and the time they took (this rank's view).
	Checkpoints   int
	CheckpointDur time.Duration
	// FailedCheckpoints failed on every rank (ckpt.ErrCheckpointFailed, a
	// full disk): the job went on from its state; LastFailure says why.
	FailedCheckpoints int
	LastFailure       error
	// Halted is true if the job stopped early on a halt request.
	Halted bool
}

// stepper is what the loop needs from a solver.
type stepper interface {
	step(ctx context.Context, job *ckpt.Job) error
	progress() int64
	done() bool
	io.WriterTo
	io.ReaderFrom
	result(ctx context.Context, job *ckpt.Job) (string, error)
	sum(ctx context.Context, job *ckpt.Job) (uint64, error)
}

// TraceEvent is one line of a rank program's trace (JSON, one object per
// line): "restored" after a restore (From: cache, rebuild or shared),
// "started" after a start from scratch, "checkpoint" once a checkpoint is
// committed, "done" at the end. Checksum is the solver's checksum of its
// state at Step (hex, as the result line prints it); At is the wall clock
// in Unix nanoseconds, so that a reader can time a recovery.
type TraceEvent struct {
	Event       string `json:"event"`
	Step        int64  `json:"step"`
	Checksum    string `json:"checksum"`
	From        string `json:"from,omitempty"`
	Checkpoint  string `json:"checkpoint,omitempty"`
	Incarnation uint64 `json:"incarnation"`
	At          int64  `json:"t"`
}

// tracer writes the trace when one is asked for. The checksum is a
// collective, so every rank of a traced job computes it at the same
// points; only the rank whose writer is not io.Discard (rank 0) has
// anything to write.
type tracer struct{ w io.Writer }

func (t tracer) record(ctx context.Context, job *ckpt.Job, s stepper, e TraceEvent) error {
	if t.w == nil {
		return nil
	}
	sum, err := s.sum(ctx, job)
	if err != nil {
		return err
	}
	e.Step, e.Checksum, e.Incarnation, e.At = s.progress(), fmt.Sprintf("%016x", sum), job.Incarnation(), time.Now().UnixNano()
	line, err := json.Marshal(e)
	if err != nil {
		return err
	}
	// One write per line: a reader never sees half of one unless the
	// process dies inside the write, and it skips such a tail.
	_, err = t.w.Write(append(line, '\n'))
	return err
}

// run is the loop every example shares; trace (nil: none) gets the
// events TraceEvent describes.
func run(ctx context.Context, job *ckpt.Job, app string, s stepper, trace io.Writer) (Report, error) {
	var rep Report
	tr := tracer{trace}
	const stateFile = "state"
	res, err := job.Restart(ctx)
	switch {
	case errors.Is(err, ckpt.ErrNoCheckpoint):
		rep.RestoredFrom = "none"
	case err != nil:
		return rep, err
	default:
		rep.RestoredFrom, rep.Checkpoint = res.Source, res.Name()
		rd, err := res.Open(stateFile)
		if err != nil {
			return rep, err
		}
		_, err = s.ReadFrom(rd)
		rd.Close()
		if err != nil {
			return rep, fmt.Errorf("%s: restore from %s: %w", app, res.Name(), err)
		}
	}
	started := TraceEvent{Event: "restored", From: rep.RestoredFrom, Checkpoint: rep.Checkpoint}
	if rep.RestoredFrom == "none" {
		started = TraceEvent{Event: "started"}
	}
	if err := tr.record(ctx, job, s, started); err != nil {
		return rep, err
	}
	for !s.done() {
		if err := s.step(ctx, job); err != nil {
			return rep, err
		}
		need, err := job.NeedCheckpoint(ctx, s.progress())
		if err != nil {
			return rep, err
		}
		if need {
			start := time.Now()
			name := fmt.Sprintf("%s-%08d.%d", app, s.progress(), job.Incarnation())
			err := job.Checkpoint(ctx, name, func(c *ckpt.Checkpoint) error {
				f, err := c.Create(stateFile)
				if err != nil {
					return err
				}
				if _, err := s.WriteTo(f); err != nil {
					f.Close()
					return err
				}
				return f.Close()
			})
			switch {
			case errors.Is(err, ckpt.ErrCheckpointFailed):
				// Every rank failed it together and kept none of it: the
				// previous checkpoint stays current, and the job goes on
				// to the next one the policy asks for.
				rep.FailedCheckpoints++
				rep.LastFailure = err
			case err != nil:
				return rep, err
			default:
				rep.Checkpoints++
				rep.CheckpointDur += time.Since(start)
				if err := tr.record(ctx, job, s, TraceEvent{Event: "checkpoint", Checkpoint: name}); err != nil {
					return rep, err
				}
			}
		}
		if job.Halting() {
			rep.Halted = true
			break
		}
	}
	if rep.Halted {
		rep.Result = fmt.Sprintf("%s halted after step %d", app, s.progress())
	} else if rep.Result, err = s.result(ctx, job); err != nil {
		return rep, err
	} else if err := tr.record(ctx, job, s, TraceEvent{Event: "done"}); err != nil {
		return rep, err
	}
	return rep, job.Finish(ctx, rep.Result)
}

// HimenoConfig is a Himeno run.
type HimenoConfig struct {
	Size       himeno.Config
	Iterations int
	// Trace, if not nil, gets the events TraceEvent describes; every rank
	// of a traced job needs one (io.Discard on all but one).
	Trace io.Writer
}

// Himeno runs the distributed Himeno benchmark as this rank of job.
func Himeno(ctx context.Context, job *ckpt.Job, cfg HimenoConfig) (Report, error) {
	if cfg.Iterations < 1 {
		return Report{}, ckpt.ConfigError(fmt.Errorf("himeno: %d iterations: need at least 1", cfg.Iterations))
	}
	s, err := himeno.New(cfg.Size, job.Rank(), job.Size())
	if err != nil {
		// The grid does not fit the ranks: every relaunch would fail so.
		return Report{}, ckpt.ConfigError(err)
	}
	return run(ctx, job, "himeno", &himenoStepper{Solver: s, iters: cfg.Iterations}, cfg.Trace)
}

type himenoStepper struct {
	*himeno.Solver
	iters int
	gosa  float64
}

func (h *himenoStepper) step(ctx context.Context, job *ckpt.Job) (err error) {
	h.gosa, err = h.Step(ctx, job)
	return err
}
func (h *himenoStepper) progress() int64 { return int64(h.Iteration()) }
func (h *himenoStepper) done() bool      { return h.Iteration() >= h.iters }
func (h *himenoStepper) sum(ctx context.Context, job *ckpt.Job) (uint64, error) {
	return h.Checksum(ctx, job)
}
func (h *himenoStepper) result(ctx context.Context, job *ckpt.Job) (string, error) {
	sum, err := h.Checksum(ctx, job)
	if err != nil {
		return "", err
	}
	// gosa of the last step is not part of the saved state; the checksum
	// of p is, and decides equality.
	return fmt.Sprintf("himeno %s iterations=%d checksum=%016x", h.Config(), h.Iteration(), sum), nil
}

// MatmulConfig is a matrix multiplication run.
type MatmulConfig struct {
	Config matmul.Config
	// Trace is as HimenoConfig's.
	Trace io.Writer
}

// Matmul runs the distributed matrix multiplication as this rank of job.
func Matmul(ctx context.Context, job *ckpt.Job, cfg MatmulConfig) (Report, error) {
	s, err := matmul.New(cfg.Config, job.Rank(), job.Size())
	if err != nil {
		return Report{}, err
	}
	return run(ctx, job, "matmul", &matmulStepper{Solver: s}, cfg.Trace)
}

type matmulStepper struct{ *matmul.Solver }

func (m *matmulStepper) step(ctx context.Context, job *ckpt.Job) error {
	_, err := m.Step(ctx, job)
	return err
}
func (m *matmulStepper) progress() int64 { return int64(m.Completed()) }
func (m *matmulStepper) done() bool      { return m.Done() }
func (m *matmulStepper) sum(ctx context.Context, job *ckpt.Job) (uint64, error) {
	return m.Checksum(ctx, job)
}
func (m *matmulStepper) result(ctx context.Context, job *ckpt.Job) (string, error) {
	sum, err := m.Checksum(ctx, job)
	if err != nil {
		return "", err
	}
	c := m.Config()
	return fmt.Sprintf("matmul n=%d seed=%d checksum=%016x", c.N, c.Seed, sum), nil
}
