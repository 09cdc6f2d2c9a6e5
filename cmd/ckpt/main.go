// Command ckpt is the one binary of the ckpt checkpoint/restart system. Each
// subcommand lives in its own file; this package parses flags and prints
// results, and leaves every computation to the library packages.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
)

// Exit statuses.
const (
	exitOK    = 0
	exitError = 1 // the work failed (I/O, a computation that could not finish)
	exitUsage = 2 // bad input: a flag, a value, a file's content
)

// usageError marks bad input; it exits with status 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// statusError exits with its own status: a rank's (ckpt.ExitStatus), or
// 128+N after signal N stopped 'ckpt run'.
type statusError struct {
	err    error
	status int
}

func (e statusError) Error() string { return e.err.Error() }
func (e statusError) Unwrap() error { return e.err }

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes the command line and returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	root := newRootCmd()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := checkSplitUnit(root, args)
	if err == nil {
		err = root.Execute()
	}
	if err == nil {
		return exitOK
	}
	if errors.Is(err, errNotRecoverable) {
		return exitError // the report says why
	}
	fmt.Fprintf(stderr, "ckpt: %s\n", oneLine(err.Error()))
	var se statusError
	if errors.As(err, &se) {
		return se.status
	}
	var ue usageError
	if errors.As(err, &ue) || isCobraUsage(err) {
		return exitUsage
	}
	return exitError
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "ckpt",
		Short: "Checkpoint/restart for long-running parallel jobs, with models that say when to checkpoint",
		Long: `ckpt saves the state of parallel jobs cheaply and often (node-local levels
protected across nodes, a shared tier behind them) and explains its choices
with the models of the checkpointing literature.

Durations accept 300, 300s, 5m, 24h, 5y (a year is 365 days); sizes 29GB,
1.5TiB (KB/MB/GB/TB decimal, KiB/MiB/GiB/TiB binary, a bare number is bytes);
bandwidths 400MB/s; rates are per second (or 3/h, 1/y). Every command prints a
table by default and one JSON object in SI units with --json.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version(),
	}
	// --version prints one line a bug report can quote.
	root.SetVersionTemplate("ckpt {{.Version}}\n")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError{fmt.Errorf("%w (see '%s --help')", err, c.CommandPath())}
	})
	root.AddCommand(newModelCmd(), newPlanCmd(), newRunCmd(), newHaltCmd(), newStatusCmd(), newCheckpointCmd(), newDemoCmd(), newExampleCmd(), newCoordinatorCmd(), newLsCmd(), newInspectCmd(), newVerifyCmd(), newBenchCmd(), newSimulateCmd(), newStageCmd(), newTortureCmd(), newTransparentRankCmd())
	return root
}

// isCobraUsage recognises cobra's own errors about the command line
// (unknown command, wrong number of arguments).
func isCobraUsage(err error) bool {
	msg := err.Error()
	// Flag errors are already usage errors (SetFlagErrorFunc); what is left
	// are cobra's complaints about commands and positional arguments.
	for _, p := range []string{"unknown command", "accepts ", "requires at least", "requires at most"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

// oneLine folds cobra's multi-line messages ("Did you mean this?\n\tplan")
// into the one line every error gets.
func oneLine(msg string) string {
	msg = strings.Replace(msg, "\n\nDid you mean this?\n", " — did you mean: ", 1)
	return strings.Join(strings.Fields(msg), " ")
}
