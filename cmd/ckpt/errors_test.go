package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBadInput: every kind of bad input exits 2 with one line on stderr
// that names the flag (or the field of a system file), and prints nothing
// on stdout.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	empty := write("empty.yaml", "")
	garbage := write("garbage.yaml", "\x00\x01\x02 not yaml at all [[[")

	iv := func(extra ...string) []string { return append([]string{"model", "interval"}, extra...) }
	ml := func(extra ...string) []string { return append([]string{"model", "multilevel"}, extra...) }
	sato := []string{"--rates", "1.757e-5,1.3774e-6", "--cost", "72.5,72.5", "--restart", "72.5,5104"}

	cases := []struct {
		name    string
		args    []string
		mention []string
	}{
		// interval
		{"negative cost", iv("--method", "young", "--cost", "-5m", "--mtti", "24h"), []string{"--cost"}},
		{"zero cost", iv("--method", "daly", "--cost", "0", "--mtti", "24h"), []string{"--cost"}},
		{"mtti 0", iv("--method", "young", "--cost", "5m", "--mtti", "0"), []string{"--mtti"}},
		{"negative mtti", iv("--method", "fialho", "--cost", "5m", "--mtti", "-1h"), []string{"--mtti"}},
		{"phi 0", iv("--method", "fialho-parallel", "--cost", "5m", "--mtti", "24h", "--phi", "0"), []string{"--phi"}},
		{"phi 1.5", iv("--method", "fialho-parallel", "--cost", "5m", "--mtti", "24h", "--phi", "1.5"), []string{"--phi"}},
		{"phi missing", iv("--method", "fialho-parallel", "--cost", "5m", "--mtti", "24h"), []string{"--phi"}},
		{"phi not a number", iv("--method", "fialho-parallel", "--cost", "5m", "--mtti", "24h", "--phi", "NaN"), []string{"--phi"}},
		{"unknown method", iv("--method", "bogus", "--cost", "5m", "--mtti", "24h"), []string{"--method", "bogus"}},
		{"missing method", iv("--cost", "5m", "--mtti", "24h"), []string{"--method"}},
		{"missing cost", iv("--method", "young", "--mtti", "24h"), []string{"--cost"}},
		{"range of a flag the method ignores", iv("--method", "young", "--cost", "5m", "--mtti", "24h", "--restart", "-5m"), []string{"--restart"}},
		{"interval 0", iv("--method", "fialho", "--cost", "5m", "--mtti", "24h", "--interval", "0"), []string{"--interval"}},
		{"negative restart", iv("--method", "fialho", "--cost", "5m", "--mtti", "24h", "--restart", "-1"), []string{"--restart"}},
		{"unknown flag", iv("--method", "young", "--cost", "5m", "--mtti", "24h", "--bogus"), []string{"--bogus"}},
		{"malformed duration", iv("--method", "young", "--cost", "5x", "--mtti", "24h"), []string{"--cost"}},
		{"duration out of range", iv("--method", "young", "--cost", "1e400", "--mtti", "24h"), []string{"--cost"}},
		{"flag without value", iv("--method", "young", "--mtti", "24h", "--cost"), []string{"--cost"}},
		{"positional argument", iv("--method", "young", "--cost", "5m", "--mtti", "24h", "extra"), []string{"extra"}},
		// runtime
		{"runtime negative cost", []string{"model", "runtime", "--work", "1d", "--interval", "1h", "--cost", "-1", "--mtti", "1d"}, []string{"--cost"}},
		{"runtime mtti 0", []string{"model", "runtime", "--work", "1d", "--interval", "1h", "--cost", "1m", "--mtti", "0"}, []string{"--mtti"}},
		{"runtime missing work", []string{"model", "runtime", "--interval", "1h", "--cost", "1m", "--mtti", "1d"}, []string{"--work"}},
		{"runtime zero interval", []string{"model", "runtime", "--work", "1d", "--interval", "0", "--cost", "1m", "--mtti", "1d"}, []string{"--interval"}},
		{"runtime negative restart", []string{"model", "runtime", "--work", "1d", "--interval", "1h", "--cost", "1m", "--mtti", "1d", "--restart", "-5"}, []string{"--restart"}},
		// phi
		{"deps out of range", []string{"model", "phi", "--deps", "0,1"}, []string{"--deps"}},
		{"deps too large", []string{"model", "phi", "--deps", "8,2,2"}, []string{"--deps"}},
		{"deps not numbers", []string{"model", "phi", "--deps", "1,x"}, []string{"--deps"}},
		{"deps and graph", []string{"model", "phi", "--deps", "1", "--graph", "testdata/ring.graph"}, []string{"--deps", "--graph"}},
		{"phi without input", []string{"model", "phi"}, []string{"--deps"}},
		{"missing graph file", []string{"model", "phi", "--graph", filepath.Join(dir, "none.graph")}, []string{"--graph"}},
		{"malformed graph", []string{"model", "phi", "--graph", "testdata/bad.graph"}, []string{"--graph", "line 1"}},
		{"empty graph", []string{"model", "phi", "--graph", empty}, []string{"--graph"}},
		// oldfield
		{"oldfield unknown system", []string{"model", "oldfield", "--system", "nope", "--procs", "4"}, []string{"--system", "nope"}},
		{"oldfield procs 0", []string{"model", "oldfield", "--system", "red-storm", "--procs", "0"}, []string{"--procs"}},
		{"oldfield procs missing", []string{"model", "oldfield", "--system", "red-storm"}, []string{"--procs"}},
		{"oldfield procs not a number", []string{"model", "oldfield", "--system", "red-storm", "--procs", "many"}, []string{"--procs"}},
		{"oldfield unknown storage", []string{"model", "oldfield", "--system", "red-storm", "--procs", "4", "--storage", "tape"}, []string{"--storage"}},
		{"oldfield system and explicit", []string{"model", "oldfield", "--system", "red-storm", "--procs", "4", "--mtti", "1h"}, []string{"--mtti"}},
		{"oldfield explicit incomplete", []string{"model", "oldfield", "--procs", "4", "--bytes-per-proc", "1GB"}, []string{"--link-bw"}},
		{"oldfield malformed size", []string{"model", "oldfield", "--procs", "4", "--bytes-per-proc", "1GQ"}, []string{"--bytes-per-proc"}},
		{"oldfield bandwidth without /s", []string{"model", "oldfield", "--procs", "4", "--link-bw", "1GB"}, []string{"--link-bw"}},
		{"oldfield negative storage bw", []string{"model", "oldfield", "--procs", "4", "--bytes-per-proc", "1GB", "--link-bw", "1GB/s",
			"--bisection-bw", "1TB/s", "--storage-bw", "-1GB/s", "--mtti", "1d"}, []string{"--storage-bw"}},
		{"oldfield overlay both ways", []string{"model", "oldfield", "--system", "red-storm", "--procs", "4", "--overlay-bytes", "1TB", "--overlay-procs", "2"}, []string{"--overlay-bytes"}},
		{"oldfield overlay without factor", []string{"model", "oldfield", "--system", "red-storm", "--procs", "4", "--overlay-procs", "2"}, []string{"--overlay-mem-factor"}},
		{"oldfield negative startup", []string{"model", "oldfield", "--system", "red-storm", "--procs", "4", "--startup", "-1"}, []string{"--startup"}},
		// fill-time
		{"fill-time unknown system", []string{"model", "fill-time", "--system", "nope"}, []string{"--system", "nope"}},
		{"fill-time explicit incomplete", []string{"model", "fill-time", "--ram", "1TB"}, []string{"--disk-storage"}},
		{"fill-time system and explicit", []string{"model", "fill-time", "--system", "titan", "--ram", "1TB"}, []string{"--ram"}},
		{"fill-time zero disk bw", []string{"model", "fill-time", "--ram", "1TB", "--disk-storage", "1PB", "--disk-size", "1TB", "--disk-bw", "0B/s"}, []string{"--disk-bw"}},
		// multilevel
		{"lists of different lengths (cost)", ml("--rates", "1e-5,1e-6", "--cost", "1,2,3", "--restart", "1,2"), []string{"--cost"}},
		{"lists of different lengths (restart)", ml("--rates", "1e-5,1e-6", "--cost", "1,2", "--restart", "1"), []string{"--restart"}},
		{"counts without interval", ml(append(sato, "--counts", "3")...), []string{"--counts"}},
		{"interval without counts", ml(append(sato, "--interval", "1h")...), []string{"--interval"}},
		{"counts of the wrong length", ml(append(sato, "--interval", "1h", "--counts", "3,4")...), []string{"--counts"}},
		{"negative count", ml(append(sato, "--interval", "1h", "--counts", "-1")...), []string{"--counts"}},
		{"nonblocking with 3 levels", ml("--rates", "1e-5,1e-6,1e-7", "--cost", "1,2,3", "--restart", "1,2,3", "--nonblocking", "--flush-latency", "10"), []string{"--nonblocking"}},
		{"nonblocking without flush latency", ml(append(sato, "--nonblocking")...), []string{"--flush-latency"}},
		{"infeasible flush (evaluated)", ml(append(sato, "--nonblocking", "--flush-latency", "1e9", "--interval", "100", "--counts", "1")...), []string{"--flush-latency"}},
		{"infeasible flush (optimised)", ml(append(sato, "--nonblocking", "--flush-latency", "1e12")...), []string{"--flush-latency"}},
		{"alpha without nonblocking", ml(append(sato, "--alpha", "0.1")...), []string{"--alpha"}},
		{"negative alpha", ml(append(sato, "--nonblocking", "--flush-latency", "10", "--alpha", "-0.1")...), []string{"--alpha"}},
		{"unknown variant", ml(append(sato, "--variant", "fancy")...), []string{"--variant"}},
		{"missing rates", ml("--cost", "1", "--restart", "1"), []string{"--rates"}},
		{"all rates zero", ml("--rates", "0,0", "--cost", "1,2", "--restart", "1,2"), []string{"--rates"}},
		{"top rate zero", ml("--rates", "1e-5,0", "--cost", "1,2", "--restart", "1,2"), []string{"--rates"}},
		{"negative rate", ml("--rates", "1e-5,-1e-6", "--cost", "1,2", "--restart", "1,2"), []string{"--rates"}},
		{"zero cost in a list", ml("--rates", "1e-5,1e-6", "--cost", "0,2", "--restart", "1,2"), []string{"--cost"}},
		{"malformed list element", ml("--rates", "1e-5,abc", "--cost", "1,2", "--restart", "1,2"), []string{"--rates"}},
		{"empty list element", ml("--rates", "1e-5,,1e-6", "--cost", "1,2", "--restart", "1,2"), []string{"--rates"}},
		// figures
		{"figures without --out", []string{"model", "figures"}, []string{"--out"}},
		// plan
		{"plan unknown system", []string{"plan", "--system", "nope"}, []string{"--system", "nope"}},
		{"plan missing file", []string{"plan", "--system", filepath.Join(dir, "missing.yaml")}, []string{"--system", "missing.yaml"}},
		{"plan malformed YAML", []string{"plan", "--system", "testdata/malformed.yaml"}, []string{"--system", "YAML"}},
		{"plan YAML with unknown field", []string{"plan", "--system", "testdata/unknown-field.yaml"}, []string{"--system", "colour"}},
		{"plan YAML with a negative rate", []string{"plan", "--system", "testdata/negative-rate.yaml"}, []string{"--system", "failures[1].rate"}},
		{"plan empty file", []string{"plan", "--system", empty}, []string{"--system", "empty"}},
		{"plan garbage file", []string{"plan", "--system", garbage}, []string{"--system"}},
		{"plan directory", []string{"plan", "--system", dir}, []string{"--system"}},
		{"plan target 1", []string{"plan", "--system", "red-storm", "--target-efficiency", "1"}, []string{"--target-efficiency"}},
		{"plan target 0", []string{"plan", "--system", "red-storm", "--target-efficiency", "0"}, []string{"--target-efficiency"}},
		{"plan target not a number", []string{"plan", "--system", "red-storm", "--target-efficiency", "90%"}, []string{"--target-efficiency"}},
		// commands
		{"unknown command", []string{"bogus"}, []string{"bogus"}},
		{"unknown flag on model", []string{"model", "--bogus"}, []string{"--bogus"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checkBadInput(t, c.mention, c.args...)
			// --json changes nothing about bad input.
			if !contains(c.args, "--json") {
				checkBadInput(t, c.mention, append(c.args, "--json")...)
			}
		})
	}
}

