package engine

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// resident says whether every page of b, a mapping of a file, is in the
// page cache (mincore(2), which x/sys/unix does not wrap on Linux), so
// that hashing it costs no read from the disk. A failed mincore says no:
// the caller then reads the file, which is always correct.
func resident(b []byte) bool {
	if len(b) == 0 {
		return true
	}
	page := unix.Getpagesize()
	vec := make([]byte, (len(b)+page-1)/page)
	_, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(unsafe.Pointer(&vec[0])))
	if errno != 0 {
		return false
	}
	for _, v := range vec {
		if v&1 == 0 {
			return false
		}
	}
	return true
}
