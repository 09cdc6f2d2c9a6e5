// Package scripttest runs data-driven test scripts, in the format of
// cockroachdb/datadriven (which etcd's raft tests use), for the packages
// whose pure cores are tested step by step (internal/coord,
// internal/recovery, internal/msglog), without a dependency:
//
//	# comment
//	command arg key=value key=(a,b,c)
//	----
//	expected output
//	<blank line>
//
// Run a package's tests with -rewrite to replace the expected output of
// every script with what the code does now; review the diff like code.
package scripttest

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of testdata/*.txt")

// Command is one command line of a script.
type Command struct {
	Pos  string // file:line, for messages
	Name string
	Args []Arg
}

// Arg is one argument: a bare key, key=value, or key=(a,b,c).
type Arg struct {
	Key  string
	Vals []string // one value, or the elements of a (list); nil for a bare key
}

// Has reports whether the command has an argument key.
func (c *Command) Has(key string) bool {
	for _, a := range c.Args {
		if a.Key == key {
			return true
		}
	}
	return false
}

// Run runs every testdata/*.txt file as a subtest; newHandler gives
// each file a fresh handler, which maps a command to its output.
func Run(t *testing.T, newHandler func(t *testing.T) func(*Command) string) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) {
			runScript(t, f, newHandler(t))
		})
	}
}

func runScript(t *testing.T, path string, handle func(*Command) string) {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	var out strings.Builder // the rewritten script
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			if i < len(lines)-1 || line != "" {
				out.WriteString(line + "\n")
			}
			continue
		}
		cmd := parseCommand(t, fmt.Sprintf("%s:%d", path, i+1), trimmed)
		if i+1 >= len(lines) || strings.TrimSpace(lines[i+1]) != "----" {
			t.Fatalf("%s: command without ---- line", cmd.Pos)
		}
		i += 2
		var want []string
		for ; i < len(lines) && strings.TrimSpace(lines[i]) != ""; i++ {
			want = append(want, lines[i])
		}
		got := strings.TrimRight(handle(cmd), "\n")
		if got == "" {
			got = "ok"
		}
		out.WriteString(trimmed + "\n----\n" + got + "\n")
		if i < len(lines)-1 {
			out.WriteString("\n")
		}
		if !*rewrite && got != strings.Join(want, "\n") {
			t.Errorf("%s: %s\n got:\n%s\nwant:\n%s", cmd.Pos, trimmed, indent(got), indent(strings.Join(want, "\n")))
		}
	}
	if *rewrite {
		if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func indent(s string) string { return "    " + strings.ReplaceAll(s, "\n", "\n    ") }

func parseCommand(t *testing.T, pos, line string) *Command {
	fields := strings.Fields(line)
	c := &Command{Pos: pos, Name: fields[0]}
	for _, f := range fields[1:] {
		k, v, ok := strings.Cut(f, "=")
		a := Arg{Key: k}
		switch {
		case !ok:
		case strings.HasPrefix(v, "(") && strings.HasSuffix(v, ")"):
			if inner := v[1 : len(v)-1]; inner != "" {
				a.Vals = strings.Split(inner, ",")
			} else {
				a.Vals = []string{}
			}
		default:
			a.Vals = []string{v}
		}
		c.Args = append(c.Args, a)
	}
	return c
}
