package launch

import (
	"sync"
	"testing"
)

// Every failure is accounted for: relaunches by what they restored from,
// relaunches that failed again before restoring, and a last failure not
// relaunched; a restart from scratch says whether checkpoints existed.
func TestAccount(t *testing.T) {
	var atts []Attempt
	for i, r := range []string{"none", "none", "rebuild", "", "shared", "none"} {
		atts = append(atts, Attempt{Incarnation: uint64(i), Restored: r, Failure: "rank 1 exited"})
	}
	a := Account(atts, map[uint64]int{1: 2})
	sum := a.NeverRestored + a.Final
	for _, n := range a.BySource {
		sum += n
	}
	if a.Failures != 6 || sum != a.Failures || a.Final != 1 || a.NeverRestored != 1 ||
		a.BySource["none"] != 2 || a.ScratchNoCheckpoint != 1 || a.ScratchUnrecoverable != 1 {
		t.Errorf("Account = %+v (accounted %d)", a, sum)
	}
	want := "6 failures → 5 relaunches: 1 rebuilt from redundancy, 1 from the shared tier, 2 from scratch (1: no checkpoint committed yet; 1: none recoverable), 1 failed again before restoring, the last ended the job (not relaunched)"
	if got := a.String(); got != want {
		t.Errorf("String:\n got %s\nwant %s", got, want)
	}
	if got := Account(atts[:1], nil); got.Failures != 1 || got.String() != "1 failure → the last ended the job (not relaunched)" {
		t.Errorf("one failure: %+v %q", got, got.String())
	}
}

// A relaunch from scratch after one that had itself started from scratch
// and committed nothing lost only the work since that relaunch: the
// checkpoints that could not be recovered before were gone already. Seed
// 19 of the demo: checkpoints committed, two nodes lost (from scratch:
// unrecoverable), two more checkpoints, two nodes lost again
// (unrecoverable), then a failure 0.26 s into the relaunch from scratch.
func TestAccountScratchAfterScratch(t *testing.T) {
	restored := []string{"none", "rebuild", "rebuild", "", "none", "", "none", "none", "rebuild"}
	var atts []Attempt
	for i, r := range restored {
		atts = append(atts, Attempt{Incarnation: uint64(i), Restored: r, Failure: "injected"})
	}
	atts[len(atts)-1].Failure = ""
	a := Account(atts, map[uint64]int{0: 2, 4: 2, 7: 5})
	if a.ScratchUnrecoverable != 2 || a.ScratchNoCheckpoint != 1 || a.BySource["none"] != 3 {
		t.Errorf("Account = %+v: want 2 relaunches from scratch that lost checkpoints and 1 that lost only the work since a start from scratch", a)
	}
}

// A CommitLog counts each incarnation's commits and keeps the OnCommit it
// wraps, from several goroutines at once.
func TestCommitLog(t *testing.T) {
	var prev int
	var mu sync.Mutex
	coords := &Coordinators{OnCommit: func(uint64, string) { mu.Lock(); prev++; mu.Unlock() }}
	var l CommitLog
	if got := l.Counts(); len(got) != 0 {
		t.Fatalf("Counts before any commit: %v", got)
	}
	l.Watch(coords)
	var wg sync.WaitGroup
	for inc := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range inc + 1 {
				coords.OnCommit(uint64(inc), "c")
			}
		}()
	}
	wg.Wait()
	got := l.Counts()
	if got[0] != 1 || got[1] != 2 || got[2] != 3 || prev != 6 {
		t.Errorf("Counts = %v, the wrapped OnCommit ran %d times; want 1, 2, 3 and 6", got, prev)
	}
}
