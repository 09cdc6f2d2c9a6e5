package main

import (
	"fmt"
	"math"
	"strings"
	"sync"

	"github.com/ckpt/ckpt"
	"github.com/ckpt/ckpt/internal/demo"
	"github.com/ckpt/ckpt/internal/launch"
)

// accounting says where every failure of a job went, so that a summary's
// counts add up: each failure but a final one is followed by a relaunch,
// and each relaunch restored from the caches, rebuilt, the shared tier or
// nothing (from scratch), or failed again before it restored anything.
//
//	Failures = Σ BySource + NeverRestored + Final
type accounting struct {
	Failures      int            // attempts that ended in a failure
	BySource      map[string]int // relaunches by what they restored from: cache, rebuild, shared, none
	NeverRestored int            // relaunches that failed again before restoring
	Final         int            // 1 if the last attempt failed and was not relaunched
	// The relaunches from scratch by why: no checkpoint had been committed
	// (or restored) before them, or some had but none could be recovered.
	ScratchNoCheckpoint, ScratchUnrecoverable int
}

// account accounts for the attempts; commits counts the checkpoints each
// incarnation committed (nil if unknown).
func account(attempts []launch.Attempt, commits map[uint64]int) accounting {
	a := accounting{BySource: map[string]int{}}
	seen := false // a checkpoint was committed or restored before the attempt
	for i, at := range attempts {
		if at.Failure != "" {
			a.Failures++
			if i == len(attempts)-1 {
				a.Final = 1
			}
		}
		if i > 0 {
			switch at.Restored {
			case "":
				a.NeverRestored++
			case "none":
				a.BySource["none"]++
				if seen {
					a.ScratchUnrecoverable++
				} else {
					a.ScratchNoCheckpoint++
				}
			default:
				a.BySource[at.Restored]++
			}
		}
		if commits[at.Incarnation] > 0 || (at.Restored != "" && at.Restored != "none") {
			seen = true
		}
	}
	return a
}

// sources orders the restore sources and names them for a summary.
var sources = []struct{ key, name string }{
	{"cache", "from the caches"}, {"rebuild", "rebuilt from redundancy"}, {"shared", "from the shared tier"}, {"none", "from scratch"},
}

// String is the one-line account: "12 failures: 9 relaunches rebuilt from
// redundancy, 1 from scratch (no checkpoint committed yet), 2 failed again
// before restoring".
func (a accounting) String() string {
	if a.Failures == 0 {
		return "no failures"
	}
	var parts []string
	for _, s := range sources {
		n := a.BySource[s.key]
		if n == 0 {
			continue
		}
		p := fmt.Sprintf("%d %s", n, s.name)
		if s.key == "none" {
			var why []string
			if a.ScratchNoCheckpoint > 0 {
				why = append(why, fmt.Sprintf("%d: no checkpoint committed yet", a.ScratchNoCheckpoint))
			}
			if a.ScratchUnrecoverable > 0 {
				why = append(why, fmt.Sprintf("%d: none recoverable", a.ScratchUnrecoverable))
			}
			if len(why) == 1 {
				why[0] = why[0][strings.Index(why[0], ": ")+2:]
			}
			p += " (" + strings.Join(why, "; ") + ")"
		}
		parts = append(parts, p)
	}
	if a.NeverRestored > 0 {
		parts = append(parts, fmt.Sprintf("%d failed again before restoring", a.NeverRestored))
	}
	if len(parts) > 0 {
		parts[0] = plural(a.Failures-a.Final, "relaunch", "relaunches") + ": " + parts[0]
	}
	if a.Final > 0 {
		parts = append(parts, "the last ended the job (not relaunched)")
	}
	return plural(a.Failures, "failure", "failures") + " → " + strings.Join(parts, ", ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// commitLog counts the checkpoints each incarnation committed, from the
// coordinators' notices.
type commitLog struct {
	mu sync.Mutex
	n  map[uint64]int
}

// watch makes coords count into l, keeping whatever else OnCommit did.
func (l *commitLog) watch(coords *launch.Coordinators) {
	prev := coords.OnCommit
	coords.OnCommit = func(inc uint64, name string) {
		l.mu.Lock()
		if l.n == nil {
			l.n = map[uint64]int{}
		}
		l.n[inc]++
		l.mu.Unlock()
		if prev != nil {
			prev(inc, name)
		}
	}
}

func (l *commitLog) counts() map[uint64]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[uint64]int, len(l.n))
	for k, v := range l.n {
		out[k] = v
	}
	return out
}

// withStaged makes the non-blocking flush counts those the staging servers
// reported: rank 0 publishes its counts as it goes, and a flush the servers
// fail because the attempt is ending (a node lost mid-pull) is failed after
// rank 0 was killed, so its count never reached the summary while the
// progress lines showed it. Per checkpoint, the last outcome counts: failed,
// or durable (committed or durable).
func withStaged(f ckpt.FlushStats, evs []launch.StageEvent) ckpt.FlushStats {
	if f.Mode != "nonblocking" {
		return f
	}
	outcome := map[string]string{}
	for _, e := range evs {
		switch e.State {
		case "failed":
			outcome[e.Name] = "failed"
			f.LastFailure = e.Reason
		case "committed":
			outcome[e.Name] = "durable"
		case "durable":
			if outcome[e.Name] == "" {
				outcome[e.Name] = "durable"
			}
		}
	}
	// The mean latency stays rank 0's (the servers' if rank 0 saw none
	// finish) over the recounted flushes.
	mean := f.MeanLatency()
	if math.IsNaN(mean) {
		mean = demo.StagedLatency(evs)
	}
	f.Durable, f.Failed, f.Latency = 0, 0, 0
	for _, o := range outcome {
		if o == "failed" {
			f.Failed++
		} else {
			f.Durable++
		}
	}
	if f.Durable > 0 {
		f.Latency = mean * float64(f.Durable)
	}
	// What the servers finished was announced, and due: rank 0's last
	// counts may have been lost with it.
	f.Started = max(f.Started, f.Durable+f.Failed)
	f.Due = max(f.Due, f.Started+f.Skipped)
	return f
}
