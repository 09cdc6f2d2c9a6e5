//go:build unix

package jobdir

import (
	"errors"
	"os"
	"syscall"
)

// tryLock takes f's lock without waiting: exclusive for the job's runner,
// shared for a probe (probes do not exclude each other). busy reports that
// another holds it.
func tryLock(f *os.File, exclusive bool) (busy bool, err error) {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	for {
		err = syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return true, nil
	}
	return false, err
}

func unlock(f *os.File) { syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }

// sameFile says whether the open f is still the file at path: a lock
// taken on a lock file its job unlinked as it finished protects nothing.
func sameFile(f *os.File, path string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Stat(path)
	return err == nil && os.SameFile(a, b)
}
