//go:build !unix

package launch

import "os/exec"

func setProcessGroup(cmd *exec.Cmd) {}

func kill(cmd *exec.Cmd) {
	if cmd.Process != nil {
		cmd.Process.Kill()
	}
}

// stop cannot stop a process here: it kills it.
func stop(cmd *exec.Cmd) { kill(cmd) }
