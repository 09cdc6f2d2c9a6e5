package main

import (
	"strings"
	"testing"
)

// TestSplitUnit: a quantity flag given a bare number followed by a unit
// word is an error naming the flag and what to write; the same words after
// "--", or as values of other flags, are left alone.
func TestSplitUnit(t *testing.T) {
	kinds := map[string]string{"inject-mtti": "duration", "cost": "duration", "ram": "size", "stage-rate": "bandwidth"}
	kindOf := func(name string) string { return kinds[name] }
	bad := []struct {
		args []string
		want string
	}{
		{[]string{"-n", "8", "--inject-mtti", "3", "seconds", "--", "prog"}, "--inject-mtti 3 seconds: write --inject-mtti 3s"},
		{[]string{"-n", "8", "--inject-mtti", "3", "seconds", "prog"}, "write --inject-mtti 3s"},
		{[]string{"--inject-mtti=2.5", "min", "--", "prog"}, "write --inject-mtti 2.5min"},
		{[]string{"--cost", "5", "minutes"}, "write --cost 5m"},
		{[]string{"--ram", "29", "GB"}, "write --ram 29GB"},
		{[]string{"--stage-rate", "200", "MB/s", "--", "x"}, "write --stage-rate 200MB/s"},
	}
	for _, c := range bad {
		err := splitUnit(c.args, kindOf)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("splitUnit(%q) = %v, want an error saying %q", c.args, err, c.want)
		}
	}
	good := [][]string{
		{"-n", "8", "--inject-mtti", "3", "--", "seconds"}, // a program named after a unit, given after --
		{"-n", "8", "--inject-mtti", "3s", "--", "prog"},
		{"--inject-mtti", "3s", "s"},          // the value has its unit
		{"--name", "3", "seconds"},            // not a quantity flag
		{"--ram", "29", "seconds"},            // not a unit of a size
		{"--cost", "5", "--", "minutes"},      // after the dash
		{"--cost", "--ram", "29GB", "s"},      // --cost without a value: its own error
		{"--inject-mtti", "3", "himeno"},      // a program, not a unit
		{"-n", "8", "--", "--cost", "5", "m"}, // the program's own flags
	}
	for _, args := range good {
		if err := splitUnit(args, kindOf); err != nil {
			t.Errorf("splitUnit(%q) = %v, want nil", args, err)
		}
	}
}

// TestSplitUnitCLI: "ckpt run --inject-mtti 3 seconds -- prog" ran a
// program called "seconds"; now it exits 2 with one line, before
// launching anything. A program named "seconds" after "--" stays valid.
func TestSplitUnitCLI(t *testing.T) {
	checkBadInput(t, []string{"--inject-mtti 3 seconds", "3s"}, "run", "-n", "2", "--inject-mtti", "3", "seconds", "--", "prog")
	checkBadInput(t, []string{"--cost", "5m"}, "model", "interval", "--method", "young", "--cost", "5", "minutes", "--mtti", "24h")
	checkBadInput(t, []string{"--cost", "write 5m"}, "model", "interval", "--method", "young", "--cost", "5 minutes", "--mtti", "24h")
	checkBadInput(t, []string{"--mtti", "2h"}, "model", "interval", "--method", "young", "--cost", "5m", "--mtti", "2", "hours")
	if err := checkSplitUnit(newRootCmd(), []string{"run", "-n", "2", "--inject-mtti", "3", "--", "seconds"}); err != nil {
		t.Errorf("a program named seconds after --: %v", err)
	}
	// --help wins.
	if code, _, stderr := runCLI(t, "run", "--inject-mtti", "3", "seconds", "--help"); code != exitOK {
		t.Errorf("--help with a split unit: exit %d, %q", code, stderr)
	}
}
