package main

import (
	"runtime/debug"
	"strings"
)

// version is what `ckpt --version` prints: the module version the binary
// was built from and the commit of its source tree, from the build
// information Go embeds.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown (built without module information)"
	}
	return versionOf(bi)
}

// versionOf formats the version of a build: "v1.2.3", or "(devel)" for a
// build from a source tree, then the commit and whether the tree had
// uncommitted changes.
func versionOf(bi *debug.BuildInfo) string {
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, modified, at string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		case "vcs.time":
			at = s.Value
		}
	}
	var parts []string
	if rev != "" {
		c := "commit " + rev
		if modified == "true" {
			c += " with uncommitted changes"
		}
		parts = append(parts, c)
		if at != "" {
			parts = append(parts, at)
		}
	} else {
		parts = append(parts, "commit unknown (not built from a git checkout, or with -buildvcs=false)")
	}
	if bi.GoVersion != "" {
		parts = append(parts, bi.GoVersion)
	}
	return v + " (" + strings.Join(parts, ", ") + ")"
}
