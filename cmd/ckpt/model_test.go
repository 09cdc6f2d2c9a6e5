package main

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/model"
)

const (
	minute = 60.0
	hour   = 3600.0
	day    = 86400.0
	year   = 365 * day
)

func TestIntervalJSON(t *testing.T) {
	cost, mtti := 5*minute, 24*hour
	want := map[string]float64{
		"young": model.Young(cost, mtti),
		"daly":  model.Daly(cost, mtti),
		"daly1": model.DalyFirstOrder(cost, mtti),
		"gropp": model.GroppLusk(cost, mtti),
	}
	for method, w := range want {
		obj := runJSON(t, "model", "interval", "--method", method, "--cost", "5m", "--mtti", "24h", "--json")
		checkKeys(t, obj, []string{"interval_seconds"}, []string{"method", "ignored"})
		if obj["method"] != method {
			t.Errorf("method = %v, want %s", obj["method"], method)
		}
		checkRel(t, method+" interval_seconds", getNum(t, obj, "interval_seconds"), w, 1e-12)
	}
	// Young is √(2δM) = √(2 · 300 · 86400).
	obj := runJSON(t, "model", "interval", "--method", "young", "--cost", "300", "--mtti", "86400", "--json")
	checkRel(t, "young", getNum(t, obj, "interval_seconds"), math.Sqrt(2*300*86400), 1e-12)
}

func TestIntervalFialhoJSON(t *testing.T) {
	obj := runJSON(t, "model", "interval", "--method", "fialho", "--cost", "5m", "--mtti", "24h", "--restart", "5m", "--json")
	fialhoExtras := []string{"method", "ignored", "overhead_interval_seconds", "overhead_fraction"}
	checkKeys(t, obj, []string{"interval_seconds", "overhead_seconds"}, fialhoExtras)
	iv := getNum(t, obj, "interval_seconds")
	if math.Abs(iv-6893.75) > 0.01 {
		t.Errorf("fialho 5m/24h/5m interval = %.4f s, want 6893.75", iv)
	}
	in := model.IntervalInput{Cost: 300, MTTI: 86400, Restart: 300}
	res, err := model.OptimalInterval(model.MethodFialho, in, 0)
	if err != nil {
		t.Fatal(err)
	}
	checkRel(t, "interval", iv, res.Interval, 1e-12)
	checkRel(t, "overhead", getNum(t, obj, "overhead_seconds"), res.Overhead, 1e-12)
	checkRel(t, "overhead at", getNum(t, obj, "overhead_interval_seconds"), res.Interval, 1e-12)
	checkRel(t, "overhead fraction", getNum(t, obj, "overhead_fraction"), res.Overhead/86400, 1e-12)

	// --interval evaluates the overhead elsewhere; the optimum is unchanged.
	obj = runJSON(t, "model", "interval", "--method", "fialho", "--cost", "5m", "--mtti", "24h", "--restart", "5m", "--interval", "1h", "--json")
	checkRel(t, "interval with --interval", getNum(t, obj, "interval_seconds"), res.Interval, 1e-12)
	checkRel(t, "overhead at 1h", getNum(t, obj, "overhead_seconds"), model.FialhoOverhead(3600, in), 1e-12)
	checkRel(t, "overhead_interval_seconds", getNum(t, obj, "overhead_interval_seconds"), 3600, 0)

	// fialho-parallel, 003's example parameters.
	obj = runJSON(t, "model", "interval", "--method", "fialho-parallel", "--cost", "1.63", "--mtti", "100",
		"--restart", "1.643", "--detect", "0.5", "--phi", "0.34375", "--log-protect", "2.771", "--log-replay", "0.2", "--json")
	checkKeys(t, obj, []string{"interval_seconds", "overhead_seconds"}, fialhoExtras)
	pin := model.IntervalInput{Cost: 1.63, MTTI: 100, Restart: 1.643, Detect: 0.5, Phi: 0.34375, LogProtect: 2.771, LogReplay: 0.2}
	pres, err := model.OptimalInterval(model.MethodFialhoParallel, pin, 0)
	if err != nil {
		t.Fatal(err)
	}
	checkRel(t, "parallel interval", getNum(t, obj, "interval_seconds"), pres.Interval, 1e-12)
	checkRel(t, "parallel overhead", getNum(t, obj, "overhead_seconds"), pres.Overhead, 1e-12)
}

