//go:build unix && !linux

package engine

// resident says yes off Linux: the mapping is hashed as before issue 17's
// measurement of cold mappings (on Linux), which was not repeated here.
func resident(b []byte) bool { return true }
