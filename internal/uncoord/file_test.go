package uncoord

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt/ckpt/internal/msglog"
	"github.com/ckpt/ckpt/internal/msglog/logstore"
)

// fileLogs makes a job keep its logs as the protectors' files, under a
// directory per attempt; reopen closes and reopens a rank's log, as its
// restarted process does.
func fileLogs(t *testing.T, j *job) (path func(rank int) string) {
	var root string
	j.newLog = func(rank int) logstore.Store {
		if rank == 0 {
			root = t.TempDir()
		}
		l, err := FileProtectors{Dir: func(r int) (string, error) {
			return filepath.Join(root, "protector-of-"+string(rune('0'+r))), nil
		}}.OpenLog(rank)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	return func(rank int) string {
		return filepath.Join(root, "protector-of-"+string(rune('0'+rank)), "msglog", "rank-"+string(rune('0'+rank))+".log")
	}
}

func reopen(t *testing.T, j *job, rank int, path string, damage func(b []byte)) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.logs[rank].Close()
	if damage != nil {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		damage(b)
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	l, err := logstore.OpenFile(path)
	if err != nil {
		// A log the protector cannot open is an empty one to the
		// restarted rank: its peers then find it lost what it had
		// acknowledged.
		t.Logf("reopening the damaged log: %v", err)
		l, err = logstore.OpenFile(path + ".new")
		if err != nil {
			t.Fatal(err)
		}
	}
	j.logs[rank] = l
}

func TestFileLogRankKilledRecoversAlone(t *testing.T) {
	const victim = 4
	var path func(int) string
	j := newJob(t, crashOnce(victim, 25, func(j *job, d *Rank) { reopen(t, j, victim, path(victim), nil) }))
	path = fileLogs(t, j)
	same(t, j.run(testCtx(t)), sequential())
	if j.whole != 0 || j.alone != 1 {
		t.Fatalf("%d whole-job restarts (%v), %d recovered alone; want 0 and 1", j.whole, j.cannot, j.alone)
	}
	if st := j.stats[victim]; st.Replayed == 0 || st.Skipped != 9 {
		t.Errorf("victim replayed %d and skipped %d, want some and 9", st.Replayed, st.Skipped)
	}
}

func TestFileLogRecordDamagedOnDiskFallsBackToWholeJob(t *testing.T) {
	const victim = 4
	var path func(int) string
	j := newJob(t, crashOnce(victim, 25, func(j *job, d *Rank) {
		// Flip a bit of the last record's data, which is just before its
		// 8-byte hash at the end of the file.
		reopen(t, j, victim, path(victim), func(b []byte) { b[len(b)-9] ^= 0x10 })
	}))
	path = fileLogs(t, j)
	same(t, j.run(testCtx(t)), sequential())
	if j.whole != 1 {
		t.Fatalf("%d whole-job restarts, want 1", j.whole)
	}
	if len(j.cannot) != 1 || !errors.Is(j.cannot[0], msglog.ErrCorrupt) {
		t.Errorf("fallback's reasons: %v, want the replay to find the record corrupt", j.cannot)
	}
}
