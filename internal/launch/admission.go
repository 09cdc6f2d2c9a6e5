package launch

import (
	"time"

	"github.com/ckpt/ckpt/internal/resource"
)

// Join allowance: what starting a rank can cost on a loaded machine. A Go
// rank's exec, runtime start, listener and dial take tens of milliseconds of
// CPU; under the race detector or on a machine shared with other work,
// several times that. Ranks start at once and contend for the CPUs.
const (
	joinBase    = time.Minute
	joinPerRank = 250 * time.Millisecond // CPU time per rank start, generous
	joinMax     = 24 * time.Hour
)

// JoinAllowance is how long the ranks of one attempt on this machine may
// take to join: a minute, plus each rank's start cost spread over the CPUs,
// so that a large -n on a busy machine still joins. It is the default join
// timeout of `ckpt run`.
func JoinAllowance(ranks, cpus int) time.Duration {
	cpus = max(cpus, 1)
	ranks = max(ranks, 0)
	extra := float64(ranks) * float64(joinPerRank) / float64(cpus)
	if d := float64(joinBase) + extra; d < float64(joinMax) {
		return time.Duration(d)
	}
	return joinMax
}

// Needs is what a job run by this package takes from this machine.
type Needs struct {
	// Procs: one process per rank and per staging server.
	Procs int64
	// FDs: descriptors the launcher's process holds at once, counted from
	// the code: per rank, the read end of its output pipe (stdout and
	// stderr share one), the pidfd os/exec keeps, and its connection to
	// the coordinator (or, in tree mode, to its node's sub-coordinator);
	// per node in tree mode, the sub-coordinator's listener, its upstream
	// connection and the coordinator's end of it; per staging server, two
	// pipes, a pidfd and its connection; and a base for the process itself
	// (standard streams, the poller, the listener, caches, files).
	FDs int64
}

// fdsBase is the launcher's own descriptors, generously.
const fdsBase = 64

// NeedsOf returns what a job of ranks ranks on nodes nodes (tree mode or
// not) with staging servers takes, saturating rather than overflowing.
func NeedsOf(ranks, nodes int, tree bool, staging int) Needs {
	r, n, s := int64(max(ranks, 0)), int64(max(nodes, 0)), int64(max(staging, 0))
	fds := resource.Add(resource.Mul(3, r), resource.Mul(4, s), fdsBase)
	if tree {
		fds = resource.Add(fds, resource.Mul(3, n))
	}
	return Needs{Procs: resource.Add(r, s), FDs: fds}
}
