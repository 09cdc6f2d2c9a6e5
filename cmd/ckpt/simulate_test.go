package main

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

var (
	simulateDoc = []string{"efficiency", "efficiency_ci95", "expected_seconds", "expected_seconds_ci95", "lost_seconds", "lost_seconds_ci95",
		"restart_seconds", "restart_seconds_ci95", "checkpoint_seconds", "checkpoint_seconds_ci95", "model_efficiency", "model_expected_seconds",
		"work_seconds", "interval_seconds", "events", "events_per_second"}
	simulateExtras = []string{"strategy", "dist", "levels", "counts", "optimized", "replications", "seed", "failures", "failures_ci95",
		"restarts", "restarts_ci95", "model", "workers"}
	simulateUncoordinated = []string{"processes", "phi", "log_overhead", "process_seconds", "process_seconds_ci95", "process_efficiency",
		"process_efficiency_ci95", "wait_seconds", "wait_seconds_ci95"}
	workedExample = []string{"simulate", "--work", "1000h", "--rates", "2e-4,5e-5", "--cost", "30,400", "--restart", "40,500", "--interval", "600", "--counts", "4"}
)

func with(base []string, extra ...string) []string {
	return append(append([]string(nil), base...), extra...)
}

// within checks that the model's value lies within 4 standard errors of
// the simulated mean, the standard error read from the 95% half-width.
func within(t *testing.T, what string, obj map[string]any, key string, want float64) {
	t.Helper()
	got, ci := getNum(t, obj, key), getNum(t, obj, key+"_ci95")
	if z := (got - want) / (ci / 1.96); math.Abs(z) > 4 {
		t.Errorf("%s: simulated %s = %.7g ± %.2g, model %.7g (z = %.1f)", what, key, got, ci, want, z)
	}
}

func TestSimulateJSON(t *testing.T) {
	obj := runJSON(t, with(workedExample, "--replications", "300", "--json")...)
	checkKeys(t, obj, simulateDoc, simulateExtras, "counts", "failures", "failures_ci95", "restarts", "restarts_ci95")
	if obj["strategy"] != "blocking" || obj["dist"] != "exp" || obj["optimized"] != false {
		t.Errorf("strategy %v dist %v optimized %v", obj["strategy"], obj["dist"], obj["optimized"])
	}
	// SPEC-markov §7: the Markov model's efficiency, within noise.
	checkRel(t, "model_efficiency", getNum(t, obj, "model_efficiency"), 0.680046748775, 1e-9)
	within(t, "worked example", obj, "efficiency", 0.680046748775)
	// Efficiency is work over expected run time; the run time adds up.
	work, T := getNum(t, obj, "work_seconds"), getNum(t, obj, "expected_seconds")
	checkRel(t, "efficiency", getNum(t, obj, "efficiency"), work/T, 1e-12)
	parts := work + getNum(t, obj, "lost_seconds") + getNum(t, obj, "restart_seconds") + getNum(t, obj, "checkpoint_seconds")
	checkRel(t, "work + lost + restart + checkpoint", parts, T, 1e-9)
	// 1000 h is 1200 periods of 5 intervals: 1200 level-2 and 4800 level-1 checkpoints.
	checkRel(t, "checkpoint_seconds", getNum(t, obj, "checkpoint_seconds"), 4800*30+1200*400, 1e-9)
	if f := obj["failures"].([]any); len(f) != 2 {
		t.Errorf("failures = %v, want one entry per level", f)
	}
	if r := getNum(t, obj, "replications"); r != 300 {
		t.Errorf("replications = %g", r)
	}
}

// The same seed gives the same numbers whatever the workers; another seed
// does not.
func TestSimulateDeterministic(t *testing.T) {
	strip := func(obj map[string]any) map[string]any {
		delete(obj, "events_per_second")
		delete(obj, "workers")
		return obj
	}
	for _, args := range [][]string{
		with(workedExample, "--replications", "50", "--seed", "5"),
		{"simulate", "--strategy", "uncoordinated", "--work", "2e4", "--mtti", "100", "--cost", "1.6", "--restart", "1.6", "--phi", "0.3125", "--procs", "16", "--replications", "50"},
	} {
		a := strip(runJSON(t, with(args, "--workers", "1", "--json")...))
		b := strip(runJSON(t, with(args, "--workers", "2", "--json")...))
		if !reflect.DeepEqual(a, b) {
			t.Errorf("1 worker and 2 workers differ:\n%v\n%v", a, b)
		}
		c := strip(runJSON(t, with(args, "--seed", "6", "--json")...))
		if c["expected_seconds"] == a["expected_seconds"] {
			t.Errorf("seeds 5 and 6 give the same expected_seconds %v", a["expected_seconds"])
		}
	}
}

