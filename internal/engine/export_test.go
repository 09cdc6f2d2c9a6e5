package engine

// SetSyncRoutedPath replaces how routed files and their directories are
// synced, until the returned function restores it.
func SetSyncRoutedPath(f func(path string) error) (restore func()) {
	old := syncRoutedPath
	syncRoutedPath = f
	return func() { syncRoutedPath = old }
}
