package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/ckpt/ckpt"
	"github.com/ckpt/ckpt/examples/himeno"
	"github.com/ckpt/ckpt/examples/matmul"
	"github.com/ckpt/ckpt/examples/ranks"
)

func newExampleCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "example",
		Short: "Example applications that checkpoint through ckpt (run them with 'ckpt run')",
		Long: `Real workloads written against ckpt's rank API: each rank restarts from the
newest checkpoint the job can recover, computes, checkpoints when the job's
policy says so, and at the end rank 0 prints a checksum of the result — the
same whatever failures and restarts happened on the way.

  ckpt run -n 8 --nodes 4 -- ckpt example himeno --size s --iterations 400
  ckpt example matmul --n 256        # one rank, no launcher`,
	}
	c.AddCommand(newExampleHimenoCmd(), newExampleMatmulCmd(), newExampleTorusCmd())
	return c
}

func newExampleHimenoCmd() *cobra.Command {
	c := leaf("himeno [--size xs|s|m|l|IxJxK] [--iterations N]", "Distributed Himeno benchmark: 3D Jacobi iteration, 19-point stencil, halo exchange", "", "")
	size := c.Flags().String("size", "s", "grid: xs (33×33×65), s (65×65×129), m, l, xl, or IxJxK")
	iters := c.Flags().Int("iterations", 400, "Jacobi iterations")
	trace := traceFlag(c)
	c.RunE = func(c *cobra.Command, _ []string) error {
		grid, err := himeno.ParseSize(*size)
		if err != nil {
			return usagef("--size: %v", err)
		}
		if *iters < 1 {
			return usagef("--iterations %d: need at least 1", *iters)
		}
		return runExample(c, func(job *ckpt.Job) (ranks.Report, error) {
			if err := checkRankMemory("--size "+*size, job, grid.MemoryNeed(job.Rank(), job.Size())); err != nil {
				return ranks.Report{}, err
			}
			w, done, err := openTrace(*trace, job)
			if err != nil {
				return ranks.Report{}, err
			}
			defer done()
			return ranks.Himeno(c.Context(), job, ranks.HimenoConfig{Size: grid, Iterations: *iters, Trace: w})
		})
	}
	return c
}

func newExampleMatmulCmd() *cobra.Command {
	c := leaf("matmul [--n N] [--seed S] [--panels P]", "Distributed matrix multiplication C = A·B with B circulated around the ranks", "", "")
	n := c.Flags().Int("n", 512, "matrix order")
	seed := c.Flags().Uint64("seed", 1, "seed of A and B")
	panels := c.Flags().Int("panels", 8, "steps per block of B (more steps: more chances to checkpoint)")
	trace := traceFlag(c)
	c.RunE = func(c *cobra.Command, _ []string) error {
		cfg := matmul.Config{N: *n, Seed: *seed, Panels: *panels}
		if err := cfg.Validate(); err != nil {
			return usagef("%v", err)
		}
		return runExample(c, func(job *ckpt.Job) (ranks.Report, error) {
			if err := checkRankMemory(fmt.Sprintf("--n %d", cfg.N), job, cfg.MemoryNeed(job.Rank(), job.Size())); err != nil {
				return ranks.Report{}, err
			}
			w, done, err := openTrace(*trace, job)
			if err != nil {
				return ranks.Report{}, err
			}
			defer done()
			return ranks.Matmul(c.Context(), job, ranks.MatmulConfig{Config: cfg, Trace: w})
		})
	}
	return c
}

func traceFlag(c *cobra.Command) *string {
	return c.Flags().String("trace", "", "append one JSON line per restore, committed checkpoint and end to FILE (rank 0), with a checksum of the state: how 'ckpt torture' checks restored states")
}

// openTrace opens the trace of --trace: rank 0 appends to the file, the
// other ranks discard (they compute the checksums with it, a collective).
// Without --trace it is nil.
func openTrace(path string, job *ckpt.Job) (io.Writer, func(), error) {
	if path == "" {
		return nil, func() {}, nil
	}
	if job.Rank() != 0 {
		return io.Discard, func() {}, nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, nil, ckpt.ConfigError(fmt.Errorf("--trace: %w", err))
	}
	return f, func() { f.Close() }, nil
}

// rankError exits with the status that tells 'ckpt run' what a relaunch
// can do (ckpt.ExitStatus): a configuration error is not relaunched, a
// rank that only saw the job fail is not taken for its cause.
func rankError(err error) error {
	return statusError{err: err, status: ckpt.ExitStatus(err)}
}

// runExample joins the job, runs the rank program, and has rank 0 print
// the result.
func runExample(c *cobra.Command, prog func(*ckpt.Job) (ranks.Report, error)) error {
	job, err := ckpt.Join(c.Context(), ckpt.JobOptions{})
	if err != nil {
		return rankError(err)
	}
	defer job.Close()
	rep, err := prog(job)
	if err != nil {
		return rankError(fmt.Errorf("rank %d: %w", job.Rank(), err))
	}
	if job.Rank() == 0 {
		fmt.Fprintln(c.OutOrStdout(), rep.Result)
		from := "started from scratch"
		if rep.Checkpoint != "" {
			from = fmt.Sprintf("restored %s from %s", rep.Checkpoint, rep.RestoredFrom)
		}
		fmt.Fprintf(c.ErrOrStderr(), "%s; %d checkpoints taking %.3fs\n", from, rep.Checkpoints, rep.CheckpointDur.Seconds())
		if rep.FailedCheckpoints > 0 {
			fmt.Fprintf(c.ErrOrStderr(), "%d checkpoints failed on every rank and the job went on; the last: %v\n", rep.FailedCheckpoints, rep.LastFailure)
		}
	}
	return nil
}
