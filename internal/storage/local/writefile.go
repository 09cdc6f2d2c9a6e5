package local

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// WriteFile writes data to the file path whole and durably, for the small
// files a program publishes beside its checkpoints (an address file, a
// figure): it writes a temp file ".NAME.*.tmp" in the same directory,
// syncs and closes it, gives it mode perm, renames it over path and syncs
// the directory. A reader, or the machine after a crash, finds the old
// file (or none) or the new one complete, never a part of it. On an error
// the temp file is removed and path is as it was.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	return writeFile(path, bytes.NewReader(data), perm, nil)
}

// WriteFileFrom is WriteFile for content read from r until EOF, for a
// file too large to hold in memory (a log rewritten from its tail); an
// error reading r fails the write as one writing would.
func WriteFileFrom(path string, r io.Reader, perm os.FileMode) error {
	return writeFile(path, r, perm, nil)
}

// RemoveTemps removes the temp files of WriteFile and WriteFileFrom left
// beside path by a write that a crash stopped (path stands as it was).
// Only for a path that no one else is writing: it would remove their temp
// file.
func RemoveTemps(path string) error {
	dir, base := filepath.Split(path)
	entries, err := os.ReadDir(filepath.Clean(dir))
	if err != nil {
		return err
	}
	for _, e := range entries {
		if isTemp(e.Name(), base) {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !os.IsNotExist(err) {
				return err
			}
		}
	}
	return nil
}

// isTemp says whether name is one of writeFile's temp files for base
// (os.CreateTemp puts a random number for the "*").
func isTemp(name, base string) bool {
	mid, ok := strings.CutPrefix(name, "."+base+".")
	if !ok {
		return false
	}
	mid, ok = strings.CutSuffix(mid, ".tmp")
	return ok && mid != "" && strings.Trim(mid, "0123456789") == ""
}

// writeFile is WriteFileFrom; step, when not nil, runs before each step
// ("write", "sync", "rename") and a non-nil error stops there, as a
// failure at that point would (tests).
func writeFile(path string, r io.Reader, perm os.FileMode, step func(string) error) (err error) {
	at := func(s string) error {
		if step == nil {
			return nil
		}
		return step(s)
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err = at("write"); err != nil {
		return err
	}
	if _, err = io.Copy(tmp, r); err != nil {
		return err
	}
	if err = at("sync"); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Chmod(perm); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if err = at("rename"); err != nil {
		return err
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	return syncDir(dir)
}
