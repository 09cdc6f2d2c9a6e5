package engine

import (
	"errors"
	"os"
	"path/filepath"
)

// syncRouted syncs a routed file, which the application wrote itself, and
// its directory, in the background: the result comes on the channel.
// Started before the file is hashed, its writeback overlaps the read.
func syncRouted(path string) <-chan error {
	done := make(chan error, 1)
	go func() {
		done <- errors.Join(syncRoutedPath(path), syncRoutedPath(filepath.Dir(path)))
	}()
	return done
}

// syncRoutedPath syncs a file or directory (a variable: tests watch it).
var syncRoutedPath = func(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	return errors.Join(f.Sync(), f.Close())
}
