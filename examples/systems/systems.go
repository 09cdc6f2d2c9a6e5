// Package systems embeds the example system descriptions shipped with ckpt,
// so that `ckpt plan --system tsubame2` works from any directory. The files
// are plain YAML in this directory; copy one to describe your own machine.
package systems

import (
	"embed"
	"sort"
	"strings"
)

//go:embed *.yaml
var files embed.FS

// Default is the system `ckpt plan` uses when none is given.
const Default = "tsubame2"

// Names lists the embedded systems, without the .yaml extension.
func Names() []string {
	entries, _ := files.ReadDir(".")
	var out []string
	for _, e := range entries {
		out = append(out, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	sort.Strings(out)
	return out
}

// Lookup returns the YAML text of an embedded system.
func Lookup(name string) ([]byte, bool) {
	b, err := files.ReadFile(name + ".yaml")
	return b, err == nil
}
