//go:build !unix

package launch

import "os/exec"

func setProcessGroup(cmd *exec.Cmd) {}

func kill(cmd *exec.Cmd) {
	if cmd.Process != nil {
		cmd.Process.Kill()
	}
}
