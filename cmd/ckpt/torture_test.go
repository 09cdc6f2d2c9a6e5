package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ckpt/ckpt"
	"github.com/ckpt/ckpt/examples/ranks"
	"github.com/ckpt/ckpt/internal/torture"
)

// TestTorture runs a short campaign on real jobs: ranks, launchers and
// staging servers are processes of the test binary. It stops after a
// number of faults, not a time, so that a slow machine sees the same
// faults, later; --duration only bounds it.
func TestTorture(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real jobs for a minute or more; not in -short")
	}
	t.Setenv(asCkpt, "1")
	code, stdout, stderr := runCLI(t, "torture", "--duration", "15m", "--faults", "8", "--seed", "1",
		"--workload", "himeno", "--dir", t.TempDir(), "--json")
	if code != exitOK {
		t.Fatalf("ckpt torture: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	obj := decodeOne(t, stdout)
	for _, k := range []string{"faults_injected", "faults", "recoveries", "wrong_results", "committed_lost_within_tolerance",
		"lost_beyond_tolerance", "recover_seconds", "seed"} {
		if _, ok := obj[k]; !ok {
			t.Errorf("the JSON has no %q: %s", k, stdout)
		}
	}
	var res torture.Result
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatal(err)
	}
	if res.FaultsInjected != 8 || len(res.Faults) < 3 {
		t.Errorf("%d faults of %d kinds injected (%v), want 8 of at least 3\n%s", res.FaultsInjected, len(res.Faults), res.Faults, stderr)
	}
	if res.WrongResults != 0 || res.CommittedLostWithinTolerance != 0 {
		t.Errorf("wrong results %d, committed lost within tolerance %d: %q\n%s", res.WrongResults, res.CommittedLostWithinTolerance, res.Problems, stderr)
	}
	recovered := 0
	for _, n := range res.Recoveries {
		recovered += n
	}
	if recovered == 0 || res.Seed != 1 {
		t.Errorf("recoveries %v, seed %d", res.Recoveries, res.Seed)
	}
	for k := range res.Faults {
		if _, ok := res.RecoverSeconds[k]; !ok && res.Stuck == 0 {
			t.Errorf("no recovery time for %s: %v", k, res.RecoverSeconds)
		}
	}
	// One progress line per fault and per recovery.
	if n := strings.Count(stderr, "injected (newest committed"); n != 8 {
		t.Errorf("%d progress lines of injected faults, want 8:\n%s", n, stderr)
	}
	if !strings.Contains(stderr, "recovered from #") {
		t.Errorf("no progress line of a recovery:\n%s", stderr)
	}
}

// TestTortureFailsOnAWrongResult: a restore whose state differs from the
// failure-free run's is a wrong result, and ckpt torture exits 1.
func TestTortureFailsOnAWrongResult(t *testing.T) {
	fake := &torture.Fake{Steps: 50, Every: 10, Restore: func(f torture.Fault, committed int64) (int64, string, string) {
		return committed, "badbadbadbadbad0", "cache"
	}}
	res, err := torture.Run(context.Background(), torture.Config{Seed: 9, Duration: time.Hour, MaxFaults: 2,
		Kinds: []torture.Kind{torture.KillRank}, RecoverTimeout: time.Minute,
		Workloads: []torture.Workload{{Name: "fake", Ranks: 4, Nodes: 2, Redundancy: "xor:2", Interval: "10steps"}}}, fake)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err = reportTorture(&out, res, true)
	var se statusError
	if !errors.As(err, &se) || se.status != exitError {
		t.Fatalf("reportTorture of a wrong result: %v, want exit status %d", err, exitError)
	}
	obj := decodeOne(t, out.String())
	if obj["wrong_results"] != json.Number("2") {
		t.Fatalf("wrong_results %v, want 2:\n%s", obj["wrong_results"], out.String())
	}
	// The table says it too.
	out.Reset()
	reportTorture(&out, res, false)
	if !strings.Contains(out.String(), "wrong result: restored state at step") {
		t.Fatalf("the table names no wrong result:\n%s", out.String())
	}
	// An honest run exits 0.
	honest, err := torture.Run(context.Background(), torture.Config{Seed: 9, Duration: time.Hour, MaxFaults: 2,
		Kinds: []torture.Kind{torture.KillRank}, RecoverTimeout: time.Minute,
		Workloads: []torture.Workload{{Name: "fake", Ranks: 4, Nodes: 2, Redundancy: "xor:2", Interval: "10steps"}}}, &torture.Fake{Steps: 50, Every: 10})
	if err != nil {
		t.Fatal(err)
	}
	if err := reportTorture(&out, honest, true); err != nil {
		t.Fatalf("an honest campaign: %v", err)
	}
}

func TestTortureBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"torture", "--kinds", "kill-rank,explode"},
		{"torture", "--workload", "lu"},
		{"torture", "--redundancy", "xor:3", "--nodes", "2"},
		{"torture", "-n", "1"},
		{"torture", "--staging-servers", "0", "--kinds", "kill-stage"},
	} {
		if code, _, stderr := runCLI(t, args...); code != exitUsage {
			t.Errorf("ckpt %s: exit %d, want %d (%s)", strings.Join(args, " "), code, exitUsage, stderr)
		}
	}
	code, stdout, _ := runCLI(t, "torture", "--help")
	if code != exitOK || !strings.Contains(stdout, "Replaying") || !strings.Contains(stdout, "kill-launcher") {
		t.Fatalf("ckpt torture --help: exit %d\n%s", code, stdout)
	}
}