// TestIntervalNoOptimum: Fialho's eq. 6 has no real optimum when detection
// and restart outlast the MTTI; the command exits 2 and says why.
func TestIntervalNoOptimum(t *testing.T) {
	checkBadInput(t, []string{"no real optimum"}, "model", "interval", "--method", "fialho", "--cost", "1", "--mtti", "1", "--restart", "10")
	checkBadInput(t, []string{"no real optimum"}, "model", "interval", "--method", "fialho-parallel", "--cost", "1", "--mtti", "1",
		"--restart", "1", "--log-replay", "10", "--phi", "0.5")
	checkBadInput(t, []string{"no real optimum"}, "model", "interval", "--method", "fialho", "--cost", "1", "--mtti", "1", "--detect", "5", "--json")
}

// TestIntervalDaly1Domain: Daly's first-order formula √(2δM) − δ is ≤ 0
// for δ ≥ 2M. The command printed that negative interval with exit 0;
// outside the domain it exits 2 with one line naming the inputs and the
// domain, and inside it prints a positive interval. Searched over a grid of
// costs and MTTIs on both sides of δ = 2M.
func TestIntervalDaly1Domain(t *testing.T) {
	checkBadInput(t, []string{"no real optimum", "cost", "mtti", "δ < 2M"}, "model", "interval", "--method", "daly1", "--cost", "300", "--mtti", "100")
	checkBadInput(t, []string{"no real optimum"}, "model", "interval", "--method", "daly1", "--cost", "2h", "--mtti", "1h", "--json")
	for _, mtti := range []float64{1, 100, 86400} {
		for _, ratio := range []float64{0.01, 0.5, 1.9, 1.999, 2, 2.001, 3, 100} {
			cost := ratio * mtti
			args := []string{"model", "interval", "--method", "daly1", "--cost", fmt.Sprint(cost), "--mtti", fmt.Sprint(mtti), "--json"}
			code, stdout, stderr := runCLI(t, args...)
			if ratio < 2 {
				if code != exitOK {
					t.Errorf("ckpt %s: exit %d (%s), want a positive interval", strings.Join(args, " "), code, stderr)
					continue
				}
				if iv := getNum(t, decodeOne(t, stdout), "interval_seconds"); !(iv > 0) {
					t.Errorf("ckpt %s: interval %g, want > 0", strings.Join(args, " "), iv)
				}
				continue
			}
			if code != exitUsage || stdout != "" || strings.Count(stderr, "\n") != 1 {
				t.Errorf("ckpt %s: exit %d, stdout %q, stderr %q; want exit 2, one line", strings.Join(args, " "), code, stdout, stderr)
			}
		}
	}
}

func TestRuntimeJSON(t *testing.T) {
	obj := runJSON(t, "model", "runtime", "--work", "500d", "--interval", "115m", "--cost", "5m", "--mtti", "24h", "--restart", "5m", "--json")
	checkKeys(t, obj, []string{"expected_seconds", "efficiency"}, nil)
	wantT, wantE := model.DalyRuntime(model.RuntimeInput{Work: 500 * day, Interval: 115 * minute, Cost: 300, MTTI: 86400, Restart: 300})
	checkRel(t, "expected_seconds", getNum(t, obj, "expected_seconds"), wantT, 1e-12)
	checkRel(t, "efficiency", getNum(t, obj, "efficiency"), wantE, 1e-12)
	if e := getNum(t, obj, "efficiency"); !(e > 0 && e <= 1) {
		t.Errorf("efficiency %g outside (0, 1]", e)
	}
	checkRel(t, "efficiency = work/expected", getNum(t, obj, "efficiency"), 500*day/getNum(t, obj, "expected_seconds"), 1e-12)

	// --restart defaults to 0; years are 365 days.
	obj = runJSON(t, "model", "runtime", "--work", "1y", "--interval", "1h", "--cost", "300s", "--mtti", "5y", "--json")
	wantT, _ = model.DalyRuntime(model.RuntimeInput{Work: year, Interval: hour, Cost: 300, MTTI: 5 * year})
	checkRel(t, "expected_seconds (1y, 5y)", getNum(t, obj, "expected_seconds"), wantT, 1e-12)
}

