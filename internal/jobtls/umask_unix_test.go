//go:build unix

package jobtls

import "syscall"

// umask0 clears the umask and returns what restores it.
func umask0() func() {
	old := syscall.Umask(0)
	return func() { syscall.Umask(old) }
}
