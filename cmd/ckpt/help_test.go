package main

import (
	"strings"
	"testing"
)

// TestHelp: --help (and -h) of every command exits 0, prints to stdout only
// and lists the command's flags.
func TestHelp(t *testing.T) {
	cases := []struct {
		path  []string
		flags []string
	}{
		{nil, []string{"model", "plan"}},
		{[]string{"model"}, []string{"interval", "runtime", "phi", "oldfield", "fill-time", "multilevel", "figures"}},
		{[]string{"model", "interval"}, []string{"--method", "--cost", "--mtti", "--restart", "--detect", "--phi", "--log-protect", "--log-replay", "--interval", "--json",
			"young", "daly", "daly1", "gropp", "fialho", "fialho-parallel"}},
		{[]string{"model", "runtime"}, []string{"--work", "--interval", "--cost", "--mtti", "--restart", "--json"}},
		{[]string{"model", "phi"}, []string{"--deps", "--graph", "--json"}},
		{[]string{"model", "oldfield"}, []string{"--system", "--procs", "--storage", "--startup", "--bytes-per-proc", "--link-bw", "--bisection-bw",
			"--storage-bw", "--mtti", "--overlay-procs", "--overlay-mem-factor", "--overlay-bytes", "--json",
			"red-storm", "bluegene-l", "jaguar", "petaflop", "lwfs"}},
		{[]string{"model", "fill-time"}, []string{"--system", "--ram", "--disk-storage", "--disk-size", "--disk-bw", "--json", "titan"}},
		{[]string{"model", "multilevel"}, []string{"--rates", "--cost", "--restart", "--interval", "--counts", "--nonblocking", "--flush-latency", "--alpha", "--variant", "--json"}},
		{[]string{"model", "figures"}, []string{"--out", "--json"}},
		{[]string{"plan"}, []string{"--system", "--target-efficiency", "--all", "--json", "tsubame2", "red-storm"}},
	}
	for _, c := range cases {
		for _, h := range []string{"--help", "-h"} {
			args := append(append([]string(nil), c.path...), h)
			code, stdout, stderr := runCLI(t, args...)
			name := "ckpt " + strings.Join(args, " ")
			if code != exitOK {
				t.Errorf("%s: exit %d, stderr %q", name, code, stderr)
				continue
			}
			if stderr != "" {
				t.Errorf("%s: stderr %q", name, stderr)
			}
			if !strings.Contains(stdout, "Usage:") {
				t.Errorf("%s: no usage line:\n%s", name, stdout)
			}
			for _, f := range c.flags {
				if !strings.Contains(stdout, f) {
					t.Errorf("%s does not mention %s", name, f)
				}
			}
		}
	}
	// help also works as a command.
	code, stdout, _ := runCLI(t, "help", "model", "multilevel")
	if code != exitOK || !strings.Contains(stdout, "--nonblocking") {
		t.Errorf("ckpt help model multilevel: exit %d\n%s", code, stdout)
	}
	// --help wins over bad input.
	code, _, stderr := runCLI(t, "model", "interval", "--cost", "-5", "--help")
	if code != exitOK {
		t.Errorf("--help with a bad value: exit %d, stderr %q", code, stderr)
	}
}
