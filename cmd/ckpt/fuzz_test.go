package main

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/units"
)

// TestRandomArguments feeds many random argument vectors, built from the
// commands' own flags, good values and garbage, to run. None may panic;
// every one must end with exit status 0, 1 or 2; a failure prints one line
// on stderr and nothing on stdout.
//
// The vocabulary leaves out what would make the test slow or touch the file
// system: --out (figures writes files), the TSUBAME2.0 system and plan
// without --system (planning it takes seconds), lists of three or more
// rates (optimising three levels can take minutes), and simulations that
// would take more than milliseconds (see tooSlow).
func TestRandomArguments(t *testing.T) {
	commands := [][]string{
		{"model", "interval"}, {"model", "runtime"}, {"model", "phi"}, {"model", "oldfield"},
		{"model", "fill-time"}, {"model", "multilevel"}, {"model", "figures"},
		{"plan", "--system", "red-storm"}, {"plan", "--system", "jaguar"}, {"plan", "--system", "testdata/malformed.yaml"},
		{"plan", "--system", "testdata/negative-rate.yaml"}, {"plan", "--system", "/nonexistent"},
		{"model"}, {}, {"bogus"}, {"help"}, {"model", "help"},
		// simulate: a valid base of each strategy, which the random flags
		// then change, and the bare command.
		{"simulate", "--work", "10", "--replications", "4", "--mtti", "6h", "--cost", "5m", "--restart", "5m"},
		{"simulate", "--work", "1h", "--replications", "4", "--rates", "2e-4,5e-5", "--cost", "30,400", "--restart", "40,500"},
		{"simulate", "--work", "1h", "--replications", "4", "--rates", "2e-4,5e-5", "--cost", "30,30", "--restart", "40,500",
			"--nonblocking", "--flush-latency", "1500", "--alpha", "0.05"},
		{"simulate", "--strategy", "uncoordinated", "--work", "1000", "--replications", "4", "--mtti", "100", "--cost", "1.6",
			"--restart", "1.6", "--phi", "0.3125", "--procs", "16"},
		{"simulate"},
	}
	flags := []string{
		"--method", "--cost", "--mtti", "--restart", "--detect", "--phi", "--log-protect", "--log-replay", "--interval",
		"--work", "--deps", "--graph", "--procs", "--storage", "--startup", "--bytes-per-proc", "--link-bw",
		"--bisection-bw", "--storage-bw", "--overlay-procs", "--overlay-mem-factor", "--overlay-bytes",
		"--ram", "--disk-storage", "--disk-size", "--disk-bw", "--rates", "--counts", "--nonblocking",
		"--flush-latency", "--alpha", "--variant", "--target-efficiency", "--all", "--json", "--system",
		"--replications", "--seed", "--workers", "--dist", "--strategy",
		"--json=false", "--nonblocking=true", "--cost=5m", "-x", "--", "-", "--bogus", "--help", "-h",
	}
	values := []string{
		// good values
		"young", "daly", "daly1", "gropp", "fialho", "fialho-parallel", "5m", "24h", "300", "300s", "5y", "1h30m",
		"0.5", "1", "0.34375", "29GB", "1.5TiB", "400MB/s", "1TB/s", "2GB/s", "1e-5", "3/h", "65536", "4", "1024",
		"red-storm", "bluegene-l", "petaflop", "titan", "stampede", "exascale", "pfs", "lwfs", "moody", "l1-protected",
		"8,2,2,2,2,2,2,2", "2e-4,5e-5", "1.757e-5,1.3774e-6", "30,400", "40,500", "72.5,72.5", "72.5,5104", "600", "4",
		"1500", "0.05", "6380", "0.00184", "0.9", "testdata/master-worker.graph", "testdata/ring.graph", "testdata/bad.graph",
		"exp", "weibull:0.7", "weibull:1.5", "uncoordinated", "coordinated", "5,5,5,5,5", "3,3,3",
		// bad values
		"", " ", "0", "-1", "-5m", "1.5", "2", "NaN", "Inf", "-Inf", "1e400", "1e-400", "0x10", "1_000", "abc", "5x",
		"29 GB", "400MB", "400Mbps", "1/", "/s", "1/x", ",", "1,", ",1", "1,,2", "1,2,3", "3,4", "-1,2",
		"9223372036854775807", "-9223372036854775808", "99999999999999999999", "4294967295,4294967295", "1073741823",
		"nope", ".", "..", "/", "/dev/null", "testdata", "testdata/unknown-field.yaml", "\x00", "\n", "a\tb", "💥", "µs",
		"=", "--", "-", "%s%d%v", "'\"", strings.Repeat("9", 400), strings.Repeat("1,", 200) + "1",
		"weibull", "weibull:", "weibull:0", "weibull:-1", "weibull:x", "weibull:1e-3", "gamma:2", "EXP", "decoordinated",
	}
	// simulate draws most of its flags from its own list, so that its
	// vectors get past flag parsing into its validation and the simulator.
	simFlags := []string{
		"--work", "--rates", "--mtti", "--cost", "--restart", "--interval", "--counts", "--variant", "--nonblocking",
		"--flush-latency", "--alpha", "--detect", "--dist", "--strategy", "--phi", "--procs", "--deps", "--graph",
		"--log-protect", "--log-replay", "--replications", "--seed", "--workers", "--json",
		"--nonblocking=false", "--replications=3", "--dist=weibull:0.7", "--strategy=uncoordinated",
	}
	rng := rand.New(rand.NewPCG(20240601, 7))
	pick := func(list []string) string { return list[rng.IntN(len(list))] }

	n := 3000
	if testing.Short() {
		n = 300
	}
	var slow slowestVector
	for i := 0; i < n; i++ {
		args := append([]string(nil), commands[rng.IntN(len(commands))]...)
		fl := flags
		if len(args) > 0 && args[0] == "simulate" {
			fl = simFlags
		}
		for k := rng.IntN(8); k > 0; k-- {
			switch r := rng.IntN(10); {
			case r < 6:
				args = append(args, pick(fl), pick(values))
			case r < 8:
				args = append(args, pick(flags))
			default:
				args = append(args, pick(values))
			}
		}
		if tooSlow(args) {
			continue
		}
		slow.check(t, args)
	}
	slow.log(t)
}

