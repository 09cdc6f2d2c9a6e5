package launch

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestClassify(t *testing.T) {
	// The others' symptom when one rank dies: the coordinator aborted them.
	aborted := func(r int) RankExit {
		return RankExit{Rank: r, Status: ExitJobFailed, Last: "ckpt: job aborted: rank 1 (node node0): connection closed before leave"}
	}
	killed := func(r int) RankExit { return RankExit{Rank: r, Status: -1, Signal: syscall.SIGKILL, Killed: true} }
	for _, tc := range []struct {
		name      string
		seen      Seen
		class     string
		relaunch  bool
		cause     []string // the cause names these
		notCause  string   // and not this
		whyNeeded bool
	}{
		{
			name: "configuration error, seen after the others' symptoms",
			seen: Seen{Exits: []RankExit{aborted(0), {Rank: 1, Node: "node0", Status: ExitConfig, Last: "ckpt: redundancy xor:9: no sets fit"}, killed(2)},
				Symptom: "rank 1 (node node0): connection closed before leave", Checkpointed: true},
			class: ClassConfig, cause: []string{"rank 1 (node node0)", "status 78", "xor:9"}, notCause: "connection closed", whyNeeded: true,
		},
		{
			// Before any checkpoint too: the whole job's relaunch serves it.
			name: "a rank restarted alone whose checkpoint and log cannot serve",
			seen: Seen{Exits: []RankExit{{Rank: 1, Node: "node0", Status: ExitCannotServe, Last: "ckpt: message log of rank 1: hash mismatch"}, aborted(0)},
				Symptom: "rank 1: exit status 66"},
			class: ClassFailure, relaunch: true, cause: []string{"rank 1 (node node0)", "status 66", "hash mismatch", "cannot serve a recovery alone"},
		},
		{
			name:  "program that always fails, before any checkpoint",
			seen:  Seen{Exits: []RankExit{{Rank: 0, Status: 1}, {Rank: 1, Status: 1}}, Symptom: "rank 0: exit status 1"},
			class: ClassApplication, cause: []string{"rank 0 exited with status 1"}, whyNeeded: true,
		},
		{
			name:  "application error after a checkpoint: relaunch from it",
			seen:  Seen{Exits: []RankExit{{Rank: 2, Status: 3, Last: "boom"}, aborted(0), killed(1)}, Committed: 2},
			class: ClassApplication, relaunch: true, cause: []string{"rank 2", "status 3", "boom"},
		},
		{
			name:  "application error after a restore: relaunch",
			seen:  Seen{Exits: []RankExit{{Rank: 2, Status: 3}}, Restored: true},
			class: ClassApplication, relaunch: true, cause: []string{"rank 2"},
		},
		{
			name:  "the same application error again without progress",
			seen:  Seen{Exits: []RankExit{{Rank: 2, Status: 3}}, Restored: true, Checkpointed: true, PrevApplication: true},
			class: ClassApplication, cause: []string{"rank 2"}, whyNeeded: true,
		},
		{
			name:  "an application error again, but with progress: relaunch",
			seen:  Seen{Exits: []RankExit{{Rank: 2, Status: 3}}, Restored: true, Committed: 1, PrevApplication: true},
			class: ClassApplication, relaunch: true, cause: []string{"rank 2"},
		},
		{
			name:  "a crash (SIGSEGV) before any checkpoint is the program's",
			seen:  Seen{Exits: []RankExit{{Rank: 0, Status: -1, Signal: syscall.SIGSEGV}}},
			class: ClassApplication, cause: []string{"rank 0 killed by signal SIGSEGV"}, whyNeeded: true,
		},
		{
			name:  "killed from outside (the OOM killer), the others' errors follow: a failure",
			seen:  Seen{Exits: []RankExit{{Rank: 1, Status: 1, Last: "peer closed"}, {Rank: 3, Status: -1, Signal: syscall.SIGKILL}, killed(0)}},
			class: ClassFailure, relaunch: true, cause: []string{"rank 3 killed by signal SIGKILL"},
		},
		{
			name:  "an injected failure is a failure whatever the ranks say",
			seen:  Seen{Exits: []RankExit{{Rank: 1, Status: 1}, killed(0)}, Injected: "injected failure: rank 0 killed"},
			class: ClassFailure, relaunch: true, cause: []string{"injected failure: rank 0 killed"},
		},
		{
			name:  "a hung rank: only the coordinator's word, the rest killed by the launcher",
			seen:  Seen{Exits: []RankExit{killed(0), aborted(1)}, Symptom: "rank 0 (node n0): heartbeat timeout"},
			class: ClassFailure, relaunch: true, cause: []string{"heartbeat timeout"},
		},
		{
			name:  "stopped by the operator: neither relaunched nor blamed on a rank",
			seen:  Seen{Exits: []RankExit{killed(0), {Rank: 1, Status: 3}}, Stopped: true, Symptom: "stopped by SIGTERM"},
			class: ClassStopped, cause: []string{"SIGTERM"}, whyNeeded: true,
		},
		{
			name:  "a configuration error of a rank killed afterwards by the launcher still counts",
			seen:  Seen{Exits: []RankExit{{Rank: 0, Status: ExitConfig, Killed: true}}},
			class: ClassConfig, cause: []string{"configuration error"}, whyNeeded: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Classify(tc.seen)
			if v.Class != tc.class || v.Relaunch != tc.relaunch {
				t.Errorf("class %q relaunch %v, want %q %v (%+v)", v.Class, v.Relaunch, tc.class, tc.relaunch, v)
			}
			for _, c := range tc.cause {
				if !strings.Contains(v.Cause, c) {
					t.Errorf("cause %q lacks %q", v.Cause, c)
				}
			}
			if tc.notCause != "" && strings.Contains(v.Cause, tc.notCause) {
				t.Errorf("cause %q is the symptom %q", v.Cause, tc.notCause)
			}
			if tc.whyNeeded != (v.Why != "") {
				t.Errorf("why %q: want one %v", v.Why, tc.whyNeeded)
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	b := Backoff{Initial: 100 * time.Millisecond, Max: time.Second}
	var got []time.Duration
	for _, progress := range []bool{false, false, false, false, false, true, false} {
		got = append(got, b.Next(progress))
	}
	want := []time.Duration{100, 200, 400, 800, 1000, 100, 200}
	for i := range want {
		if got[i] != want[i]*time.Millisecond {
			t.Fatalf("waits %v, want %v ms (doubling to the cap, reset by progress)", got, want)
		}
	}
}
