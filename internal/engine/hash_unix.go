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
// when the file cannot be mapped (the caller then reads it). stamped says
// that the file's stamp was st both before and after the hash (so the hash
// is that of the file in state st).
func hashMapped(path string) (h manifest.Hash, size int64, st fileStamp, stamped, ok bool) {
	f, err := os.Open(path)
	if err != nil {
		return h, 0, st, false, false
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil || !info.Mode().IsRegular() || info.Size() == 0 || info.Size() != int64(int(info.Size())) {
		return h, 0, st, false, false
	}
	before, stamped := stampOf(f)
	b, err := syscall.Mmap(int(f.Fd()), 0, int(info.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return h, 0, st, false, false
	}
	defer syscall.Munmap(b)
	h = manifest.ContentHashParallel(b, runtime.GOMAXPROCS(0))
	if stamped {
		after, ok := stampOf(f)
		stamped = ok && after == before && before.size == info.Size()
	}
	return h, info.Size(), before, stamped, true
}
