package local

import (
	"os"
	"path/filepath"
)

// WriteFile writes data to the file path whole and durably, for the small
// files a program publishes beside its checkpoints (an address file, a
// figure): it writes a temp file ".NAME.*.tmp" in the same directory,
// syncs and closes it, gives it mode perm, renames it over path and syncs
// the directory. A reader, or the machine after a crash, finds the old
// file (or none) or the new one complete, never a part of it. On an error
// the temp file is removed and path is as it was.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	return writeFile(path, data, perm, nil)
}

// writeFile is WriteFile; step, when not nil, runs before each step
// ("write", "sync", "rename") and a non-nil error stops there, as a
// failure at that point would (tests).
func writeFile(path string, data []byte, perm os.FileMode, step func(string) error) (err error) {
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
	if _, err = tmp.Write(data); err != nil {
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
