//go:build unix && !linux

package launch

import "syscall"

// setDeathSignal: only Linux can have a child killed with its parent.
func setDeathSignal(*syscall.SysProcAttr) {}
