package main

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/internal/launch"
)

// jsonKeys are the keys of the one JSON object in text.
func jsonKeys(t *testing.T, text string) []string {
	t.Helper()
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(text), &obj); err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	var keys []string
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Under --launcher the plain demo's JSON has every key of today's and
// "launcher" and "excluded_nodes"; without it, exactly today's.
func TestDemoLauncherJSONKeys(t *testing.T) {
	plain := func(dl *demoLauncher) string {
		f := &fakeDemo{secs: map[string]float64{"reference-before": 10, "reference-after": 10, "run": 12}}
		jobs := f.jobs()
		jobs.launcher = dl
		run := jobs.run
		jobs.run = func(ctx context.Context, s runSpec) (runResult, float64, error) {
			res, secs, err := run(ctx, s)
			if s.inject != nil {
				res.Excluded = []launch.Exclusion{{Node: "node1", Reason: "lost in launch 0", Launch: 1}}
			}
			return res, secs, err
		}
		c, out, _ := demoCommand()
		if err := demoPlain(c, "s", 10, 2.5, 1, true, jobs); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	before := jsonKeys(t, plain(nil))
	out := plain(&demoLauncher{launcher: launch.Local{}})
	after := jsonKeys(t, out)
	want := slices.Sorted(slices.Values(append(slices.Clone(before), "launcher", "excluded_nodes")))
	if !slices.Equal(after, want) {
		t.Errorf("keys under --launcher %v, want today's %v and launcher, excluded_nodes", after, before)
	}
	var obj struct {
		Launcher string             `json:"launcher"`
		Excluded []launch.Exclusion `json:"excluded_nodes"`
	}
	if err := json.Unmarshal([]byte(out), &obj); err != nil || obj.Launcher != "local" || len(obj.Excluded) != 1 || obj.Excluded[0].Node != "node1" {
		t.Errorf("launcher %q, excluded %+v, %v", obj.Launcher, obj.Excluded, err)
	}
}

func TestDemoLauncherRefusals(t *testing.T) {
	checkBadInput(t, []string{"--launcher", `"pbs"`}, "demo", "--launcher", "pbs")
	checkBadInput(t, []string{"--launcher", "--flush"}, "demo", "--launcher", "local", "--flush", "blocking")
	checkBadInput(t, []string{"--spares -1"}, "demo", "--spares", "-1")
}

// ckpt demo --launcher srun (the fake srun): the demo's jobs run through
// srun, a node lost at the start of the run with failures goes to the
// spare, and the JSON says so.
func TestDemoUnderFakeSrun(t *testing.T) {
	dir := fakeSrun(t)
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv(asCkpt, "1")
	// TestDemoJSON's schedule: one node failure, 0.06 s into the run.
	code, stdout, stderr := runCLI(t, "demo", "--launcher", "srun", "--spares", "1", "--size", "xs", "--iterations", "150",
		"--mtti", "20s", "--seed", "474644", "--json")
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	var obj struct {
		Match    bool               `json:"result_matches_reference"`
		Injected int                `json:"failures_injected"`
		Launcher string             `json:"launcher"`
		Excluded []launch.Exclusion `json:"excluded_nodes"`
	}
	if err := json.Unmarshal([]byte(stdout), &obj); err != nil {
		t.Fatal(err)
	}
	if !obj.Match || obj.Launcher != "srun" || obj.Injected != 1 || len(obj.Excluded) != 1 {
		t.Errorf("%+v\n%s", obj, stderr)
	}
	if !strings.Contains(stderr, "its ranks go to spare node node4") {
		t.Errorf("no spare used:\n%s", stderr)
	}
}
