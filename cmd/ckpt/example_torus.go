package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ckpt/ckpt"
	"github.com/ckpt/ckpt/examples/torus"
)

// Fialho et al. 2011's synthetic application's defaults: the demo's
// torus of 6 ranks.
const (
	torusDefaultW, torusDefaultH = 3, 2
	torusDefaultSteps            = 600
	torusDefaultN                = 64
)

func newExampleTorusCmd() *cobra.Command {
	c := leaf("torus [--width W] [--height H] [--steps S] [--n N]",
		"Fialho et al. 2011's synthetic application: compute, then exchange with the right and lower neighbours on a 2-D torus",
		`Each rank of a W×H torus, every step, computes (an N×N integer matrix
product) and then sends its value to its right and lower neighbours and
receives from its left and upper ones, through Job.Send and Job.Recv: it
runs under either strategy of 'ckpt run' (--strategy coordinated, or
uncoordinated, where one failed rank recovers alone from its own
checkpoint and message log). At the end rank 0 gathers the values and
prints the result line, the same bit for bit whatever failed on the way.`,
		`  ckpt run -n 6 --nodes 6 --strategy uncoordinated --interval 50steps -- ckpt example torus`)
	fs := c.Flags()
	cfg := torus.Config{}
	fs.IntVar(&cfg.W, "width", torusDefaultW, "ranks along x")
	fs.IntVar(&cfg.H, "height", torusDefaultH, "ranks along y (the job has width × height ranks)")
	fs.IntVar(&cfg.Steps, "steps", torusDefaultSteps, "compute-and-exchange steps")
	fs.IntVar(&cfg.N, "n", torusDefaultN, "order of each step's matrix product (0: exchange only)")
	c.RunE = func(c *cobra.Command, _ []string) error {
		if err := cfg.Validate(); err != nil {
			return usagef("%v", err)
		}
		job, err := ckpt.Join(c.Context(), ckpt.JobOptions{})
		if err != nil {
			return rankError(err)
		}
		defer job.Close()
		result, err := torus.Run(c.Context(), job, cfg)
		if err != nil {
			return rankError(fmt.Errorf("rank %d: %w", job.Rank(), err))
		}
		if result != "" {
			fmt.Fprintln(c.OutOrStdout(), result)
		}
		return nil
	}
	return c
}
