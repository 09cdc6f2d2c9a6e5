package torture

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"
)

var fakeWorkload = Workload{Name: "fake", Ranks: 4, Nodes: 2, Redundancy: "xor:2", Staging: 1, Interval: "10steps"}

func runFake(t *testing.T, r *Fake, kinds []Kind, faults int) Result {
	t.Helper()
	res, err := Run(context.Background(), Config{Seed: 3, Duration: time.Hour, MaxFaults: faults, Kinds: kinds,
		Workloads: []Workload{fakeWorkload}, RecoverTimeout: time.Minute}, r)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestRunAccountsEveryFault(t *testing.T) {
	r := &Fake{Steps: 100, Every: 10}
	res := runFake(t, r, []Kind{KillRank, KillNode, CorruptData, KillStage}, 12)
	if res.FaultsInjected != 12 || len(r.Injected) != 12 {
		t.Fatalf("injected %d (fake saw %d), want 12", res.FaultsInjected, len(r.Injected))
	}
	sum, restarts := 0, 0
	for k, n := range res.Faults {
		sum += n
		if k.Restarts() {
			restarts += n
		}
	}
	if sum != 12 || res.Recoveries["cache"] != restarts {
		t.Fatalf("faults %v, recoveries %v", res.Faults, res.Recoveries)
	}
	if res.Failed() || res.WrongResults != 0 || res.UnexpectedRestarts != 0 || res.Stuck != 0 || len(res.Problems) != 0 {
		t.Fatalf("an honest job: %+v", res)
	}
	// 12 faults in jobs of 10 checkpoints, one to three checkpoints apart:
	// more than one job ran, and each that ran out finished.
	if res.Runs < 2 || res.RunsFinished < res.Runs-1 {
		t.Fatalf("runs %d, finished %d", res.Runs, res.RunsFinished)
	}
}

func TestRunReplaysTheSeed(t *testing.T) {
	a, b := &Fake{Steps: 100, Every: 10}, &Fake{Steps: 100, Every: 10}
	runFake(t, a, []Kind{KillRank, KillNode, HangRank}, 8)
	runFake(t, b, []Kind{KillRank, KillNode, HangRank}, 8)
	if !reflect.DeepEqual(a.Injected, b.Injected) {
		t.Fatalf("seed 3 injected\n%v\nthen\n%v", a.Injected, b.Injected)
	}
}

func TestRunCountsAWrongRestore(t *testing.T) {
	r := &Fake{Steps: 100, Every: 10, Restore: func(f Fault, committed int64) (int64, string, string) {
		return committed, "0123456789abcdef", "cache" // the right step, the wrong state
	}}
	res := runFake(t, r, []Kind{KillRank}, 3)
	if res.WrongResults != 3 || !res.Failed() || len(res.Problems) != 3 {
		t.Fatalf("three wrong restores: %+v", res)
	}
}

func TestRunCountsALossWithinTolerance(t *testing.T) {
	r := &Fake{Steps: 100, Every: 10, Restore: func(f Fault, committed int64) (int64, string, string) {
		return committed - 10, FakeSum(committed - 10), "rebuild"
	}}
	res := runFake(t, r, []Kind{KillNode}, 2)
	if res.CommittedLostWithinTolerance != 2 || res.WrongResults != 0 || !res.Failed() {
		t.Fatalf("one node lost under xor:2 and the newest checkpoint with it: %+v", res)
	}
}

func TestRunCountsALossBeyondTolerance(t *testing.T) {
	r := &Fake{Steps: 100, Every: 10, Restore: func(f Fault, committed int64) (int64, string, string) {
		return 0, FakeSum(0), "shared"
	}}
	res := runFake(t, r, []Kind{CorruptSharedObject}, 2)
	if res.Failed() || res.LostBeyondTolerance.Count != 2 || res.LostBeyondTolerance.Why["all caches lost and the newest shared copy corrupted"] != 2 {
		t.Fatalf("%+v", res)
	}
}

func TestRunFaultsPerRun(t *testing.T) {
	r := &Fake{Steps: 1000, Every: 10}
	res, err := Run(context.Background(), Config{Seed: 1, Duration: time.Hour, MaxFaults: 6, FaultsPerRun: 2,
		Kinds: []Kind{KillRank}, Workloads: []Workload{fakeWorkload, fakeWorkload}, RecoverTimeout: time.Minute}, r)
	if err != nil {
		t.Fatal(err)
	}
	// Two faults per job, then each runs to its end and is checked.
	if res.Runs != 3 || res.RunsFinished != 3 || res.FaultsInjected != 6 {
		t.Fatalf("runs %d, finished %d, faults %d", res.Runs, res.RunsFinished, res.FaultsInjected)
	}
}

func TestRunSkipsAFaultWithNothingToHit(t *testing.T) {
	r := &Fake{Steps: 100, Every: 10, Skip: func(f Fault) bool { return f.Seq%2 == 1 }}
	res := runFake(t, r, []Kind{KillRank}, 3)
	if res.FaultsInjected != 3 || res.Skipped[KillRank] != 3 || len(r.Injected) != 3 {
		t.Fatalf("injected %d, skipped %v", res.FaultsInjected, res.Skipped)
	}
	for _, f := range r.Injected {
		if f.Seq%2 != 0 {
			t.Fatalf("skipped fault %v was injected", f)
		}
	}
	// Each fault, skipped or not, came after checkpoints of its own (a
	// skipped fault does not make the next one fire at once).
	for i, n := range r.Between {
		if n < 1 {
			t.Fatalf("fault %d came %d checkpoints after the one before (%v)", i+1, n, r.Between)
		}
	}
}

func TestRunGivesUpOnAStuckJob(t *testing.T) {
	r := &Fake{Steps: 100, Every: 10, Stall: func(f Fault) bool { return f.Seq == 1 }}
	// The fake's stalled job never speaks again: the timeout is certain
	// to pass, however short.
	res, err := Run(context.Background(), Config{Seed: 3, Duration: time.Hour, MaxFaults: 2, Kinds: []Kind{KillRank},
		Workloads: []Workload{fakeWorkload}, RecoverTimeout: 50 * time.Millisecond}, r)
	if err != nil {
		t.Fatal(err)
	}
	if res.Stuck != 1 || res.FaultsInjected != 2 || res.Runs != 2 || res.Failed() {
		t.Fatalf("stuck %d, faults %d, runs %d: %+v", res.Stuck, res.FaultsInjected, res.Runs, res)
	}
}

func TestRunResumesAFailedJob(t *testing.T) {
	r := &Fake{Steps: 100, Every: 10, Fail: func(f Fault) bool { return f.Seq <= 2 }}
	res := runFake(t, r, []Kind{KillRank}, 3)
	if res.JobFailures != 2 || r.Resumed != 2 || res.FaultsInjected != 3 || res.Recoveries["cache"] != 3 || res.Failed() {
		t.Fatalf("job failures %d, resumed %d: %+v", res.JobFailures, r.Resumed, res)
	}
}

// TestRideOutToTheJobsEnd: a fault the job rides out is recovered by its
// next checkpoint, or by its end when it finishes first (a fault after
// its last checkpoint): both give the fault a recover time.
func TestRideOutToTheJobsEnd(t *testing.T) {
	r := &Fake{Steps: 30, Every: 10} // checkpoints 10, 20, 30, then done
	var progress strings.Builder
	res, err := Run(context.Background(), Config{Seed: 5, Duration: time.Hour, MaxFaults: 12, FaultsPerRun: 1,
		Kinds: []Kind{KillStage}, Workloads: []Workload{fakeWorkload}, RecoverTimeout: time.Minute, Progress: &progress}, r)
	if err != nil {
		t.Fatal(err)
	}
	atEnd := 0
	for _, n := range r.Between {
		if n == 3 {
			atEnd++ // injected after the job's last checkpoint
		}
	}
	if atEnd == 0 || atEnd == len(r.Between) {
		t.Fatalf("checkpoints before each fault %v: want some faults after the last checkpoint and some before", r.Between)
	}
	finished, checkpointed := 0, 0
	for _, line := range strings.Split(progress.String(), "\n") {
		switch {
		case strings.Contains(line, "rode out") && strings.Contains(line, ": the job finished "):
			finished++
		case strings.Contains(line, "rode out") && strings.Contains(line, " committed "):
			checkpointed++
		}
	}
	if finished != atEnd || finished+checkpointed != res.FaultsInjected {
		t.Fatalf("%d faults after the last checkpoint, %d ridden out to the end, %d to a checkpoint, %d injected:\n%s",
			atEnd, finished, checkpointed, res.FaultsInjected, progress.String())
	}
	if _, ok := res.RecoverSeconds[KillStage]; !ok || res.Failed() || res.Stuck != 0 {
		t.Fatalf("recover seconds %v, failed %v, stuck %d", res.RecoverSeconds, res.Failed(), res.Stuck)
	}
}
