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
