//go:build !unix

package engine

import "github.com/ckpt/ckpt/internal/manifest"

// hashMapped is not available here: callers read the file instead.
func hashMapped(path string) (manifest.Hash, int64, fileStamp, bool, bool) {
	return manifest.Hash{}, 0, fileStamp{}, false, false
}
