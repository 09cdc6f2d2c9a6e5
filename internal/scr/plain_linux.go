package scr

import (
	"errors"

	"golang.org/x/sys/unix"
)

// eachData calls f with each data region [off, off+n) of the file fd of
// size bytes.
func eachData(fd int, size int64, f func(off, n int64) error) error {
	for off := int64(0); off < size; {
		start, err := unix.Seek(fd, off, unix.SEEK_DATA)
		switch {
		case errors.Is(err, unix.ENXIO):
			return nil // only a hole is left
		case err != nil:
			if off == 0 {
				return f(0, size) // no SEEK_DATA here
			}
			return err
		}
		end, err := unix.Seek(fd, start, unix.SEEK_HOLE)
		if err != nil {
			end = size
		}
		if err := f(start, end-start); err != nil {
			return err
		}
		off = end
	}
	return nil
}
