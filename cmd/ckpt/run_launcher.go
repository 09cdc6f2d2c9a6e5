package main

import (
	"github.com/ckpt/ckpt/internal/launch"
)

// runLauncher is the launcher of --launcher and --launcher-args, found
// before anything starts: an unknown name, or a launcher not on PATH, is
// a usage error (exit status 2) naming what is missing.
func runLauncher(name, args string, tree bool) (launch.Launcher, error) {
	if tree && name != launch.LauncherLocal && name != "" {
		// mpirun and srun give every rank the same environment: one
		// coordinator address, not its node's relay.
		return nil, usagef("--tree needs --launcher local: under %s every rank gets the same coordinator address, not its node's sub-coordinator", name)
	}
	l, err := launch.NewLauncher(name, args)
	if err != nil {
		return nil, usageError{err}
	}
	return l, nil
}
