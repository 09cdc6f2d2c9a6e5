package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"sync"
	"time"

	"github.com/ckpt/ckpt/examples/himeno"
	"github.com/ckpt/ckpt/internal/launch"
	"github.com/ckpt/ckpt/internal/policy"
)

// OverheadConfig is what `ckpt bench overhead` measures: the Himeno
// example on Ranks ranks (goroutines of this process, joined through a
// real coordinator, exchanging halos over TCP), once with checkpointing off
// and once with it on but never due, beside the same Himeno without ckpt
// (its baseline), Trials times each, in turn.
type OverheadConfig struct {
	Dir        string
	Ranks      int
	Size       himeno.Config
	Iterations int
	Trials     int
	Progress   func(step string)
	// Join joins one rank to the job (ckpt.Join, which this package may
	// not import: the benchmark measures the application's own path).
	Join func(ctx context.Context, cfg JoinConfig) (Rank, error)
}

// JoinConfig is how one rank of the benchmark joins its job.
type JoinConfig struct {
	Coord, Token string // the job's coordinator
	Interval     string // the checkpoint policy
	Rank, Size   int
	Node         string
	CacheDir     string
}

// Rank is what the benchmark uses of one rank of a job (a *ckpt.Job): the
// Himeno example's messages, and the collective checkpoint decision.
type Rank interface {
	himeno.Comm
	Barrier(ctx context.Context) error
	NeedCheckpoint(ctx context.Context, step int64) (bool, error)
	Finish(ctx context.Context, result string) error
	Close() error
}

// OverheadResult holds the fastest run of each kind, in seconds, and what
// the checkpoint decisions cost.
type OverheadResult struct {
	// Bare is Himeno without ckpt, the baseline: the same ranks as
	// goroutines exchanging their halos over in-process channels, no
	// coordinator, no job. Off is Himeno through ckpt with checkpointing
	// off (interval none: joined to a coordinator, halos over ckpt's TCP
	// messages), On with it on but never due.
	Bare, Off, On float64
	// Ratio is On/Off − 1: the runtime overhead of checkpointing that is
	// enabled but never due, over the same job with it off.
	Ratio float64
	// BareRatio is On/Bare − 1: what running under ckpt with
	// checkpointing on costs over the bare application; OffBareRatio is
	// Off/Bare − 1, the part of it that is there with checkpointing off
	// (joining, messages over TCP instead of channels).
	BareRatio, OffBareRatio float64
	// Decisions is the number of decision rounds of the run with
	// checkpointing on, DecisionSeconds their summed time on rank 0, and
	// Accounted their share of the run: the overhead counted directly,
	// free of the noise between runs.
	Decisions       int
	DecisionSeconds float64
	Accounted       float64
}

// RunOverhead measures.
func RunOverhead(ctx context.Context, cfg OverheadConfig) (OverheadResult, error) {
	var r OverheadResult
	if cfg.Join == nil {
		return r, errors.New("bench: OverheadConfig.Join is required")
	}
	if cfg.Progress == nil {
		cfg.Progress = func(string) {}
	}
	bare, off, on := math.Inf(1), math.Inf(1), math.Inf(1)
	for trial := range cfg.Trials {
		cfg.Progress(fmt.Sprintf("trial %d of %d: bare Himeno without ckpt, checkpointing off, then on but never due", trial+1, cfg.Trials))
		// Fresh solvers each trial, as the runs through ckpt make theirs.
		hw, err := newHimenoWork(cfg.Size, cfg.Ranks)
		if err != nil {
			return r, err
		}
		z, err := hw.run(ctx, cfg.Iterations)
		if err != nil {
			return r, fmt.Errorf("bare Himeno: %w", err)
		}
		bare = min(bare, z)
		a, _, err := himenoRun(ctx, cfg, "none", trial)
		if err != nil {
			return r, err
		}
		b, st, err := himenoRun(ctx, cfg, "1000h", trial)
		if err != nil {
			return r, err
		}
		off = min(off, a)
		if b < on {
			on = b
			r.Decisions, r.DecisionSeconds = st.rounds, st.roundTime.Seconds()
		}
	}
	r.Bare, r.Off, r.On = bare, off, on
	r.Ratio = on/off - 1
	r.BareRatio, r.OffBareRatio = on/bare-1, off/bare-1
	r.Accounted = r.DecisionSeconds / on
	return r, nil
}

type decisionStats struct {
	rounds    int
	roundTime time.Duration
}

// himenoRun runs the example once and returns the seconds its loop took
// (the slowest rank's), and rank 0's decision rounds.
func himenoRun(ctx context.Context, cfg OverheadConfig, interval string, trial int) (float64, decisionStats, error) {
	var st decisionStats
	pol, err := policy.Parse(interval)
	if err != nil {
		return 0, st, err
	}
	coords := &launch.Coordinators{Ranks: cfg.Ranks, Nodes: cfg.Ranks, Policy: pol}
	token := fmt.Sprintf("overhead-%d", trial)
	co, err := coords.New(0, token)
	if err != nil {
		return 0, st, err
	}
	defer co.Close()
	secs := make([]float64, cfg.Ranks)
	errs := make([]error, cfg.Ranks)
	var wg sync.WaitGroup
	for rank := range cfg.Ranks {
		wg.Go(func() {
			node := fmt.Sprintf("node%d", rank)
			job, err := cfg.Join(ctx, JoinConfig{Coord: co.Addr(), Token: token, Interval: interval,
				Rank: rank, Size: cfg.Ranks, Node: node,
				CacheDir: filepath.Join(cfg.Dir, fmt.Sprintf("overhead-%d-%s", trial, interval), node)})
			if err != nil {
				errs[rank] = err
				return
			}
			defer job.Close()
			s, err := himeno.New(cfg.Size, rank, cfg.Ranks)
			if err != nil {
				errs[rank] = err
				return
			}
			if err := job.Barrier(ctx); err != nil {
				errs[rank] = err
				return
			}
			start := time.Now()
			for i := 1; i <= cfg.Iterations; i++ {
				if _, err := s.Step(ctx, job); err != nil {
					errs[rank] = err
					return
				}
				t0 := time.Now()
				need, err := job.NeedCheckpoint(ctx, int64(i))
				if d := time.Since(t0); rank == 0 && d > 20*time.Microsecond {
					// Only decision rounds talk to the coordinator; the
					// local check between them takes nanoseconds.
					st.rounds++
					st.roundTime += d
				}
				if err != nil {
					errs[rank] = err
					return
				}
				if need {
					errs[rank] = fmt.Errorf("a checkpoint came due at step %d with interval %s", i, interval)
					return
				}
			}
			secs[rank] = time.Since(start).Seconds()
			errs[rank] = job.Finish(ctx, "")
		})
	}
	wg.Wait()
	for rank, err := range errs {
		if err != nil {
			return 0, st, fmt.Errorf("rank %d: %w", rank, err)
		}
	}
	slowest := 0.0
	for _, s := range secs {
		slowest = max(slowest, s)
	}
	return slowest, st, nil
}
