package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestBenchAllJSON runs `ckpt bench all` at tiny sizes: one JSON report
// with every benchmark's own report under its name, each with its
// headline figure, the elapsed seconds of each, and progress on stderr.
func TestBenchAllJSON(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIPPED: writes tens of MiB and runs every benchmark (not with -short)")
	}
	t.Setenv(asCkpt, "1") // bench coord's workers are this test binary
	code, stdout, stderr := runCLI(t, "bench", "all", "--dir", t.TempDir(),
		"--store-size", "2MiB", "--scenario-size", "1MiB", "--stage-size", "2MiB",
		"--clients", "32", "--per-node", "8",
		"--overhead-ranks", "2", "--overhead-size", "xs", "--overhead-iterations", "40", "--overhead-trials", "1",
		"--sim-ranks", "100,1000", "--compress-himeno", "xs", "--compress-rounds", "1",
		"--scaling-ranks", "2", "--scaling-rank-size", "1MiB", "--scaling-sizes", "1MiB", "--json")
	if code != exitOK {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	obj := decodeOne(t, stdout)
	checkKeys(t, obj, nil, []string{"store", "stage", "coord", "overhead", "coord_simulate", "compress", "scaling", "seconds", "skipped", "load_average"})
	// Each section is that benchmark's report, as its own command
	// prints it: its headline figures are there.
	for name, keys := range map[string][]string{
		"store":          {"cache_write_ratio", "scenario_floor_ratio"},
		"stage":          {"stage_write_ratio", "writers"},
		"coord":          {"flat_ratio", "tree_ratio"},
		"overhead":       {"overhead_ratio", "bare_seconds"},
		"coord_simulate": {"points", "scaling_ok"},
		"compress":       {"kinds", "himeno_grid"},
		"scaling":        {"rows", "rounds"},
	} {
		sec := getObj(t, obj, name)
		for _, k := range keys {
			if _, ok := sec[k]; !ok {
				t.Errorf("%s: no %s in %v", name, k, sec)
			}
		}
		if !strings.Contains(stderr, "bench all: "+name+" (") {
			t.Errorf("stderr shows no progress for %s: %q", name, stderr)
		}
		if s := getNum(t, getObj(t, obj, "seconds"), name); !(s > 0) {
			t.Errorf("seconds.%s = %v", name, s)
		}
	}
	if p := getObj(t, obj, "coord_simulate")["points"].([]any); len(p) != 4 {
		t.Errorf("coord_simulate has %d points, want flat and tree at the 2 sizes of --sim-ranks", len(p))
	}
	if getNum(t, getObj(t, obj, "coord"), "clients") != 32 {
		t.Errorf("coord ran with %v clients, want --clients 32", getObj(t, obj, "coord")["clients"])
	}
	if g := getObj(t, obj, "compress")["himeno_grid"]; g != "33x33x65" && g != "33×33×65" {
		t.Errorf("compress ran on Himeno %v, want --compress-himeno xs", g)
	}
	// scaling's rows: 2 ranks × 1 MiB in the ranks sweep, then 4 ranks
	// (the size sweep's fixed count) × 1 MiB.
	if rows := getObj(t, obj, "scaling")["rows"].([]any); len(rows) != 2 ||
		getNum(t, rows[0].(map[string]any), "ranks") != 2 || getNum(t, rows[1].(map[string]any), "ranks") != 4 {
		t.Errorf("scaling rows %v, want 2 ranks, then 4", rows)
	}
	if s, ok := obj["skipped"].([]any); !ok || len(s) != 0 {
		t.Errorf("skipped = %v, want []", obj["skipped"])
	}
}

// --skip leaves benchmarks out of the run and the report, and says so;
// a benchmark that fails has its error as its report and fails the
// command after the report is printed.
func TestBenchAllSkipAndFailure(t *testing.T) {
	skip := "store,stage,coord,overhead,compress,scaling"
	code, stdout, stderr := runCLI(t, "bench", "all", "--skip", skip, "--sim-ranks", "50,500", "--json")
	if code != exitOK {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	obj := decodeOne(t, stdout)
	checkKeys(t, obj, nil, []string{"coord_simulate", "seconds", "skipped", "load_average"})
	var skipped []string
	for _, s := range obj["skipped"].([]any) {
		skipped = append(skipped, s.(string))
	}
	if !slices.Equal(skipped, strings.Split(skip, ",")) {
		t.Errorf("skipped = %v, want %s", skipped, skip)
	}
	if strings.Contains(stderr, "bench all: store") || !strings.Contains(stderr, "bench all: coord_simulate (1 of 1)") {
		t.Errorf("stderr %q: want only coord_simulate's progress", stderr)
	}

	// A failure in the middle (coord's, made to happen): the simulation
	// after it still runs, and the command fails after its report.
	run := benchAllRun
	t.Cleanup(func() { benchAllRun = run })
	benchAllRun = func(c *cobra.Command, args []string, w, stderr io.Writer) error {
		if args[1] == "coord" && !slices.Contains(args, "--simulate") {
			fmt.Fprintln(w, "half a report")
			return errors.New("the workers died")
		}
		return run(c, args, w, stderr)
	}
	code, stdout, stderr = runCLI(t, "bench", "all", "--skip", "store,stage,overhead,compress,scaling", "--sim-ranks", "50,500", "--json")
	if code != exitError {
		t.Fatalf("exit %d, want %d; stderr %q", code, exitError, stderr)
	}
	obj = decodeOne(t, stdout)
	if e, ok := getObj(t, obj, "coord")["error"].(string); !ok || e != "the workers died" {
		t.Errorf("coord = %v, want its error", obj["coord"])
	}
	if _, ok := getObj(t, obj, "coord_simulate")["scaling_ok"]; !ok {
		t.Errorf("coord_simulate = %v: want its report after coord failed", obj["coord_simulate"])
	}
	if !strings.Contains(stderr, "bench all: coord failed") || !strings.Contains(stderr, "ckpt: bench all: coord failed") {
		t.Errorf("stderr %q: want coord's failure said", stderr)
	}
}

func TestBenchAllBadInput(t *testing.T) {
	checkBadInput(t, []string{"--skip"}, "bench", "all", "--skip", "store,nope")
	checkBadInput(t, []string{"--store-size"}, "bench", "all", "--store-size", "1KiB")
	checkBadInput(t, []string{"--sim-ranks"}, "bench", "all", "--sim-ranks", "0")
	checkBadInput(t, []string{"--overhead-size"}, "bench", "all", "--overhead-size", "huge")
	checkBadInput(t, []string{"--dir"}, "bench", "all", "--dir", "/nonexistent/x")
}
