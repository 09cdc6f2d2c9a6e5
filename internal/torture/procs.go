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
	// Wait bounds waits for processes to appear or go (generous).
	Wait time.Duration
}

func (p *Procs) wait() time.Duration {
	if p.Wait > 0 {
		return p.Wait
	}
	return time.Minute
}

var _ Runner = (*Procs)(nil)
