package jobdir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// CheckWritable reports why dir cannot serve as a directory the job
// writes to: it is a file, or it (or the directory it would be made in)
// cannot be written. It leaves nothing behind: the file it makes to try
// (PreflightPrefix*) is removed, and a missing dir is not made.
func CheckWritable(dir string) error {
	d := dir
	for {
		st, err := os.Stat(d)
		if err == nil {
			if !st.IsDir() {
				if d == dir {
					return errors.New("is a file, not a directory")
				}
				return fmt.Errorf("cannot be made: %s is a file", d)
			}
			break
		}
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return err
		}
		parent := filepath.Dir(d)
		if parent == d {
			return fmt.Errorf("cannot be made: %v", err)
		}
		d = parent
	}
	// Writable: a file can be made in it (permissions alone do not say:
	// root, read-only mounts, ACLs).
	f, err := os.CreateTemp(d, PreflightPrefix+"*")
	if err != nil {
		if d == dir {
			return fmt.Errorf("not writable: %v", unwrapPath(err))
		}
		return fmt.Errorf("cannot be made: %s is not writable: %v", d, unwrapPath(err))
	}
	f.Close()
	os.Remove(f.Name())
	return nil
}

// unwrapPath drops the *PathError's path, which the message names already.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