// TestUnknownModelSubcommand: a typo below the root ("ckpt model
// intervall") exits 2 like "ckpt bogus", so a script can tell it from
// success (cobra checks subcommand names on the root only).
func TestUnknownModelSubcommand(t *testing.T) {
	for _, args := range [][]string{{"model", "bogus"}, {"model", "intervall"}} {
		code, stdout, stderr := runCLI(t, args...)
		if code != exitUsage {
			t.Errorf("ckpt %s: exit %d (stdout %d bytes, stderr %q), want 2 naming the unknown command",
				strings.Join(args, " "), code, len(stdout), stderr)
		}
	}
}

// TestUnknownCommandSuggestionOneLine: cobra's "Did you mean this?"
// suggestion for a mistyped command ("ckpt plna") is folded into the one
// line every error gets.
func TestUnknownCommandSuggestionOneLine(t *testing.T) {
	for _, args := range [][]string{{"plna"}, {"modle"}, {"NaN"}} {
		code, _, stderr := runCLI(t, args...)
		if code != exitUsage {
			t.Errorf("ckpt %s: exit %d", args[0], code)
		}
		if n := strings.Count(stderr, "\n"); n != 1 {
			t.Errorf("ckpt %s: %d lines on stderr, want 1: %q", args[0], n, stderr)
		}
	}
}
