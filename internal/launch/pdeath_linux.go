package launch

import "syscall"

// setDeathSignal has the kernel kill the child if the launcher dies
// without a chance to (SIGKILL, a crash): no rank outlives its launcher.
func setDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
