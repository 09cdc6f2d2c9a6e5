//go:build unix

package launch

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// setProcessGroup puts the rank in its own process group, so that killing
// it also kills what it started, and a Ctrl-C at the terminal reaches the
// launcher alone, which decides what the ranks get.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	setDeathSignal(cmd.SysProcAttr)
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

// exitStatus is a process's exit status, or -1 and the signal that ended
// it.
func exitStatus(st *os.ProcessState, err error) (int, syscall.Signal) {
	if st == nil {
		if err != nil {
			return 1, 0
		}
		return 0, 0
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return -1, ws.Signal()
	}
	return st.ExitCode(), 0
}

// signalPID kills a process that the launcher did not start, with SIGKILL,
// or stops it (hang), and its process group when it leads one (Open MPI
// starts every rank in a group of its own). A process already gone is no
// error.
func signalPID(pid int, hang bool) error {
	sig := syscall.SIGKILL
	if hang {
		sig = syscall.SIGSTOP
	}
	if pg, err := syscall.Getpgid(pid); err == nil && pg == pid {
		syscall.Kill(-pid, sig)
	}
	if err := syscall.Kill(pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}

// terminate asks a launcher's process group to end (SIGTERM): mpirun and
// srun then end their ranks.
func terminate(cmd *exec.Cmd) {
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	}
}
