package main

import (
	"fmt"
	"runtime"
	"time"

	"github.com/ckpt/ckpt/internal/launch"
	"github.com/ckpt/ckpt/internal/resource"
)

// probeResources reads what this machine has; tests replace it.
var probeResources = resource.Probe

// admission checks that this machine can run a job of -n ranks at all —
// processes and the launcher's file descriptors, refused up front with what
// is needed and what is there rather than forking until something breaks —
// and sets how long the ranks of an attempt may take to join.
func (f *runFlags) admission(s *runSpec) error {
	need := launch.NeedsOf(s.ranks, s.nodes, *f.tree, *f.stagingServers)
	have := probeResources()
	if err := resource.Check(resource.Procs, need.Procs, have.Procs); err != nil {
		return usagef("-n %d: the job %v", s.ranks, err)
	}
	if err := resource.Check(resource.FDs, need.FDs, have.FDs); err != nil {
		return usagef("-n %d: the launcher %v (3 per rank)", s.ranks, err)
	}
	s.joinTimeout = launch.JoinAllowance(s.ranks, runtime.NumCPU())
	if f.joinTimeout.set {
		if f.joinTimeout.v <= 0 {
			return usagef("--join-timeout %gs: need a positive duration", f.joinTimeout.v)
		}
		s.joinTimeout = time.Duration(f.joinTimeout.v * float64(time.Second))
	}
	return nil
}

// joinTimeoutUsage is the help of --join-timeout.
var joinTimeoutUsage = fmt.Sprintf("how long the ranks of a launch may take to join (default %v plus %v per rank per CPU)",
	launch.JoinAllowance(0, 1), launch.JoinAllowance(1, 1)-launch.JoinAllowance(0, 1))
