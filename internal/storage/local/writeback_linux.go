package local

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteback asks the kernel to start writing the given range of f to
// disk without waiting for it (sync_file_range with
// SYNC_FILE_RANGE_WRITE). It is a hint that spreads a large file's disk
// writes over the time it is written; durability still comes from fsync at
// Commit. It reports false if the file system does not support it.
func startWriteback(f *os.File, off, n int64) bool {
	err := unix.SyncFileRange(int(f.Fd()), off, n, unix.SYNC_FILE_RANGE_WRITE)
	return err == nil
}
