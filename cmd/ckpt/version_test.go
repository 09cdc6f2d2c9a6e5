package main

import (
	"runtime/debug"
	"strings"
	"testing"
)

// TestVersionFlag: ckpt --version exits 0 and prints one line on stdout
// naming the binary and its version.
func TestVersionFlag(t *testing.T) {
	code, stdout, stderr := runCLI(t, "--version")
	if code != exitOK || stderr != "" {
		t.Fatalf("ckpt --version: exit %d, stderr %q", code, stderr)
	}
	if !strings.HasPrefix(stdout, "ckpt ") || strings.Count(stdout, "\n") != 1 || stdout != "ckpt "+version()+"\n" {
		t.Errorf("ckpt --version printed %q, want one line %q", stdout, "ckpt "+version())
	}
	if !strings.Contains(stdout, "commit") {
		t.Errorf("ckpt --version does not say which commit: %q", stdout)
	}
}

// TestVersionOf: the version names the module version, the commit and
// whether the tree was modified.
func TestVersionOf(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/ckpt/ckpt", Version: "v0.3.1"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "dc62cd0abc"}, {Key: "vcs.modified", Value: "true"}, {Key: "vcs.time", Value: "2026-11-25T18:00:00Z"}}}
	got := versionOf(bi)
	for _, want := range []string{"v0.3.1", "commit dc62cd0abc", "uncommitted changes", "2026-11-25T18:00:00Z", "go1.26.8"} {
		if !strings.Contains(got, want) {
			t.Errorf("versionOf = %q: no %q", got, want)
		}
	}
	bi.Settings[1].Value = "false"
	if got := versionOf(bi); strings.Contains(got, "uncommitted") {
		t.Errorf("an unmodified tree reported modified: %q", got)
	}
	bi.Main.Version, bi.Settings = "", nil
	got = versionOf(bi)
	if !strings.HasPrefix(got, "(devel)") || !strings.Contains(got, "commit unknown") {
		t.Errorf("a build without VCS information: %q", got)
	}
}