// TestMutatedArguments starts from valid command lines and changes them at
// random (a value replaced, a token dropped, duplicated or inserted), so
// that the vectors get past flag parsing into each command's validation
// and into the models.
func TestMutatedArguments(t *testing.T) {
	seeds := [][]string{
		{"model", "interval", "--method", "fialho", "--cost", "5m", "--mtti", "24h", "--restart", "5m", "--json"},
		{"model", "interval", "--method", "fialho-parallel", "--cost", "1.63", "--mtti", "100", "--restart", "1.643",
			"--detect", "0.5", "--phi", "1", "--log-protect", "2.771", "--log-replay", "0.1", "--interval", "10"},
		{"model", "interval", "--method", "daly", "--cost", "5m", "--mtti", "24h"},
		{"model", "runtime", "--work", "500d", "--interval", "115m", "--cost", "5m", "--mtti", "24h", "--restart", "5m", "--json"},
		{"model", "phi", "--deps", "8,2,2,2,2,2,2,2", "--json"},
		{"model", "phi", "--graph", "testdata/master-worker.graph"},
		{"model", "oldfield", "--system", "red-storm", "--procs", "65536", "--json"},
		{"model", "oldfield", "--system", "red-storm", "--procs", "4096", "--storage", "lwfs", "--overlay-procs", "1024", "--overlay-mem-factor", "2"},
		{"model", "oldfield", "--procs", "1024", "--bytes-per-proc", "1GB", "--link-bw", "2GB/s", "--bisection-bw", "1TB/s",
			"--storage-bw", "100GB/s", "--mtti", "12h", "--overlay-bytes", "1TB", "--startup", "1", "--json"},
		{"model", "fill-time", "--system", "titan", "--json"},
		{"model", "fill-time", "--ram", "205TB", "--disk-storage", "10PB", "--disk-size", "2TB", "--disk-bw", "100MB/s"},
		{"model", "multilevel", "--rates", "2e-4,5e-5", "--cost", "30,400", "--restart", "40,500", "--interval", "600", "--counts", "4", "--json"},
		{"model", "multilevel", "--rates", "2e-4,5e-5", "--cost", "30,30", "--restart", "40,500", "--interval", "600", "--counts", "4",
			"--nonblocking", "--flush-latency", "1500", "--alpha", "0.05", "--json"},
		{"model", "multilevel", "--rates", "2e-4,5e-5", "--cost", "30,400", "--restart", "40,500", "--variant", "l1-protected", "--json"},
		{"model", "multilevel", "--rates", "2e-4,5e-5", "--cost", "30,30", "--restart", "40,500", "--nonblocking", "--flush-latency", "1500", "--alpha", "0.05"},
		{"model", "multilevel", "--rates", "1e-4", "--cost", "60", "--restart", "60", "--json"},
		{"plan", "--system", "red-storm", "--target-efficiency", "0.9", "--json"},
		{"plan", "--system", "bluegene-l", "--all"},
		{"simulate", "--work", "1h", "--mtti", "6h", "--cost", "5m", "--restart", "5m", "--interval", "55m", "--replications", "4", "--json"},
		{"simulate", "--work", "1h", "--rates", "2e-4,5e-5", "--cost", "30,400", "--restart", "40,500", "--interval", "600", "--counts", "4",
			"--variant", "l1-protected", "--replications", "4", "--seed", "7", "--dist", "weibull:0.7"},
		{"simulate", "--work", "1h", "--rates", "2e-4,5e-5", "--cost", "30,30", "--restart", "40,500", "--nonblocking",
			"--flush-latency", "1500", "--alpha", "0.05", "--replications", "4", "--workers", "1", "--json"},
		{"simulate", "--strategy", "uncoordinated", "--work", "2000", "--mtti", "100", "--cost", "1.6", "--restart", "1.6",
			"--detect", "0.5", "--deps", "3,3,3", "--log-protect", "2.7", "--log-replay", "0.1", "--replications", "4"},
		{"simulate", "--strategy", "uncoordinated", "--work", "2000", "--mtti", "100", "--cost", "1.6", "--restart", "1.6",
			"--graph", "testdata/ring.graph", "--replications", "4", "--json"},
	}
	values := []string{
		"", "0", "-1", "1", "0.5", "1.5", "2", "NaN", "1e400", "1e-300", "5m", "5y", "1h30m", "1.5TiB", "400MB/s", "3/h",
		"abc", "5x", "1,2", "1,2,3", ",", "1,,2", "-0", "+1", "9223372036854775807", "1073741823", "4294967295",
		"young", "gropp", "fialho", "lwfs", "pfs", "jaguar", "petaflop", "exascale", "l1-protected", "moody",
		"testdata/ring.graph", "testdata/bad.graph", "testdata/unknown-field.yaml", "testdata/negative-rate.yaml", "/nonexistent",
		"--json", "--nonblocking", "--all", "--help", "--bogus", "--interval", "--counts", "--alpha", "--phi", "--restart", "--system",
		"weibull:0.5", "weibull:0", "exp", "uncoordinated", "--strategy", "--dist", "--replications", "--procs", "--deps", "--graph",
	}
	rng := rand.New(rand.NewPCG(42, 4242))
	n := 2000
	if testing.Short() {
		n = 200
	}
	var slow slowestVector
	for i := 0; i < n; i++ {
		args := append([]string(nil), seeds[rng.IntN(len(seeds))]...)
		for k := 1 + rng.IntN(3); k > 0; k-- {
			j := 1 + rng.IntN(len(args)-1) // keep the command word
			switch rng.IntN(4) {
			case 0:
				args[j] = values[rng.IntN(len(values))]
			case 1:
				args = append(args[:j], args[j+1:]...)
			case 2:
				args = append(args[:j], append([]string{args[j]}, args[j:]...)...)
			default:
				args = append(args[:j], append([]string{values[rng.IntN(len(values))]}, args[j:]...)...)
			}
			if len(args) < 2 {
				break
			}
		}
		if tooSlow(args) {
			continue
		}
		slow.check(t, args)
	}
	slow.log(t)
}

