package main

import "github.com/spf13/cobra"

func newModelCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "model",
		Short: "Closed-form and Markov models of checkpointing (pure computation, no I/O)",
		Long: `The models of the four papers ckpt implements, one subcommand each:

  interval    optimal checkpoint interval: Young, Daly (first and higher order),
              Gropp–Lusk, Fialho serial and parallel (uncoordinated + logging)
  runtime     expected run time and efficiency under Daly's model (Oldfield et al. 2007, eq. 1)
  phi         the inter-process dependency factor φ (Fialho et al. 2011, eq. 12)
  oldfield    checkpoint overhead from link, bisection and storage bandwidth,
              LWFS start-up and overlay buffering (Oldfield et al. 2007, §3–4)
  fill-time   the Checkpoint-Fill-Time Law (Cao et al. 2016, §III-D)
  multilevel  the multi-level Markov model, blocking or non-blocking, and
              its optimiser (Sato et al. 2012, §V, Moody et al.)
  figures     regenerate the papers' model figures as PNG and SVG

docs/MODELS.md explains each model, its assumptions and where the papers
disagree with themselves.`,
	}
	// Without this, a mistyped subcommand ("ckpt model intervall") would print
	// the help and exit 0.
	c.Args = cobra.ArbitraryArgs
	c.RunE = func(c *cobra.Command, args []string) error {
		if len(args) > 0 {
			return usagef("unknown command %q for %q (see 'ckpt model --help')", args[0], c.CommandPath())
		}
		return c.Help()
	}
	c.AddCommand(newIntervalCmd(), newRuntimeCmd(), newPhiCmd(), newOldfieldCmd(),
		newFillTimeCmd(), newMultilevelCmd(), newFiguresCmd())
	return c
}
