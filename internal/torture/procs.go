package torture

import "time"

// Procs is the Runner of real jobs: `ckpt run` processes of the ckpt
// binary Exe, their ranks the examples with --trace. It finds a job's
// processes in /proc (the ranks and staging servers are the launcher's
// children; a rank's environment names its rank, node and cache).
type Procs struct {
	Exe        string        // the ckpt binary
	Dir        string        // the jobs' directories go under it
	Heartbeat  time.Duration // ckpt run --heartbeat-timeout: how soon a hung rank is caught
	FlushEvery int           // ckpt run --flush-every
	Keep       bool          // keep the jobs' directories (with their logs)
	// Sandbox runs every job (but the failure-free references) in a
	// sandbox of its own: network and mount namespaces, each node's cache
	// and the shared tier on a small tmpfs (Linux, root: the network and
	// disk faults need it; SandboxUnavailable says whether it can).
	Sandbox bool
	// Wait bounds waits for processes to appear or go (generous).
	Wait time.Duration

	peaks map[string]diskPeak // by workload: what its failure-free run held on disk
}

func (p *Procs) wait() time.Duration {
	if p.Wait > 0 {
		return p.Wait
	}
	return time.Minute
}

var _ Runner = (*Procs)(nil)
