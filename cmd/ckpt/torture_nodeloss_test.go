package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/internal/redundancy"
	"github.com/ckpt/ckpt/internal/torture/nodeloss"
)

// runTortureNodeLoss executes 'ckpt torture nodeloss' in this process
// through its constructor (the parent command is another file's).
func runTortureNodeLoss(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	c := newTortureNodeLossCmd()
	var out, errb bytes.Buffer
	c.SetArgs(args)
	c.SetOut(&out)
	c.SetErr(&errb)
	err = c.Execute()
	return out.String(), errb.String(), err
}

func TestTortureNodeLossJSON(t *testing.T) {
	stdout, _, err := runTortureNodeLoss(t, "--scheme", "xor:3", "--nodes", "3", "--ranks-per-node", "1", "--patterns", "4", "--seed", "9", "--json")
	if err != nil {
		t.Fatal(err)
	}
	obj := decodeOne(t, stdout)
	if getNum(t, obj, "seed") != 9 || obj["ok"] != true {
		t.Errorf("seed %v, ok %v; want 9, true", obj["seed"], obj["ok"])
	}
	schemes := obj["schemes"].([]any)
	if len(schemes) != 1 {
		t.Fatalf("%d schemes, want 1", len(schemes))
	}
	s := schemes[0].(map[string]any)
	checkKeys(t, s, []string{"scheme", "nodes", "ranks_per_node", "patterns", "within", "exact", "wrong", "beyond",
		"fallback", "unsafe", "errors", "seconds", "failures"}, nil, "scheme", "fallback", "failures")
	if s["scheme"] != "xor:3" || getNum(t, s, "patterns") != 4 || getNum(t, s, "within")+getNum(t, s, "beyond") != 4 {
		t.Errorf("scheme %v: %v patterns, %v within, %v beyond", s["scheme"], s["patterns"], s["within"], s["beyond"])
	}
	if f := s["failures"].([]any); len(f) != 0 {
		t.Errorf("failures: %v", f)
	}
}

func TestTortureNodeLossTable(t *testing.T) {
	stdout, _, err := runTortureNodeLoss(t, "--scheme", "partner", "--nodes", "2", "--ranks-per-node", "1", "--patterns", "3")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"partner: 2 nodes × 1 ranks, seeds 1 to 3", "PATTERNS", "WITHIN", "UNSAFE"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "FAIL") {
		t.Errorf("a failure in a correct run:\n%s", stdout)
	}
}

func TestTortureNodeLossBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"--scheme", "xor:1", "--patterns", "1"},
		{"--scheme", "mirror", "--patterns", "1"},
		{"--scheme", "rs:4+2", "--nodes", "4", "--patterns", "1"},
		{"--scheme", "all", "--nodes", "5", "--patterns", "1"},
		{"--patterns", "0"},
		{"--workers", "0", "--patterns", "1"},
		{"--nodes", "0", "--patterns", "1"},
	} {
		_, _, err := runTortureNodeLoss(t, args...)
		var ue usageError
		if !errors.As(err, &ue) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
}

// A failing pattern makes the command fail, and the report gives its seed
// and the command line that replays it.
func TestTortureNodeLossReportsFailures(t *testing.T) {
	s, err := redundancy.ParseScheme("rs:4+2")
	if err != nil {
		t.Fatal(err)
	}
	failing := tortureResult{
		cfg: nodeloss.Config{Scheme: s, Nodes: 6, RanksPerNode: 2, Patterns: 10, Seed: 100},
		counts: nodeloss.Counts{Patterns: 10, Within: 6, Exact: 5, Wrong: 1, Beyond: 4,
			Fallback: map[string]int{nodeloss.FallbackOlder: 1, nodeloss.FallbackShared: 2, nodeloss.FallbackScratch: 1},
			Failures: []nodeloss.Failure{{Seed: 104, Pattern: "seed 104: ...", Expected: "c2 from rebuild", Got: "c1 from cache"}}},
	}
	if err := tortureVerdict([]tortureResult{failing}); err == nil {
		t.Error("tortureVerdict: no error for a wrong pattern")
	}
	failing.counts.Failures[0].Got = "c2 from rebuild"
	failing.counts.Failures = nil
	if err := tortureVerdict([]tortureResult{failing}); err != nil {
		t.Errorf("tortureVerdict without failures: %v", err)
	}
	failing.counts.Failures = []nodeloss.Failure{{Seed: 104, Pattern: "seed 104: ...", Expected: "c2 from rebuild", Got: "c1 from cache"}}
	replayLine := "ckpt torture nodeloss --scheme rs:4+2 --nodes 6 --ranks-per-node 2 --seed 104 --patterns 1"
	var table bytes.Buffer
	writeTortureTables(&table, []tortureResult{failing})
	if !strings.Contains(table.String(), "FAIL seed 104") || !strings.Contains(table.String(), replayLine) {
		t.Errorf("the table does not report the failure and its replay:\n%s", table.String())
	}
	var js bytes.Buffer
	if err := writeTortureJSON(&js, 100, []tortureResult{failing}); err != nil {
		t.Fatal(err)
	}
	var obj struct {
		OK      bool
		Schemes []struct {
			Wrong    int
			Failures []struct {
				Seed   int64
				Replay string
			}
		}
	}
	if err := json.Unmarshal(js.Bytes(), &obj); err != nil {
		t.Fatal(err)
	}
	if obj.OK || obj.Schemes[0].Wrong != 1 || len(obj.Schemes[0].Failures) != 1 ||
		obj.Schemes[0].Failures[0].Seed != 104 || obj.Schemes[0].Failures[0].Replay != replayLine {
		t.Errorf("JSON report: %+v", obj)
	}
}
