//go:build unix

package launch

import (
	"os/exec"
	"syscall"
)

// setProcessGroup puts the rank in its own process group, so that killing
// it also kills what it started.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// kill kills a rank's process group with SIGKILL, as a crash would.
func kill(cmd *exec.Cmd) {
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Process.Kill()
	}
}

// stop stops a rank's process group (SIGSTOP): a hung process.
func stop(cmd *exec.Cmd) {
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGSTOP)
	}
}