// TestExampleTrace: --trace has rank 0 write a line at the start and the
// end whose checksum is the result's; a trace that cannot be opened is a
// configuration error.
func TestExampleTrace(t *testing.T) {
	trace := filepath.Join(t.TempDir(), "trace.jsonl")
	code, stdout, stderr := runCLI(t, "example", "himeno", "--size", "xs", "--iterations", "20", "--trace", trace)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	text, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(text)), "\n")
	var first, last ranks.TraceEvent
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil {
		t.Fatal(err)
	}
	if first.Event != "started" || first.Step != 0 || last.Event != "done" || last.Step != 20 || last.At < first.At {
		t.Fatalf("trace:\n%s", text)
	}
	if !strings.Contains(stdout, "checksum="+last.Checksum) {
		t.Fatalf("the result %q has not the trace's final checksum %s", stdout, last.Checksum)
	}
	code, _, stderr = runCLI(t, "example", "himeno", "--size", "xs", "--iterations", "20", "--trace", filepath.Join(t.TempDir(), "no", "such", "dir"))
	if code != ckpt.ExitConfig || !strings.Contains(stderr, "--trace") {
		t.Fatalf("an unwritable trace: exit %d, %s", code, stderr)
	}
}

// TestTortureHostile runs a short campaign of hostile faults on real jobs
// with relays (--tree): every kind of listener is attacked, each holds
// every attack it sees to its end, and the job rides the attacks out.
func TestTortureHostile(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real jobs for about 40s (55s with -race); not in -short")
	}
	t.Setenv(asCkpt, "1")
	code, stdout, stderr := runCLI(t, "torture", "--duration", "15m", "--faults", "2", "--seed", "3", "--kinds", "hostile",
		"--workload", "matmul", "--tree", "--heartbeat-timeout", "3s", "--dir", t.TempDir(), "--json")
	if code != exitOK {
		t.Fatalf("ckpt torture: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	t.Log(stderr)
	obj := decodeOne(t, stdout)
	for _, k := range []string{"hostile_failures", "attacks_held", "attacks_cut"} {
		if _, ok := obj[k]; !ok {
			t.Errorf("the JSON has no %q: %s", k, stdout)
		}
	}
	var res torture.Result
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatal(err)
	}
	if res.FaultsInjected != 2 || res.Faults[torture.Hostile] != 2 {
		t.Fatalf("faults %v, want 2 hostile\n%s", res.Faults, stderr)
	}
	if res.HostileFailures != 0 || res.WrongResults != 0 || len(res.Problems) != 0 {
		t.Errorf("hostile failures %d, wrong results %d: %q\n%s", res.HostileFailures, res.WrongResults, res.Problems, stderr)
	}
	// Every kind of listener held attacks: the coordinator, the two
	// relays, the four ranks' peer listeners, the staging server.
	for _, k := range []string{"coordinator", "relay", "peer", "stage"} {
		if res.AttacksHeld[k] == 0 {
			t.Errorf("no attack on a %s held: %v\n%s", k, res.AttacksHeld, stderr)
		}
	}
	// Ridden out: no restart, and every job ran to its end with the
	// failure-free result (checked with every checkpoint on the way).
	if len(res.Recoveries) != 0 || res.UnexpectedRestarts != 0 || res.JobFailures != 0 || res.Stuck != 0 || res.RunsFinished != res.Runs {
		t.Errorf("recoveries %v, unexpected restarts %d, job failures %d, stuck %d, runs %d finished of %d\n%s",
			res.Recoveries, res.UnexpectedRestarts, res.JobFailures, res.Stuck, res.RunsFinished, res.Runs, stderr)
	}
	// A progress line per fault counts the attacks each kind held.
	n := 0
	for _, line := range strings.Split(stderr, "\n") {
		if !strings.Contains(line, "attacks of #") {
			continue
		}
		n++
		for _, k := range []string{"coordinator ", "relay ", "peer ", "stage "} {
			if !strings.Contains(line, k) {
				t.Errorf("the progress line %q counts no attack a %s held", line, k)
			}
		}
	}
	if n != 2 {
		t.Errorf("%d progress lines of attacks, want 2:\n%s", n, stderr)
	}
}

// TestTortureFailsOnAHostileFailure: an attack a listener did not hold
// fails ckpt torture, and the account names it.
func TestTortureFailsOnAHostileFailure(t *testing.T) {
	res := torture.Result{Seed: 4, FaultsInjected: 1, Faults: map[torture.Kind]int{torture.Hostile: 1}, HostileFailures: 1,
		AttacksHeld: map[string]int{"coordinator": 8}, Problems: []string{"hostile: #1 hostile target 0: coordinator/silent: FAILED"}}
	var out bytes.Buffer
	err := reportTorture(&out, res, true)
	var se statusError
	if !errors.As(err, &se) || se.status != exitError || !strings.Contains(err.Error(), "1 hostile failures") {
		t.Fatalf("reportTorture of a hostile failure: %v, want exit status %d", err, exitError)
	}
	if obj := decodeOne(t, out.String()); obj["hostile_failures"] != json.Number("1") {
		t.Fatalf("hostile_failures %v, want 1:\n%s", obj["hostile_failures"], out.String())
	}
	out.Reset()
	reportTorture(&out, res, false)
	if !strings.Contains(out.String(), "coordinator/silent: FAILED") || !strings.Contains(out.String(), "attacks held: coordinator 8") {
		t.Fatalf("the table names no hostile failure:\n%s", out.String())
	}
}