// 003 §4.1's setting at MTTI 6 h: the simulated run time agrees with
// 'ckpt model runtime' (Daly's eq. 1) within noise.
func TestSimulateSingleLevelAgreesWithDaly(t *testing.T) {
	obj := runJSON(t, "simulate", "--work", "500d", "--mtti", "6h", "--cost", "5m", "--restart", "5m", "--interval", "55m", "--replications", "200", "--json")
	daly := runJSON(t, "model", "runtime", "--work", "500d", "--mtti", "6h", "--cost", "5m", "--restart", "5m", "--interval", "55m", "--json")
	if obj["strategy"] != "single-level" {
		t.Errorf("strategy = %v", obj["strategy"])
	}
	within(t, "003 §4.1, 6 h", obj, "expected_seconds", getNum(t, daly, "expected_seconds"))
	checkRel(t, "model_expected_seconds", getNum(t, obj, "model_expected_seconds"), getNum(t, daly, "expected_seconds"), 1e-12)
}

// Without --interval the schedule is the model's optimum, the one 'ckpt
// model multilevel' prints.
func TestSimulateOptimizedSchedule(t *testing.T) {
	sato := []string{"--rates", "1.757e-5,1.3774e-6", "--cost", "72.5,72.5", "--restart", "72.5,5104", "--nonblocking", "--flush-latency", "6380", "--alpha", "0.00184"}
	obj := runJSON(t, with(with([]string{"simulate", "--work", "200d", "--replications", "100", "--json"}, sato...))...)
	ml := runJSON(t, with(with([]string{"model", "multilevel", "--json"}, sato...))...)
	if obj["optimized"] != true || obj["strategy"] != "nonblocking" {
		t.Errorf("optimized %v strategy %v", obj["optimized"], obj["strategy"])
	}
	checkRel(t, "interval", getNum(t, obj, "interval_seconds"), getNum(t, ml, "interval_seconds"), 1e-12)
	if a, b := ints(t, obj, "counts"), ints(t, ml, "counts"); !reflect.DeepEqual(a, b) {
		t.Errorf("counts %v, model multilevel %v", a, b)
	}
	if getNum(t, obj, "incomplete_segments") != getNum(t, ml, "incomplete_segments") {
		t.Errorf("incomplete_segments %v vs %v", obj["incomplete_segments"], ml["incomplete_segments"])
	}
	checkRel(t, "model_efficiency", getNum(t, obj, "model_efficiency"), getNum(t, ml, "efficiency"), 1e-12)
}

func TestSimulateNonBlockingJSON(t *testing.T) {
	args := []string{"simulate", "--work", "1000h", "--rates", "2e-4,5e-5", "--cost", "30,30", "--restart", "40,500", "--interval", "600",
		"--counts", "4", "--nonblocking", "--flush-latency", "1500", "--alpha", "0.05", "--replications", "300", "--json"}
	obj := runJSON(t, args...)
	checkKeys(t, obj, simulateDoc, append(simulateExtras, "incomplete_segments"), "counts", "failures", "failures_ci95", "restarts", "restarts_ci95")
	if m := getNum(t, obj, "incomplete_segments"); m != 3 {
		t.Errorf("incomplete_segments = %g, want 3", m)
	}
	checkRel(t, "model_efficiency", getNum(t, obj, "model_efficiency"), 0.689474185712, 1e-9)
	// The job's first period has no copy in flight, so a finite job is a
	// little more efficient than the long run: 1200 periods, well below noise.
	within(t, "non-blocking worked example", obj, "efficiency", 0.689474185712)
}