// slowestVector remembers the slowest argument vector a test ran.
type slowestVector struct {
	d    time.Duration
	args []string
}

// check runs one vector through checkAnyOutcome and times it.
func (s *slowestVector) check(t *testing.T, args []string) {
	start := time.Now()
	checkAnyOutcome(t, args)
	if d := time.Since(start); d > s.d {
		s.d, s.args = d, args
	}
}

func (s *slowestVector) log(t *testing.T) { t.Logf("slowest vector %v: %q", s.d, s.args) }

// checkAnyOutcome runs one vector and checks what holds for any input.
func checkAnyOutcome(t *testing.T, args []string) {
	t.Helper()
	code, stdout, stderr := runCLI(t, args...)
	switch code {
	case exitOK:
	case exitError, exitUsage:
		if stdout != "" {
			t.Errorf("run(%q): exit %d with stdout %.200q", args, code, stdout)
		}
		if !strings.HasPrefix(stderr, "ckpt: ") || !strings.HasSuffix(stderr, "\n") {
			t.Errorf("run(%q): exit %d, stderr %q", args, code, stderr)
		} else if lines := strings.Count(stderr, "\n"); lines != 1 && !hasNewline(args) {
			t.Errorf("run(%q): exit %d, %d lines on stderr: %q", args, code, lines, stderr)
		}
	default:
		t.Errorf("run(%q): exit status %d, want 0, 1 or 2 (stderr %q)", args, code, stderr)
	}
}

