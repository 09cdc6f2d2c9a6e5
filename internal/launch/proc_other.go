//go:build !unix

package launch

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

func setProcessGroup(cmd *exec.Cmd) {}

func kill(cmd *exec.Cmd) {
	if cmd.Process != nil {
		cmd.Process.Kill()
	}
}

// stop cannot stop a process here: it kills it.
func stop(cmd *exec.Cmd) { kill(cmd) }

func exitStatus(st *os.ProcessState, err error) (int, syscall.Signal) {
	if st == nil {
		if err != nil {
			return 1, 0
		}
		return 0, 0
	}
	return st.ExitCode(), 0
}

// signalPID cannot reach a process by its pid here.
func signalPID(pid int, hang bool) error {
	return errors.New("killing a rank by its pid needs a Unix system")
}

func terminate(cmd *exec.Cmd) { kill(cmd) }
