//go:build !linux

package resource

// Probe knows nothing outside Linux: every check passes.
func Probe() Have { return Have{Procs: Unknown, FDs: Unknown, Memory: Unknown} }

// ProbeMemory knows nothing outside Linux.
func ProbeMemory() Limit { return Unknown }