func TestPhiJSON(t *testing.T) {
	obj := runJSON(t, "model", "phi", "--deps", "8,2,2,2,2,2,2,2", "--json")
	checkKeys(t, obj, []string{"phi"}, []string{"processes", "p"})
	checkRel(t, "phi", getNum(t, obj, "phi"), 0.34375, 0)
	if n := getNum(t, obj, "processes"); n != 8 {
		t.Errorf("processes = %g", n)
	}
	// Spaces around entries are allowed.
	obj = runJSON(t, "model", "phi", "--deps", " 8, 2,2,2,2,2,2,2 ", "--json")
	checkRel(t, "phi with spaces", getNum(t, obj, "phi"), 0.34375, 0)

	obj = runJSON(t, "model", "phi", "--graph", "testdata/master-worker.graph", "--json")
	checkKeys(t, obj, []string{"phi"}, []string{"processes", "p", "names"})
	checkRel(t, "phi from graph", getNum(t, obj, "phi"), 0.34375, 0)
	if p := ints(t, obj, "p"); len(p) != 8 || p[0] != 8 || p[7] != 2 {
		t.Errorf("p = %v", p)
	}

	obj = runJSON(t, "model", "phi", "--graph", "testdata/ring.graph", "--json")
	checkRel(t, "phi of a ring", getNum(t, obj, "phi"), 0.75, 0)

	// Every process waits for every other: coordinated, φ = 1.
	obj = runJSON(t, "model", "phi", "--deps", "3,3,3", "--json")
	checkRel(t, "phi coordinated", getNum(t, obj, "phi"), 1, 0)
}

