package launch

import (
	"fmt"
	"strings"
	"sync"
)

// Accounting says where every failure of a job went, so that a summary's
// counts add up: each failure but a final one is followed by a relaunch,
// and each relaunch restored from the caches, rebuilt, the shared tier or
// nothing (from scratch), or failed again before it restored anything.
//
//	Failures = Σ BySource + NeverRestored + Final
type Accounting struct {
	Failures      int            // attempts that ended in a failure
	BySource      map[string]int // relaunches by what they restored from: cache, rebuild, shared, none
	NeverRestored int            // relaunches that failed again before restoring
	Final         int            // 1 if the last attempt failed and was not relaunched
	// The relaunches from scratch by why: no checkpoint had been committed
	// (or restored) since the job last started from scratch (at its start,
	// or at a relaunch from scratch), or one had but none could be
	// recovered. Only the second lost work beyond the start: after a
	// relaunch from scratch, the checkpoints that could not be recovered
	// are gone for good, and a failure before the next commit loses the
	// work since that relaunch, as one before the job's first checkpoint
	// does (the models count both alike: docs/MODELS.md).
	ScratchNoCheckpoint, ScratchUnrecoverable int
}

// Account accounts for the attempts; commits counts the checkpoints each
// incarnation committed (nil if unknown).
func Account(attempts []Attempt, commits map[uint64]int) Accounting {
	a := Accounting{BySource: map[string]int{}}
	held := false // a checkpoint was committed or restored since the last start from scratch
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
				if held {
					a.ScratchUnrecoverable++
				} else {
					a.ScratchNoCheckpoint++
				}
			default:
				a.BySource[at.Restored]++
			}
		}
		switch {
		case commits[at.Incarnation] > 0 || (at.Restored != "" && at.Restored != "none"):
			held = true
		case at.Restored == "none":
			held = false
		}
	}
	return a
}

// sources orders the restore sources and names them for a summary.
var restoreSources = []struct{ key, name string }{
	{"cache", "from the caches"}, {"rebuild", "rebuilt from redundancy"}, {"shared", "from the shared tier"}, {"none", "from scratch"},
}

// String is the one-line account: "12 failures: 9 relaunches rebuilt from
// redundancy, 1 from scratch (no checkpoint committed yet), 2 failed again
// before restoring".
func (a Accounting) String() string {
	if a.Failures == 0 {
		return "no failures"
	}
	var parts []string
	for _, s := range restoreSources {
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

// CommitLog counts the checkpoints each incarnation committed, from the
// coordinators' notices.
type CommitLog struct {
	mu sync.Mutex
	n  map[uint64]int
}

// Watch makes coords count into l, keeping whatever else OnCommit did.
func (l *CommitLog) Watch(coords *Coordinators) {
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

// Counts returns the checkpoints committed by incarnation.
func (l *CommitLog) Counts() map[uint64]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[uint64]int, len(l.n))
	for k, v := range l.n {
		out[k] = v
	}
	return out
}
