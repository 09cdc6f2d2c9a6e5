package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// unreadable matches citations a user cannot look up: the papers' file
// numbers ("000 eq. 1", "paper 001"), the specification notes of the
// project's authors ("SPEC-markov §4.3", "SPEC §5") and paths outside the
// repository.
var unreadable = regexp.MustCompile(`(^|[^0-9.,])00[0-3]([^0-9]|$)|paper 00|SPEC|\.\./shared|shared/papers`)

// TestHelpCitesReadably: every command's --help names papers by authors
// and year and points at documents in the repository.
func TestHelpCitesReadably(t *testing.T) {
	var walk func(c *cobra.Command, path []string)
	n := 0
	walk = func(c *cobra.Command, path []string) {
		code, stdout, stderr := runCLI(t, append(append([]string(nil), path...), "--help")...)
		n++
		name := "ckpt " + strings.Join(path, " ")
		if code != exitOK {
			t.Errorf("%s --help: exit %d, %q", name, code, stderr)
		}
		for _, line := range strings.Split(stdout, "\n") {
			if m := unreadable.FindString(line); m != "" {
				t.Errorf("%s --help cites %q, which a user cannot look up:\n  %s", name, strings.TrimSpace(m), line)
			}
		}
		for _, sub := range c.Commands() {
			if !sub.Hidden && sub.Name() != "help" && sub.Name() != "completion" {
				walk(sub, append(append([]string(nil), path...), sub.Name()))
			}
		}
	}
	walk(newRootCmd(), nil)
	if n < 20 {
		t.Errorf("walked %d commands: the command tree is not what the test expects", n)
	}
}

// TestUnreadablePattern: the pattern finds what it must and leaves
// numbers alone.
func TestUnreadablePattern(t *testing.T) {
	for _, s := range []string{"(000 eq. 1)", "paper 001", "003's symbols", "SPEC-markov §4.3", "see ../shared/papers", "002 §III-D"} {
		if !unreadable.MatchString(s) {
			t.Errorf("%q not caught", s)
		}
	}
	for _, s := range []string{"α_c = n/60000 s", "1,000 steps", "0.001 s", "10001", "Oldfield et al. 2007, eq. 1"} {
		if unreadable.MatchString(s) {
			t.Errorf("%q caught", s)
		}
	}
}
