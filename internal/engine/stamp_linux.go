//go:build linux

package engine

import (
	"os"
	"syscall"
)

// stampOf returns an open file's stamp (fstat); ok is false where the
// system gives none.
func stampOf(f *os.File) (fileStamp, bool) {
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		return fileStamp{}, false
	}
	return fileStamp{
		dev:   uint64(st.Dev),
		ino:   uint64(st.Ino),
		size:  st.Size,
		mtime: st.Mtim.Nano(),
		ctime: st.Ctim.Nano(),
	}, true
}