// hasNewline reports whether an argument carries a newline, which an error
// message may echo (a file name, say) and so span two lines.
func hasNewline(args []string) bool {
	for _, a := range args {
		if strings.Contains(a, "\n") {
			return true
		}
	}
	return false
}

// tooSlow reports vectors left out for speed: TSUBAME2.0 (also the default
// of plan), multilevel with three or more rates (whose optimisation can
// take minutes), and simulations beyond milliseconds (simTooSlow).
func tooSlow(args []string) bool {
	if len(args) > 0 && args[0] == "plan" && !contains(args, "--system") {
		return true // the default system is TSUBAME2.0
	}
	if len(args) > 0 && args[0] == "simulate" && simTooSlow(args) {
		return true
	}
	for i, a := range args {
		if a == "tsubame2" || a == "tsubame2.yaml" {
			return true
		}
		if (a == "--rates" || strings.HasPrefix(a, "--rates=")) && i+1 < len(args) && strings.Count(args[i+1], ",") >= 2 {
			return true
		}
	}
	return false
}

// simTooSlow reports simulate vectors that could take more than
// milliseconds, judged on the values that take effect (a flag's last
// occurrence; one that does not parse fails fast): more than 8
// replications (the default is 1000), more than an hour of work or a
// million intervals per replication, Weibull shapes below 0.3 (failures
// come in bursts of millions), and more than 1024 processes. The last is a
// memory bound as much as a time one: --phi F --procs N lists φN²
// dependents, 34 GB for --phi 1 --procs 65536.
func simTooSlow(args []string) bool {
	reps, ok := lastValue(args, "--replications")
	if !ok {
		return true
	}
	if n, err := strconv.Atoi(reps); err == nil && n > 8 {
		return true
	}
	work, interval := math.NaN(), math.NaN()
	if v, ok := lastValue(args, "--work"); ok {
		work, _ = units.ParseDuration(v)
	}
	if v, ok := lastValue(args, "--interval"); ok {
		interval, _ = units.ParseDuration(v)
	}
	if work > 3600 || work/interval > 1e6 {
		return true
	}
	if v, ok := lastValue(args, "--procs"); ok {
		if n, err := strconv.Atoi(v); err == nil && n > 1024 {
			return true
		}
	}
	if v, ok := lastValue(args, "--dist"); ok {
		if k, err := units.ParseFloat(strings.TrimPrefix(strings.ToLower(strings.TrimSpace(v)), "weibull:")); err == nil && k < 0.3 {
			return true
		}
	}
	return false
}

// lastValue is the value of the last occurrence of a flag taking a value,
// as "--flag value" or "--flag=value".
func lastValue(args []string, flag string) (string, bool) {
	v, ok := "", false
	for i, a := range args {
		switch {
		case a == flag && i+1 < len(args):
			v, ok = args[i+1], true
		case strings.HasPrefix(a, flag+"="):
			v, ok = strings.TrimPrefix(a, flag+"="), true
		}
	}
	return v, ok
}