func TestSimulateUncoordinatedJSON(t *testing.T) {
	obj := runJSON(t, "simulate", "--strategy", "uncoordinated", "--work", "1e5", "--mtti", "100", "--cost", "0.605", "--restart", "0.559",
		"--detect", "0.5", "--graph", "testdata/master-worker.graph", "--log-protect", "38.257", "--log-replay", "0.005", "--replications", "100", "--json")
	checkKeys(t, obj, simulateDoc, append(simulateExtras, simulateUncoordinated...), "counts", "failures", "failures_ci95", "restarts", "restarts_ci95")
	checkRel(t, "phi", getNum(t, obj, "phi"), 0.34375, 1e-12)
	if p := getNum(t, obj, "processes"); p != 8 || obj["optimized"] != true || obj["strategy"] != "uncoordinated" {
		t.Errorf("processes %v optimized %v strategy %v", p, obj["optimized"], obj["strategy"])
	}
	// The interval is 003 eq. 11's for this φ.
	iv := runJSON(t, "model", "interval", "--method", "fialho-parallel", "--cost", "0.605", "--mtti", "100", "--restart", "0.559",
		"--detect", "0.5", "--phi", "0.34375", "--log-protect", "38.257", "--log-replay", "0.005", "--json")
	checkRel(t, "interval", getNum(t, obj, "interval_seconds"), getNum(t, iv, "interval_seconds"), 1e-12)
	// The job ends with its last process.
	if getNum(t, obj, "expected_seconds") < getNum(t, obj, "process_seconds") {
		t.Errorf("job %v ends before its mean process %v", obj["expected_seconds"], obj["process_seconds"])
	}
	// --deps and --phi describe the same φ.
	a := runJSON(t, "simulate", "--strategy", "uncoordinated", "--work", "1e4", "--mtti", "100", "--cost", "1", "--restart", "1",
		"--deps", "8,2,2,2,2,2,2,2", "--replications", "10", "--json")
	checkRel(t, "phi from --deps", getNum(t, a, "phi"), 0.34375, 1e-12)
}

func TestSimulateWeibull(t *testing.T) {
	obj := runJSON(t, "simulate", "--work", "100d", "--mtti", "6h", "--cost", "5m", "--restart", "5m", "--interval", "55m",
		"--dist", "weibull:0.7", "--replications", "100", "--json")
	if obj["dist"] != "weibull:0.7" {
		t.Errorf("dist = %v", obj["dist"])
	}
	if e, m := getNum(t, obj, "efficiency"), getNum(t, obj, "model_efficiency"); e <= m {
		t.Errorf("Weibull 0.7: efficiency %g not above the exponential model's %g", e, m)
	}
}

func TestSimulateTable(t *testing.T) {
	code, stdout, stderr := runCLI(t, with(workedExample, "--replications", "50")...)
	if code != exitOK || withoutProgress(stderr) != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	for _, want := range []string{"efficiency", "run time", "lost work", "level 2", "Markov model", "events"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, stdout)
		}
	}
}

