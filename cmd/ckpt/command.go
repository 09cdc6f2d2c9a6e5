package main

import "github.com/spf13/cobra"

// command builds a subcommand taking the positional arguments args
// accepts; long and example may be empty.
func command(use, short, long, example string, args cobra.PositionalArgs) *cobra.Command {
	return &cobra.Command{Use: use, Short: short, Long: long, Example: example, Args: args}
}

// leaf builds a subcommand that takes no positional arguments.
func leaf(use, short, long, example string) *cobra.Command {
	return command(use, short, long, example, cobra.NoArgs)
}

// runner is the flags of a subcommand, which acts on them.
type runner interface{ run(c *cobra.Command) error }

// runs makes r the action of c and returns c.
func runs(c *cobra.Command, r runner) *cobra.Command {
	c.RunE = func(c *cobra.Command, _ []string) error { return r.run(c) }
	return c
}