func TestOldfieldJSON(t *testing.T) {
	documented := []string{"delta_seconds", "bandwidth_bytes_per_second", "bound", "interval_seconds", "checkpoint_fraction", "efficiency"}
	extras := []string{"startup_seconds", "mtti_seconds", "bytes_per_proc"}
	overlayDoc := append(append([]string(nil), documented...), "k_bytes", "interval_lower_bound_seconds")
	overlayExtras := append(append([]string(nil), extras...), "daly_interval_seconds", "overlay_bytes")

	obj := runJSON(t, "model", "oldfield", "--system", "red-storm", "--procs", "65536", "--json")
	checkKeys(t, obj, documented, extras, "bound")
	if obj["bound"] != "storage" {
		t.Errorf("red-storm at 65536: bound = %v, want storage", obj["bound"])
	}
	sys, err := model.LookupMPPSystem("red-storm")
	if err != nil {
		t.Fatal(err)
	}
	res, err := model.Oldfield(sys.Input(65536, model.StoragePFS))
	if err != nil {
		t.Fatal(err)
	}
	checkRel(t, "delta", getNum(t, obj, "delta_seconds"), res.Delta, 1e-12)
	checkRel(t, "delta = nd/β_s", getNum(t, obj, "delta_seconds"), 65536*0.5e9/50e9, 1e-12)
	checkRel(t, "bandwidth", getNum(t, obj, "bandwidth_bytes_per_second"), 50e9, 1e-12)
	checkRel(t, "interval", getNum(t, obj, "interval_seconds"), res.Interval, 1e-12)
	checkRel(t, "fraction", getNum(t, obj, "checkpoint_fraction"), res.CheckpointFraction, 1e-12)
	checkRel(t, "efficiency", getNum(t, obj, "efficiency"), res.Efficiency, 1e-12)
	checkRel(t, "mtti = 5 y / n", getNum(t, obj, "mtti_seconds"), 5*year/65536, 1e-12)

	// Few processes: the links bound the checkpoint.
	obj = runJSON(t, "model", "oldfield", "--system", "red-storm", "--procs", "4", "--json")
	if obj["bound"] != "link" {
		t.Errorf("red-storm at 4: bound = %v, want link", obj["bound"])
	}

	// LWFS start-up, and an overlay network.
	obj = runJSON(t, "model", "oldfield", "--system", "red-storm", "--procs", "4096", "--storage", "lwfs",
		"--overlay-procs", "1024", "--overlay-mem-factor", "2", "--json")
	checkKeys(t, obj, overlayDoc, overlayExtras, "bound")
	in := sys.Input(4096, model.StorageLWFS)
	in.OverlayBytes = 1024 * 2 * 2 * in.BytesPerProc
	res, err = model.Oldfield(in)
	if err != nil {
		t.Fatal(err)
	}
	checkRel(t, "startup", getNum(t, obj, "startup_seconds"), 4096.0/60000, 1e-12)
	checkRel(t, "overlay delta", getNum(t, obj, "delta_seconds"), res.Delta, 1e-12)
	checkRel(t, "k", getNum(t, obj, "k_bytes"), res.K, 1e-12)
	checkRel(t, "τ_lb", getNum(t, obj, "interval_lower_bound_seconds"), res.IntervalLowerBound, 1e-12)
	checkRel(t, "overlay bytes", getNum(t, obj, "overlay_bytes"), in.OverlayBytes, 1e-12)

	// Explicit parameters with units: 1.5TiB is binary, 5y is 365 days.
	obj = runJSON(t, "model", "oldfield", "--procs", "1024", "--bytes-per-proc", "1.5TiB", "--link-bw", "2GB/s",
		"--bisection-bw", "1TB/s", "--storage-bw", "100GB/s", "--mtti", "5y", "--startup", "2s", "--overlay-bytes", "1TB", "--json")
	checkKeys(t, obj, overlayDoc, overlayExtras, "bound")
	checkRel(t, "bytes_per_proc", getNum(t, obj, "bytes_per_proc"), 1.5*(1<<40), 0)
	checkRel(t, "mtti", getNum(t, obj, "mtti_seconds"), 5*year, 0)
	checkRel(t, "startup", getNum(t, obj, "startup_seconds"), 2, 0)
	res, err = model.Oldfield(model.OldfieldInput{Procs: 1024, BytesPerProc: 1.5 * (1 << 40), LinkBW: 2e9, BisectionBW: 1e12,
		StorageBW: 100e9, MTTI: 5 * year, Startup: 2, OverlayBytes: 1e12})
	if err != nil {
		t.Fatal(err)
	}
	checkRel(t, "explicit delta", getNum(t, obj, "delta_seconds"), res.Delta, 1e-12)
	if obj["bound"] != string(res.Bound) {
		t.Errorf("bound = %v, want %s", obj["bound"], res.Bound)
	}
}

func TestFillTimeJSON(t *testing.T) {
	obj := runJSON(t, "model", "fill-time", "--system", "titan", "--json")
	checkKeys(t, obj, []string{"seconds"}, []string{"ratio", "single_disk_fill_seconds", "paper_seconds"})
	s := getNum(t, obj, "seconds")
	if math.Abs(s-663.6) > 0.1 {
		t.Errorf("titan: %g s, want about 663.6", s)
	}
	checkRel(t, "titan", s, 710e12/10.7e15*1e12/100e6, 1e-12)
	checkRel(t, "paper", getNum(t, obj, "paper_seconds"), 11*60, 1e-12)

	// A preset with a note.
	obj = runJSON(t, "model", "fill-time", "--system", "ssd-node", "--json")
	checkKeys(t, obj, []string{"seconds"}, []string{"ratio", "single_disk_fill_seconds", "paper_seconds", "note"})

	// Every preset agrees with the model.
	for _, sys := range model.FillTimeSystems {
		obj := runJSON(t, "model", "fill-time", "--system", sys.Name, "--json")
		want, err := model.FillTime(sys.FillTimeInput)
		if err != nil {
			t.Fatal(err)
		}
		checkRel(t, sys.Name, getNum(t, obj, "seconds"), want, 1e-12)
	}

	// Explicit sizes with units.
	obj = runJSON(t, "model", "fill-time", "--ram", "1.5TiB", "--disk-storage", "3TiB", "--disk-size", "1TB", "--disk-bw", "400MB/s", "--json")
	checkKeys(t, obj, []string{"seconds"}, []string{"ratio", "single_disk_fill_seconds"})
	checkRel(t, "explicit", getNum(t, obj, "seconds"), 0.5*1e12/400e6, 1e-12)
	checkRel(t, "ratio", getNum(t, obj, "ratio"), 0.5, 1e-12)
}

