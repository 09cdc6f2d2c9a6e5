package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/internal/launch"
)

// attempts builds a job's attempts from what each relaunch restored ("-"
// for an attempt that failed before restoring); every attempt but the
// last failed, and the last too if lastFailed.
func attempts(restored []string, lastFailed bool) []launch.Attempt {
	var out []launch.Attempt
	for i, r := range restored {
		a := launch.Attempt{Incarnation: uint64(i), Restored: r, Failure: "rank 3 exited: signal: killed"}
		if r == "-" {
			a.Restored = ""
		}
		if i == len(restored)-1 && !lastFailed {
			a.Failure = ""
		}
		out = append(out, a)
	}
	return out
}

// TestAccountAddsUp: the demo printed "12 failures" beside 9 rebuilds and
// 1 restart from scratch, and nothing said where the other 2 went. Every
// failure is now accounted for: relaunches by source, relaunches that
// failed again before restoring, and a last failure not relaunched; and a
// restart from scratch says why.
func TestAccountAddsUp(t *testing.T) {
	restored := []string{"none", "none"} // the first launch, then a failure before any checkpoint
	for range 9 {
		restored = append(restored, "rebuild")
	}
	restored = append(restored, "-", "-", "rebuild") // two relaunches killed before restoring, then one restored
	atts := attempts(restored, false)
	commits := map[uint64]int{1: 3, 2: 2} // checkpoints committed from incarnation 1 on
	a := launch.Account(atts, commits)
	sum := a.NeverRestored + a.Final
	for _, n := range a.BySource {
		sum += n
	}
	if a.Failures != len(atts)-1 || sum != a.Failures {
		t.Errorf("account %+v: %d failures, accounted %d; want them equal to %d", a, a.Failures, sum, len(atts)-1)
	}
	if a.BySource["rebuild"] != 10 || a.BySource["none"] != 1 || a.NeverRestored != 2 || a.ScratchNoCheckpoint != 1 || a.ScratchUnrecoverable != 0 {
		t.Errorf("account %+v", a)
	}
	want := "13 failures → 13 relaunches: 10 rebuilt from redundancy, 1 from scratch (no checkpoint committed yet), 2 failed again before restoring"
	if got := a.String(); got != want {
		t.Errorf("account:\n got %s\nwant %s", got, want)
	}

	// From scratch after checkpoints were committed: none was recoverable;
	// and a job whose last attempt failed for good says so.
	a = launch.Account(attempts([]string{"none", "rebuild", "none", "-"}, true), map[uint64]int{0: 2})
	if a.ScratchUnrecoverable != 1 || a.ScratchNoCheckpoint != 0 || a.Final != 1 || a.Failures != 4 {
		t.Errorf("account %+v", a)
	}
	want = "4 failures → 3 relaunches: 1 rebuilt from redundancy, 1 from scratch (none recoverable), 1 failed again before restoring, the last ended the job (not relaunched)"
	if got := a.String(); got != want {
		t.Errorf("account:\n got %s\nwant %s", got, want)
	}
	if got := launch.Account(attempts([]string{"none"}, false), nil).String(); got != "no failures" {
		t.Errorf("a job without failures: %q", got)
	}

	// ckpt run's summary prints it.
	r := runResult{Outcome: launch.Outcome{Report: launch.Report{Attempts: atts, Result: "ok"}, Restarts: map[string]int{}, Account: launch.Account(atts, commits)}}
	var b bytes.Buffer
	if err := printRun(&b, r, predict(0, 0, 0, r), false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "2 failed again before restoring") {
		t.Errorf("ckpt run's summary does not account for every failure:\n%s", b.String())
	}
	// And its JSON: the counts add up there too.
	b.Reset()
	r.Restarts = map[string]int{"rebuild": 10, "none": 1, "": 2}
	if err := printRun(&b, r, predict(0, 0, 0, r), true); err != nil {
		t.Fatal(err)
	}
	obj := decodeOne(t, b.String())
	jsum := 0.0
	for _, k := range []string{"restarts_from_cache", "restarts_from_rebuild", "restarts_from_shared", "restarts_from_scratch", "relaunches_never_restored"} {
		jsum += getNum(t, obj, k)
	}
	if f := getNum(t, obj, "failures"); jsum != f || f != 13 {
		t.Errorf("ckpt run --json: restarts and relaunches never restored sum to %g, failures %g; want both 13", jsum, f)
	}
	if getNum(t, obj, "scratch_no_checkpoint") != 1 || getNum(t, obj, "scratch_unrecoverable") != 0 {
		t.Errorf("ckpt run --json: scratch_no_checkpoint %v, scratch_unrecoverable %v; want 1, 0", obj["scratch_no_checkpoint"], obj["scratch_unrecoverable"])
	}
}
