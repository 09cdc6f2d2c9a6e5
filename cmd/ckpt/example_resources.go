package main

import (
	"github.com/ckpt/ckpt"
	"github.com/ckpt/ckpt/internal/resource"
)

// probeMemory reads the memory this machine has left; tests replace it.
var probeMemory = resource.ProbeMemory

// checkRankMemory refuses a rank whose arrays cannot fit in the memory the
// machine has left, before it allocates them: the Go runtime's
// out-of-memory crash would say nothing about the size that caused it. The
// error is a configuration error (the rank exits with ckpt.ExitConfig, so
// 'ckpt run' does not launch it again): the job's configuration, not the
// run, is wrong. It names the flag and value (flag), what the rank needs
// and what is there; the caller names the rank.
func checkRankMemory(flag string, size int, need int64) error {
	if err := resource.Check(resource.Memory, need, probeMemory()); err != nil {
		return ckpt.ConfigError(usagef("%s: this rank (of %d) %v", flag, size, err))
	}
	return nil
}