var (
	multilevelDoc    = []string{"efficiency", "expected_seconds", "interval_seconds", "counts"}
	multilevelExtras = []string{"segments", "optimized", "mode"}
	nonBlockingExtra = append(append([]string(nil), multilevelExtras...), "incomplete_segments")
)

func TestMultilevelJSON(t *testing.T) {
	// SPEC-markov §7 worked example, blocking (Moody).
	obj := runJSON(t, "model", "multilevel", "--rates", "2e-4,5e-5", "--cost", "30,400", "--restart", "40,500",
		"--interval", "600", "--counts", "4", "--json")
	checkKeys(t, obj, multilevelDoc, multilevelExtras, "counts")
	checkRel(t, "worked example efficiency", getNum(t, obj, "efficiency"), 0.680046748775, 1e-9)
	checkRel(t, "worked example E", getNum(t, obj, "expected_seconds"), 4411.46142586, 1e-9)
	checkRel(t, "interval", getNum(t, obj, "interval_seconds"), 600, 0)
	if c := ints(t, obj, "counts"); len(c) != 1 || c[0] != 4 {
		t.Errorf("counts = %v", c)
	}
	if obj["mode"] != "blocking" || obj["optimized"] != false || getNum(t, obj, "segments") != 5 {
		t.Errorf("mode %v optimized %v segments %v", obj["mode"], obj["optimized"], obj["segments"])
	}

	// The L1-protected variant of §7.
	obj = runJSON(t, "model", "multilevel", "--rates", "2e-4,5e-5", "--cost", "30,400", "--restart", "40,500",
		"--interval", "600", "--counts", "4", "--variant", "l1-protected", "--json")
	checkRel(t, "L1-protected efficiency", getNum(t, obj, "efficiency"), 0.692322717649, 1e-9)

	// §7 non-blocking: ℓ2 = 1500, α = 0.05; the flushed checkpoint blocks for c1.
	obj = runJSON(t, "model", "multilevel", "--rates", "2e-4,5e-5", "--cost", "30,30", "--restart", "40,500",
		"--interval", "600", "--counts", "4", "--nonblocking", "--flush-latency", "1500", "--alpha", "0.05", "--json")
	checkKeys(t, obj, multilevelDoc, nonBlockingExtra, "counts")
	checkRel(t, "non-blocking efficiency", getNum(t, obj, "efficiency"), 0.689474185712, 1e-9)
	checkRel(t, "non-blocking E_N", getNum(t, obj, "expected_seconds"), 4351.14187328, 1e-9)
	if m := getNum(t, obj, "incomplete_segments"); m != 3 {
		t.Errorf("incomplete_segments = %g, want 3", m)
	}
	if obj["mode"] != "nonblocking" {
		t.Errorf("mode = %v", obj["mode"])
	}
}

