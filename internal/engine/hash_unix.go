//go:build unix

package engine

import (
	"os"
	"runtime"
	"syscall"

	"github.com/ckpt/ckpt/internal/manifest"
)

// hashMapped hashes a local file by mapping it and hashing its chunks on
// every core: no copy out of the page cache, and hashing in parallel, so a
// restart verifies at least as fast as the file could be read. ok is false
// when the file cannot be mapped (the caller then reads it).
func hashMapped(path string) (h manifest.Hash, size int64, ok bool) {
	f, err := os.Open(path)
	if err != nil {
		return h, 0, false
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() || st.Size() == 0 || st.Size() != int64(int(st.Size())) {
		return h, 0, false
	}
	b, err := syscall.Mmap(int(f.Fd()), 0, int(st.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return h, 0, false
	}
	defer syscall.Munmap(b)
	return manifest.ContentHashParallel(b, runtime.GOMAXPROCS(0)), st.Size(), true
}