func TestSimulateBadInput(t *testing.T) {
	one := []string{"simulate", "--work", "1d", "--mtti", "6h", "--cost", "5m", "--restart", "5m"}
	two := []string{"simulate", "--work", "1d", "--rates", "1e-4,1e-5", "--cost", "5m,5m", "--restart", "5m,1h"}
	unc := with(one, "--strategy", "uncoordinated")
	cases := []struct {
		args    []string
		mention []string
	}{
		{[]string{"simulate", "--mtti", "6h", "--cost", "5m", "--restart", "5m"}, []string{"--work"}},
		{with(one, "--rates", "1e-4"), []string{"--rates", "--mtti"}},
		{[]string{"simulate", "--work", "1d", "--mtti", "6h", "--cost", "5m"}, []string{"--restart"}},
		{with(one, "--work", "0"), []string{"--work"}},
		{with(one, "--mtti", "-1h"), []string{"--mtti"}},
		{with(one, "--mtti", "0"), []string{"--mtti"}},
		{with(one, "--cost", "-5"), []string{"--cost"}},
		{with(one, "--interval", "0"), []string{"--interval"}},
		{with(one, "--interval", "soon"), []string{"--interval"}},
		{with(one, "--detect", "-1"), []string{"--detect"}},
		{with(one, "--dist", "gamma"), []string{"--dist"}},
		{with(one, "--dist", "weibull:0"), []string{"--dist"}},
		{with(one, "--replications", "1"), []string{"--replications"}},
		{with(one, "--replications", "x"), []string{"--replications"}},
		{with(one, "--seed", "-1"), []string{"--seed"}},
		{with(one, "--workers", "-2"), []string{"--workers"}},
		{with(one, "--strategy", "optimistic"), []string{"--strategy"}},
		{with(one, "--phi", "0.5"), []string{"--phi", "uncoordinated"}},
		{with(one, "--variant", "l1-protected"), []string{"--variant"}},
		{with(one, "--nonblocking", "--flush-latency", "1h"), []string{"--nonblocking"}},
		{with(two, "--cost", "5m"), []string{"--cost"}},
		{with(two, "--interval", "1h"), []string{"--interval", "--counts"}},
		{with(two, "--counts", "3"), []string{"--counts"}},
		{with(two, "--interval", "1h", "--counts", "-1"), []string{"--counts"}},
		{with(two, "--variant", "bogus"), []string{"--variant"}},
		{with(two, "--alpha", "0.1"), []string{"--alpha"}},
		{with(two, "--nonblocking"), []string{"--flush-latency"}},
		{with(two, "--nonblocking", "--flush-latency", "10d", "--interval", "1h", "--counts", "1"), []string{"--flush-latency"}},
		{with(two, "--nonblocking", "--flush-latency", "1h", "--alpha", "-1"), []string{"--alpha"}},
		{[]string{"simulate", "--work", "1d", "--rates", "0", "--cost", "5m", "--restart", "5m"}, []string{"--rates"}},
		{[]string{"simulate", "--work", "1000y", "--mtti", "1s", "--cost", "5m", "--restart", "5m", "--interval", "1h"}, []string{"--work"}},
		{unc, []string{"--phi", "--deps", "--graph"}},
		{with(unc, "--phi", "0.5"), []string{"--procs"}},
		{with(unc, "--phi", "1.5", "--procs", "4"), []string{"--phi"}},
		{with(unc, "--phi", "0.5", "--procs", "0"), []string{"--procs"}},
		{with(unc, "--deps", "5,1"), []string{"--deps"}},
		{with(unc, "--deps", "a,1"), []string{"--deps"}},
		{with(unc, "--deps", "2,2", "--phi", "1", "--procs", "2"), []string{"--deps"}},
		{with(unc, "--graph", "/nonexistent"), []string{"--graph"}},
		{with(unc, "--graph", "testdata/bad.graph"), []string{"--graph"}},
		{with(unc, "--phi", "0.5", "--procs", "4", "--log-protect", "-1"), []string{"--log-protect"}},
		{with(unc, "--phi", "0.5", "--procs", "4", "--log-protect", "1000h"), []string{"--log-protect"}},
		{with(unc, "--phi", "0.5", "--procs", "4", "--counts", "1"), []string{"--counts"}},
		{with(unc, "--phi", "0.5", "--procs", "4", "--nonblocking"), []string{"--nonblocking"}},
		{with(two, "--strategy", "uncoordinated", "--phi", "0.5", "--procs", "4"), []string{"--rates"}},
		{with(one, "extra"), []string{"extra"}},
		{with(one, "--bogus"), []string{"--bogus"}},
	}
	for _, c := range cases {
		checkBadInput(t, c.mention, c.args...)
	}
}

func TestSimulateHelp(t *testing.T) {
	code, stdout, stderr := runCLI(t, "simulate", "--help")
	if code != exitOK || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	for _, f := range []string{"--work", "--rates", "--mtti", "--cost", "--restart", "--interval", "--counts", "--variant", "--nonblocking",
		"--flush-latency", "--alpha", "--detect", "--dist", "--strategy", "--phi", "--procs", "--deps", "--graph", "--log-protect",
		"--log-replay", "--replications", "--seed", "--workers", "--json", "weibull:", "uncoordinated", "Example"} {
		if !strings.Contains(stdout, f) {
			t.Errorf("ckpt simulate --help does not mention %s", f)
		}
	}
	code, stdout, _ = runCLI(t, "--help")
	if code != exitOK || !strings.Contains(stdout, "simulate") {
		t.Errorf("ckpt --help does not list simulate")
	}
}

// JSON output is one object even for the smallest run, and non-finite
// values (none expected) would be null, not NaN.
func TestSimulateJSONIsValid(t *testing.T) {
	_, stdout, _ := runCLI(t, with(workedExample, "--replications", "2", "--json")...)
	if !json.Valid([]byte(stdout)) {
		t.Errorf("not JSON:\n%s", stdout)
	}
}

// Long runs report their progress on stderr, short ones stay silent there
// (the other tests check that stderr is empty).
func TestSimulateProgress(t *testing.T) {
	defer func(d time.Duration) { simulateProgressEvery = d }(simulateProgressEvery)
	simulateProgressEvery = 0
	code, stdout, stderr := runCLI(t, with(workedExample, "--replications", "40", "--workers", "1", "--json")...)
	if code != exitOK || !json.Valid([]byte(stdout)) {
		t.Fatalf("exit %d, stdout %q", code, stdout)
	}
	if !strings.Contains(stderr, "ckpt simulate: 40/40 replications") || strings.Count(stderr, "\n") != 5 {
		t.Errorf("progress on stderr: %q, want a line per batch of 8", stderr)
	}
}