func TestMultilevelOptimizedJSON(t *testing.T) {
	// SPEC-markov §8, F = C = 1.
	obj := runJSON(t, "model", "multilevel", "--rates", "1.757e-5,1.3774e-6", "--cost", "72.5,5104", "--restart", "72.5,5104", "--json")
	checkKeys(t, obj, multilevelDoc, multilevelExtras, "counts")
	if e := getNum(t, obj, "efficiency"); math.Abs(e-0.82731) > 5e-6 {
		t.Errorf("blocking optimum %.7f, want 0.82731", e)
	}
	if obj["optimized"] != true {
		t.Errorf("optimized = %v", obj["optimized"])
	}
	lv := model.Levels{Rates: []float64{1.757e-5, 1.3774e-6}, Cost: []float64{72.5, 5104}, Restart: []float64{72.5, 5104}}
	res, err := model.OptimizeBlocking(lv, model.BlockingOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkRel(t, "blocking = model", getNum(t, obj, "efficiency"), res.Efficiency, 1e-12)
	checkRel(t, "interval = model", getNum(t, obj, "interval_seconds"), res.Interval, 1e-12)
	if c := ints(t, obj, "counts"); len(c) != 1 || c[0] != res.Counts[0] {
		t.Errorf("counts = %v, model %v", c, res.Counts)
	}
	checkRel(t, "efficiency = N t / E", getNum(t, obj, "efficiency"),
		getNum(t, obj, "segments")*getNum(t, obj, "interval_seconds")/getNum(t, obj, "expected_seconds"), 1e-12)

	obj = runJSON(t, "model", "multilevel", "--rates", "1.757e-5,1.3774e-6", "--cost", "72.5,72.5", "--restart", "72.5,5104",
		"--nonblocking", "--flush-latency", "6380", "--alpha", "0.00184", "--json")
	checkKeys(t, obj, multilevelDoc, nonBlockingExtra, "counts")
	if e := getNum(t, obj, "efficiency"); math.Abs(e-0.92735) > 5e-6 {
		t.Errorf("non-blocking optimum %.7f, want 0.92735", e)
	}

	// Rates with units: 3/h and 1/d.
	obj = runJSON(t, "model", "multilevel", "--rates", "3/h,1/d", "--cost", "30s,10m", "--restart", "1m,1h",
		"--interval", "20m", "--counts", "3", "--json")
	want, err := model.Blocking(model.Levels{Rates: []float64{3 / hour, 1 / day}, Cost: []float64{30, 600}, Restart: []float64{60, 3600}},
		model.Schedule{Interval: 1200, Counts: []int{3}}, model.BlockingOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkRel(t, "rates with units", getNum(t, obj, "efficiency"), want.Efficiency, 1e-12)

	// One level, evaluated: counts is an empty list.
	obj = runJSON(t, "model", "multilevel", "--rates", "1e-5", "--cost", "60", "--restart", "60", "--interval", "1h", "--json")
	checkKeys(t, obj, multilevelDoc, multilevelExtras, "counts")
	if c := ints(t, obj, "counts"); len(c) != 0 {
		t.Errorf("counts = %v, want []", c)
	}
}

// TestMultilevelOneLevelOptimizedCounts: optimising one level prints
// "counts": [] as evaluating does, never null: scripts iterate over it.
func TestMultilevelOneLevelOptimizedCounts(t *testing.T) {
	obj := runJSON(t, "model", "multilevel", "--rates", "1e-5", "--cost", "60", "--restart", "60", "--json")
	if _, ok := obj["counts"].([]any); !ok {
		t.Errorf("counts = %v, want [] (an empty list) as when evaluating", obj["counts"])
	}
}

// TestMultilevelCountsOverflow: counts whose product would overflow int are
// refused (exit 2 naming --counts), not wrapped into a nonsense schedule.
func TestMultilevelCountsOverflow(t *testing.T) {
	for _, args := range [][]string{
		{"model", "multilevel", "--rates", "1e-5,1e-6,1e-7", "--cost", "1,2,3", "--restart", "1,2,3", "--interval", "100", "--counts", "4294967295,4294967295"},
		{"model", "multilevel", "--rates", "1e-5,1e-6", "--cost", "1,2", "--restart", "1,2", "--interval", "100", "--counts", "9223372036854775807"},
	} {
		code, stdout, stderr := runCLI(t, append(args, "--json")...)
		if code != exitUsage || !strings.Contains(stderr, "--counts") {
			t.Errorf("ckpt %s: exit %d, stderr %q, stdout %q; want exit 2 naming --counts",
				strings.Join(args, " "), code, stderr, strings.Join(strings.Fields(stdout), " "))
		}
	}
}

// TestTableOutput: without --json every command prints a readable table.
func TestTableOutput(t *testing.T) {
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"model", "interval", "--method", "fialho", "--cost", "5m", "--mtti", "24h", "--restart", "5m"}, []string{"interval", "6893.75 s", "overhead"}},
		// Outside its domain (cost ≥ 2·MTTI) daly1 exits 2: TestIntervalDaly1Domain.
		{[]string{"model", "interval", "--method", "daly1", "--cost", "5m", "--mtti", "24h"}, []string{"interval", "first order"}},
		{[]string{"model", "runtime", "--work", "500d", "--interval", "115m", "--cost", "5m", "--mtti", "24h", "--restart", "5m"}, []string{"efficiency"}},
		{[]string{"model", "phi", "--deps", "8,2,2,2,2,2,2,2"}, []string{"0.34375"}},
		{[]string{"model", "oldfield", "--system", "red-storm", "--procs", "65536"}, []string{"storage", "Red Storm"}},
		{[]string{"model", "fill-time", "--system", "titan"}, []string{"Titan", "663.551 s"}},
		{[]string{"model", "multilevel", "--rates", "2e-4,5e-5", "--cost", "30,400", "--restart", "40,500", "--interval", "600", "--counts", "4"}, []string{"0.680047"}},
	}
	for _, c := range cases {
		code, stdout, stderr := runCLI(t, c.args...)
		if code != exitOK || stderr != "" {
			t.Errorf("ckpt %s: exit %d, stderr %q", strings.Join(c.args, " "), code, stderr)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(stdout, w) {
				t.Errorf("ckpt %s: output does not contain %q:\n%s", strings.Join(c.args, " "), w, stdout)
			}
		}
	}
}

