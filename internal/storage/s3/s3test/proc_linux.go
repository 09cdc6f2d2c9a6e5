package s3test

import (
	"os/exec"
	"syscall"
)

// setProcAttr makes the kernel kill the server when the test process dies,
// so that a test binary killed by its timeout leaves no server behind.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
