package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --alpha-from takes α = c·x from a bench stage report, and the model and
// the planner answer as with --alpha of that value.
func TestAlphaFrom(t *testing.T) {
	dir := t.TempDir()
	report := filepath.Join(dir, "stage.json")
	// c = 0.02 per GB/s; 4 servers moved 800 MB/s: x = 200 MB/s, α = 0.004.
	if err := os.WriteFile(report, []byte(`{"alpha_slope_per_gbps": 0.02, "stage_write_ratio": 0.9,
		"servers": [{"servers": 1, "bytes_per_second": 5e8, "ratio": 0.5}, {"servers": 4, "bytes_per_second": 8e8, "ratio": 0.8}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"model", "multilevel", "--rates", "1e-5,1e-6", "--cost", "10,100", "--restart", "10,100",
		"--nonblocking", "--flush-latency", "2000", "--interval", "600", "--counts", "5", "--json"}
	from := runJSON(t, append(args, "--alpha-from", report)...)
	direct := runJSON(t, append(args, "--alpha", "0.004")...)
	if f, d := getNum(t, from, "efficiency"), getNum(t, direct, "efficiency"); f != d {
		t.Errorf("efficiency with --alpha-from %v, with --alpha 0.004 %v", f, d)
	}
	// An explicit read rate replaces the report's: 1 GB/s gives α = 0.02.
	rate := runJSON(t, append(args, "--alpha-from", report, "--read-rate", "1GB/s")...)
	direct = runJSON(t, append(args, "--alpha", "0.02")...)
	if f, d := getNum(t, rate, "efficiency"), getNum(t, direct, "efficiency"); f != d {
		t.Errorf("efficiency with --read-rate 1GB/s %v, with --alpha 0.02 %v", f, d)
	}
	code, _, stderr := runCLI(t, "plan", "--alpha-from", report)
	if code != 0 || !strings.Contains(stderr, "α = 0.004") {
		t.Errorf("plan --alpha-from: exit %d, stderr %q", code, stderr)
	}
	// A run's report: the α it measured, as is.
	run := filepath.Join(dir, "run.json")
	os.WriteFile(run, []byte(`{"result": "x", "flush": {"mode": "nonblocking", "alpha_measured": 0.03}}`), 0o644)
	demo := filepath.Join(dir, "demo.json")
	os.WriteFile(demo, []byte(`{"blocking": {"alpha": null}, "nonblocking": {"alpha": 0.03}}`), 0o644)
	direct = runJSON(t, append(args, "--alpha", "0.03")...)
	for _, f := range []string{run, demo} {
		if got := runJSON(t, append(args, "--alpha-from", f)...); getNum(t, got, "efficiency") != getNum(t, direct, "efficiency") {
			t.Errorf("--alpha-from %s: efficiency %v, with --alpha 0.03 %v", filepath.Base(f), getNum(t, got, "efficiency"), getNum(t, direct, "efficiency"))
		}
	}
	unmeasured := filepath.Join(dir, "unmeasured.json")
	os.WriteFile(unmeasured, []byte(`{"flush": {"alpha_measured": null}, "nonblocking": {"alpha": null}}`), 0o644)
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"writers": []}`), 0o644)
	for _, c := range [][]string{
		append(args, "--alpha-from", bad),
		append(args, "--alpha-from", filepath.Join(dir, "missing.json")),
		append(args, "--alpha-from", report, "--alpha", "0.1"),
		append(args, "--read-rate", "1GB/s"),
		append(args, "--alpha-from", unmeasured),
		append(args, "--alpha-from", run, "--read-rate", "1GB/s"),
	} {
		if code, _, stderr := runCLI(t, c...); code != exitUsage || stderr == "" {
			t.Errorf("%v: exit %d (%q), want a usage error", c[len(c)-2:], code, stderr)
		}
	}
}
