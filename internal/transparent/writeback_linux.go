package transparent

import (
	"os"

	"golang.org/x/sys/unix"
)

// syncFileRange asks the kernel to start writing f's dirty pages to disk
// without waiting for them (sync_file_range with SYNC_FILE_RANGE_WRITE);
// false if the file system cannot.
func syncFileRange(f *os.File) bool {
	return unix.SyncFileRange(int(f.Fd()), 0, 0, unix.SYNC_FILE_RANGE_WRITE) == nil
}
