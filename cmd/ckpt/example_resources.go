package main

import (
	"fmt"

	"github.com/ckpt/ckpt"
	"github.com/ckpt/ckpt/internal/resource"
)

// probeMemory reads the memory this machine has left; tests replace it.
var probeMemory = resource.ProbeMemory

// checkRankMemory refuses a rank whose arrays cannot fit in the memory the
// machine has left, before it allocates them: the Go runtime's
// out-of-memory crash would say nothing about the size that caused it. It
// names the flag and value (flag), what the rank needs and what is there;
// the caller names the rank.
//
// At the job's first launch the refusal is a configuration error (the rank
// exits with ckpt.ExitConfig and 'ckpt run' does not launch it again): the
// sizes do not fit this machine. At a relaunch it is an ordinary failure:
// the sizes fitted before, and memory that is short now (page cache a
// cgroup counts, another job) may be back at the next launch.
func checkRankMemory(flag string, job *ckpt.Job, need int64) error {
	err := resource.Check(resource.Memory, need, probeMemory())
	if err == nil {
		return nil
	}
	err = usagef("%s: this rank (of %d) %v", flag, job.Size(), err)
	if job.Incarnation() == 0 {
		return ckpt.ConfigError(err)
	}
	return fmt.Errorf("%w (at relaunch %d: the same sizes fitted before)", err, job.Incarnation())
}
