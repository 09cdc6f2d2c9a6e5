//go:build !unix

package jobdir

import "os"

// Without flock(2) a job's lock excludes nothing: two runs of one job are
// not detected on this system.
func tryLock(f *os.File, exclusive bool) (bool, error) { return false, nil }

func unlock(f *os.File) {}

func sameFile(f *os.File, path string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Stat(path)
	return err == nil && os.SameFile(a, b)
}
