package recovery

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A tiny runner of data-driven scripts in the format of etcd's
// cockroachdb/datadriven, so that the package needs no dependency:
//
//	# comment
//	command arg key=value key=(a,b,c)
//	----
//	expected output
//	<blank line>
//
// Run with -rewrite to replace the expected output of every script with
// what the code does now; review the diff like code.

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of testdata/*.txt")

type command struct {
	pos  string // file:line, for messages
	name string
	args []arg
}

type arg struct {
	key  string
	vals []string // one value, or the elements of a (list)
}

func (c *command) has(key string) bool {
	for _, a := range c.args {
		if a.key == key {
			return true
		}
	}
	return false
}

// runScripts runs every testdata/*.txt file as a subtest; newHandler gives
// each file a fresh handler, which maps a command to its output.
func runScripts(t *testing.T, newHandler func(t *testing.T) func(*command) string) {
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

func runScript(t *testing.T, path string, handle func(*command) string) {
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
			t.Fatalf("%s: command without ---- line", cmd.pos)
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
			t.Errorf("%s: %s\n got:\n%s\nwant:\n%s", cmd.pos, trimmed, indent(got), indent(strings.Join(want, "\n")))
		}
	}
	if *rewrite {
		if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func indent(s string) string { return "    " + strings.ReplaceAll(s, "\n", "\n    ") }

func parseCommand(t *testing.T, pos, line string) *command {
	fields := strings.Fields(line)
	c := &command{pos: pos, name: fields[0]}
	for _, f := range fields[1:] {
		k, v, ok := strings.Cut(f, "=")
		a := arg{key: k}
		switch {
		case !ok:
		case strings.HasPrefix(v, "(") && strings.HasSuffix(v, ")"):
			if inner := v[1 : len(v)-1]; inner != "" {
				a.vals = strings.Split(inner, ",")
			} else {
				a.vals = []string{}
			}
		default:
			a.vals = []string{v}
		}
		c.args = append(c.args, a)
	}
	return c
}