// TestJSONNonFiniteIsNull: a value that is legitimately infinite is printed
// as null, and the output stays valid JSON.
func TestJSONNonFiniteIsNull(t *testing.T) {
	// Storage faster than the network: the overlay never fills, k = +Inf.
	obj := runJSON(t, "model", "oldfield", "--procs", "1", "--bytes-per-proc", "1GB", "--link-bw", "1GB/s",
		"--bisection-bw", "1TB/s", "--storage-bw", "10GB/s", "--mtti", "1d", "--overlay-bytes", "1TB", "--json")
	if v, ok := obj["k_bytes"]; !ok || v != nil {
		t.Errorf("k_bytes = %v (present %v), want null", v, ok)
	}
	getNum(t, obj, "delta_seconds")
}

// Optional flags a method does not use are range-checked, then ignored and
// listed, so one command line serves every method.
func TestIntervalIgnoresUnusedFlags(t *testing.T) {
	for _, method := range []string{"young", "daly", "daly1", "gropp"} {
		obj := runJSON(t, "model", "interval", "--method", method, "--cost", "5m", "--mtti", "24h",
			"--restart", "5m", "--detect", "1s", "--json")
		ignored, _ := obj["ignored"].([]any)
		if len(ignored) != 2 || ignored[0] != "restart" || ignored[1] != "detect" {
			t.Errorf("%s: ignored = %v, want [restart detect]", method, obj["ignored"])
		}
	}
	obj := runJSON(t, "model", "interval", "--method", "fialho", "--cost", "5m", "--mtti", "24h", "--restart", "5m", "--json")
	if ignored, _ := obj["ignored"].([]any); len(ignored) != 0 {
		t.Errorf("fialho uses --restart: ignored = %v", ignored)
	}
}

// With explicit parameters the overlay's size needs the processor memory:
// μ = N × F × --mem-per-proc (the presets use 2d).
func TestOldfieldOverlayMemPerProc(t *testing.T) {
	explicit := []string{"model", "oldfield", "--procs", "1024", "--bytes-per-proc", "1GB", "--link-bw", "2GB/s",
		"--bisection-bw", "1TB/s", "--storage-bw", "100GB/s", "--mtti", "12h", "--overlay-procs", "64", "--overlay-mem-factor", "2"}
	code, _, stderr := runCLI(t, explicit...)
	if code != exitUsage || !strings.Contains(stderr, "--mem-per-proc") {
		t.Errorf("without --mem-per-proc: exit %d, stderr %q", code, stderr)
	}
	obj := runJSON(t, append(explicit, "--mem-per-proc", "4GB", "--json")...)
	checkRel(t, "overlay_bytes", getNum(t, obj, "overlay_bytes"), 64*2*4e9, 1e-15)
	code, _, stderr = runCLI(t, "model", "oldfield", "--system", "red-storm", "--procs", "64", "--mem-per-proc", "4GB")
	if code != exitUsage || !strings.Contains(stderr, "--mem-per-proc") {
		t.Errorf("--mem-per-proc with a preset: exit %d, stderr %q", code, stderr)
	}
}
