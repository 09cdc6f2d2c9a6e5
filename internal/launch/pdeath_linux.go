package launch

import "syscall"

// setDeathSignal has the kernel kill the child if the launcher dies
// without a chance to (SIGKILL, a crash): no rank outlives its launcher.
// The kernel sends it when the thread that started the child ends, not
// the process: Go keeps its threads for the process's life unless a
// goroutine locked to one (runtime.LockOSThread) exits locked, which the
// launcher never does.
func setDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
