package plan

import (
	"bytes"
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/examples/systems"
)

// sysSections builds a system file from named sections, so each error case
// below changes exactly one thing of an otherwise valid file. A section set
// to "" is left out.
type sysSections struct {
	name, nodes, bytes, nodeLocal, shared, staging, failures string
}

func validSections() sysSections {
	return sysSections{
		name:  "name: test cluster",
		nodes: "nodes: 64",
		bytes: "checkpoint_bytes_per_node: 4GB",
		nodeLocal: `node_local:
  write_bandwidth: 1GB/s
  read_bandwidth: 2GB/s
  redundancy: [partner, xor:4]`,
		shared: `shared:
  write_bandwidth: 10GB/s
  read_bandwidth: 20GB/s`,
		staging: `staging:
  throughput: 5GB/s
  alpha: 0.01`,
		failures: `failures:
  - name: node
    nodes: 1
    rate: 1e-5
  - name: rack
    nodes: 16
    mtbf: 30d
  - name: everything
    nodes: 64
    rate: 2/y`,
	}
}

func (s sysSections) String() string {
	var parts []string
	for _, p := range []string{s.name, s.nodes, s.bytes, s.nodeLocal, s.shared, s.staging, s.failures} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, "\n") + "\n"
}

func load(t *testing.T, text string) (System, error) {
	t.Helper()
	return Load(strings.NewReader(text))
}

func TestLoadValid(t *testing.T) {
	s, err := load(t, validSections().String())
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if s.Name != "test cluster" || s.Nodes != 64 {
		t.Errorf("name, nodes = %q, %d", s.Name, s.Nodes)
	}
	if s.BytesPerNode != 4e9 {
		t.Errorf("BytesPerNode = %g, want 4e9", s.BytesPerNode)
	}
	if s.NodeLocal.WriteBW != 1e9 || s.NodeLocal.ReadBW != 2e9 || s.NodeLocal.Cost != 0 || s.NodeLocal.Restart != 0 {
		t.Errorf("NodeLocal = %+v", s.NodeLocal)
	}
	if got := schemeNames(s.NodeLocal.Schemes); got != "partner,xor:4" {
		t.Errorf("schemes = %s", got)
	}
	if s.Shared.WriteBW != 10e9 || s.Shared.ReadBW != 20e9 {
		t.Errorf("Shared = %+v", s.Shared)
	}
	if s.Staging == nil || s.Staging.Throughput != 5e9 || s.Staging.Alpha != 0.01 {
		t.Errorf("Staging = %+v", s.Staging)
	}
	if len(s.Failures) != 3 {
		t.Fatalf("failures = %+v", s.Failures)
	}
	want := []Failure{
		{Name: "node", Nodes: 1, Rate: 1e-5},
		{Name: "rack", Nodes: 16, Rate: 1 / (30 * 86400.0)},
		{Name: "everything", Nodes: 64, Rate: 2 / (365 * 86400.0)},
	}
	for i, w := range want {
		f := s.Failures[i]
		if f.Name != w.Name || f.Nodes != w.Nodes || !near(f.Rate, w.Rate, 1e-12) {
			t.Errorf("failure %d = %+v, want %+v", i, f, w)
		}
	}
	if got, want := s.TotalBytes(), 64*4e9; got != want {
		t.Errorf("TotalBytes = %g, want %g", got, want)
	}
	if got, want := s.TotalRate(), 1e-5+1/(30*86400.0)+2/(365*86400.0); !near(got, want, 1e-12) {
		t.Errorf("TotalRate = %g, want %g", got, want)
	}
}

func TestLoadDefaults(t *testing.T) {
	sec := validSections()
	sec.name = ""
	sec.staging = ""
	sec.nodeLocal = "node_local: {write_bandwidth: 1GB/s, read_bandwidth: 1GB/s}"
	sec.shared = "shared: {write_bandwidth: 10GB/s}"
	s, err := load(t, sec.String())
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if s.Name == "" {
		t.Error("a missing name should get a placeholder")
	}
	if s.Staging != nil {
		t.Errorf("Staging = %+v, want nil without a staging section", s.Staging)
	}
	if s.Shared.ReadBW != s.Shared.WriteBW {
		t.Errorf("shared read bandwidth %g should default to the write bandwidth %g", s.Shared.ReadBW, s.Shared.WriteBW)
	}
	if got, want := schemeNames(s.NodeLocal.Schemes), strings.Join(DefaultSchemes, ","); got != want {
		t.Errorf("schemes = %s, want the defaults %s", got, want)
	}
	// Failure names default too, and a process failure (nodes: 0) is valid.
	sec.failures = "failures:\n  - nodes: 0\n    rate: 1/h"
	s, err = load(t, sec.String())
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if s.Failures[0].Name == "" || s.Failures[0].Nodes != 0 || !near(s.Failures[0].Rate, 1/3600.0, 1e-12) {
		t.Errorf("failure = %+v", s.Failures[0])
	}
}

func TestLoadCostGivenDirectly(t *testing.T) {
	sec := validSections()
	sec.nodeLocal = "node_local:\n  cost: 72.5s\n  restart: 1m\n  redundancy: [xor:8]"
	s, err := load(t, sec.String())
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if s.NodeLocal.Cost != 72.5 || s.NodeLocal.Restart != 60 || s.NodeLocal.WriteBW != 0 {
		t.Errorf("NodeLocal = %+v", s.NodeLocal)
	}
	// restart: 0 is allowed (≥ 0).
	sec.nodeLocal = "node_local:\n  cost: 10\n  restart: 0\n  redundancy: [partner]"
	if _, err := load(t, sec.String()); err != nil {
		t.Errorf("restart 0: %v", err)
	}
}

// TestLoadExamples loads every shipped example, through the embedded copies
// and through the files on disk.
func TestLoadExamples(t *testing.T) {
	names := systems.Names()
	for _, want := range []string{"bluegene-l", "jaguar", "petaflop", "red-storm", "tsubame2"} {
		if !contains(names, want) {
			t.Errorf("built-in systems %v lack %s", names, want)
		}
	}
	for _, name := range names {
		text, ok := systems.Lookup(name)
		if !ok {
			t.Errorf("Lookup(%q) failed", name)
			continue
		}
		s, err := Load(bytes.NewReader(text))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if s.Nodes < 1 || s.BytesPerNode <= 0 || len(s.Failures) == 0 || len(s.NodeLocal.Schemes) == 0 {
			t.Errorf("%s: implausible system %+v", name, s)
		}
	}
	files, err := filepath.Glob(filepath.Join("..", "..", "examples", "systems", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("example files: %v %v", files, err)
	}
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Load(bytes.NewReader(text)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

func TestLoadTsubame2Values(t *testing.T) {
	text, _ := systems.Lookup("tsubame2")
	s, err := Load(bytes.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if s.Nodes != 1408 || s.BytesPerNode != 29e9 || s.NodeLocal.WriteBW != 400e6 || s.Shared.WriteBW != 8e9 {
		t.Errorf("system = %+v", s)
	}
	if s.Staging == nil || s.Staging.Throughput != 6.4e9 || s.Staging.Alpha != 0.00184 {
		t.Errorf("staging = %+v", s.Staging)
	}
	if len(s.Failures) != 5 {
		t.Fatalf("failures = %+v", s.Failures)
	}
	// 001 Table I: categories 2–5 add up to λ2 = 1.3774e-6 of SPEC-markov §8.
	upper := 0.0
	for _, f := range s.Failures[1:] {
		upper += f.Rate
	}
	if !near(s.Failures[0].Rate, 1.757e-5, 1e-12) || !near(upper, 1.3774e-6, 1e-12) {
		t.Errorf("λ1 = %g, λ2 = %g", s.Failures[0].Rate, upper)
	}
}

// TestLoadFieldErrors checks that every invalid file is refused with a
// FieldError naming the offending field.
func TestLoadFieldErrors(t *testing.T) {
	cases := []struct {
		name   string
		edit   func(*sysSections)
		field  string
		reason string // a substring of the message, optional
	}{
		{"nodes 0", func(s *sysSections) { s.nodes = "nodes: 0" }, "nodes", ""},
		{"nodes negative", func(s *sysSections) { s.nodes = "nodes: -3" }, "nodes", ""},
		{"missing nodes", func(s *sysSections) { s.nodes = "" }, "nodes", ""},
		{"missing checkpoint_bytes_per_node", func(s *sysSections) { s.bytes = "" }, "checkpoint_bytes_per_node", "missing"},
		{"bad size text", func(s *sysSections) { s.bytes = "checkpoint_bytes_per_node: lots" }, "checkpoint_bytes_per_node", ""},
		{"size with unknown unit", func(s *sysSections) { s.bytes = "checkpoint_bytes_per_node: 4 GBB" }, "checkpoint_bytes_per_node", ""},
		{"size zero", func(s *sysSections) { s.bytes = "checkpoint_bytes_per_node: 0" }, "checkpoint_bytes_per_node", ""},
		{"size negative", func(s *sysSections) { s.bytes = "checkpoint_bytes_per_node: -4GB" }, "checkpoint_bytes_per_node", ""},
		{"missing node_local", func(s *sysSections) { s.nodeLocal = "" }, "node_local", ""},
		{"empty node_local", func(s *sysSections) { s.nodeLocal = "node_local: {redundancy: [partner]}" }, "node_local", ""},
		{"both bandwidths and cost", func(s *sysSections) {
			s.nodeLocal = "node_local:\n  write_bandwidth: 1GB/s\n  read_bandwidth: 1GB/s\n  cost: 10\n  restart: 10\n  redundancy: [xor:8]"
		}, "node_local", "not both"},
		{"cost with two schemes", func(s *sysSections) {
			s.nodeLocal = "node_local:\n  cost: 10\n  restart: 10\n  redundancy: [xor:8, partner]"
		}, "node_local.redundancy", ""},
		{"cost without scheme", func(s *sysSections) { s.nodeLocal = "node_local:\n  cost: 10\n  restart: 10" }, "node_local.redundancy", ""},
		{"cost without restart", func(s *sysSections) { s.nodeLocal = "node_local:\n  cost: 10\n  redundancy: [xor:8]" }, "node_local.restart", ""},
		{"cost zero", func(s *sysSections) { s.nodeLocal = "node_local:\n  cost: 0\n  restart: 10\n  redundancy: [xor:8]" }, "node_local.cost", ""},
		{"bad cost text", func(s *sysSections) { s.nodeLocal = "node_local:\n  cost: soon\n  restart: 10\n  redundancy: [xor:8]" }, "node_local.cost", ""},
		{"write bandwidth zero", func(s *sysSections) { s.nodeLocal = "node_local: {write_bandwidth: 0, read_bandwidth: 1GB/s}" }, "node_local.write_bandwidth", ""},
		{"read bandwidth missing", func(s *sysSections) { s.nodeLocal = "node_local: {write_bandwidth: 1GB/s}" }, "node_local.read_bandwidth", ""},
		{"bandwidth without time unit", func(s *sysSections) { s.nodeLocal = "node_local: {write_bandwidth: 1GB, read_bandwidth: 1GB/s}" }, "node_local.write_bandwidth", ""},
		{"unknown scheme xor:1", func(s *sysSections) {
			s.nodeLocal = "node_local: {write_bandwidth: 1GB/s, read_bandwidth: 1GB/s, redundancy: [xor:1]}"
		}, "node_local.redundancy[0]", ""},
		{"unknown scheme rs:0+2", func(s *sysSections) {
			s.nodeLocal = "node_local: {write_bandwidth: 1GB/s, read_bandwidth: 1GB/s, redundancy: [partner, rs:0+2]}"
		}, "node_local.redundancy[1]", ""},
		{"unknown scheme foo", func(s *sysSections) {
			s.nodeLocal = "node_local: {write_bandwidth: 1GB/s, read_bandwidth: 1GB/s, redundancy: [partner, xor:4, foo]}"
		}, "node_local.redundancy[2]", "foo"},
		{"missing shared", func(s *sysSections) { s.shared = "" }, "shared", ""},
		{"shared without write bandwidth", func(s *sysSections) { s.shared = "shared: {read_bandwidth: 1GB/s}" }, "shared.write_bandwidth", ""},
		{"shared read bandwidth zero", func(s *sysSections) { s.shared = "shared: {write_bandwidth: 1GB/s, read_bandwidth: 0B/s}" }, "shared.read_bandwidth", ""},
		{"staging without throughput", func(s *sysSections) { s.staging = "staging: {alpha: 0.1}" }, "staging.throughput", ""},
		{"staging alpha negative", func(s *sysSections) { s.staging = "staging: {throughput: 1GB/s, alpha: -0.1}" }, "staging.alpha", ""},
		{"staging alpha not a number", func(s *sysSections) { s.staging = "staging: {throughput: 1GB/s, alpha: lots}" }, "staging.alpha", ""},
		{"no failures", func(s *sysSections) { s.failures = "" }, "failures", ""},
		{"empty failures", func(s *sysSections) { s.failures = "failures: []" }, "failures", ""},
		{"failure with rate and mtbf", func(s *sysSections) {
			s.failures = "failures:\n  - name: node\n    nodes: 1\n    rate: 1e-5\n    mtbf: 1d"
		}, "failures[0]", "not both"},
		{"failure with neither rate nor mtbf", func(s *sysSections) { s.failures = "failures:\n  - name: node\n    nodes: 1" }, "failures[0]", ""},
		{"failure nodes > system nodes", func(s *sysSections) {
			s.failures = "failures:\n  - {name: node, nodes: 1, rate: 1e-5}\n  - {name: big, nodes: 65, rate: 1e-6}"
		}, "failures[1].nodes", ""},
		{"failure nodes negative", func(s *sysSections) { s.failures = "failures:\n  - {name: node, nodes: -1, rate: 1e-5}" }, "failures[0].nodes", ""},
		{"failure nodes missing", func(s *sysSections) { s.failures = "failures:\n  - {name: node, rate: 1e-5}" }, "failures[0].nodes", ""},
		{"negative rate", func(s *sysSections) { s.failures = "failures:\n  - {name: node, nodes: 1, rate: -1e-5}" }, "failures[0].rate", ""},
		{"zero rate", func(s *sysSections) { s.failures = "failures:\n  - {name: node, nodes: 1, rate: 0}" }, "failures[0].rate", ""},
		{"bad rate text", func(s *sysSections) { s.failures = "failures:\n  - {name: node, nodes: 1, rate: often}" }, "failures[0].rate", ""},
		{"zero mtbf", func(s *sysSections) { s.failures = "failures:\n  - {name: node, nodes: 1, mtbf: 0}" }, "failures[0].mtbf", ""},
		{"negative mtbf", func(s *sysSections) { s.failures = "failures:\n  - {name: node, nodes: 1, mtbf: -1h}" }, "failures[0].mtbf", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sec := validSections()
			c.edit(&sec)
			_, err := load(t, sec.String())
			if err == nil {
				t.Fatalf("Load accepted:\n%s", sec)
			}
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("error %q (%T) is not a *FieldError", err, err)
			}
			if fe.Field != c.field {
				t.Errorf("Field = %q, want %q (error: %v)", fe.Field, c.field, err)
			}
			if !strings.HasPrefix(err.Error(), c.field+": ") {
				t.Errorf("message %q does not start with the field", err)
			}
			if c.reason != "" && !strings.Contains(err.Error(), c.reason) {
				t.Errorf("message %q does not mention %q", err, c.reason)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("message %q spans several lines", err)
			}
		})
	}
}

// TestLoadSyntaxErrors covers files that are not a system description at
// all. These are not FieldErrors (there is no field to name), but the
// message must still say what is wrong, on one line.
func TestLoadSyntaxErrors(t *testing.T) {
	valid := validSections().String()
	cases := []struct {
		name, text string
		mention    []string
	}{
		{"empty file", "", []string{"empty"}},
		{"only a comment", "# nothing here\n", []string{"empty"}},
		{"unknown field", valid + "colour: blue\n", []string{"colour"}},
		{"misspelt nested field", strings.Replace(valid, "write_bandwidth: 1GB/s", "write_bandwith: 1GB/s", 1), []string{"write_bandwith"}},
		{"non-YAML garbage", "nodes: [1, 2\n", []string{"YAML"}},
		{"binary garbage", "\x00\x01\x02\xff\xfe", []string{"YAML"}},
		{"a list instead of a mapping", "- a\n- b\n", []string{"YAML"}},
		{"a string", "just some words\n", []string{"YAML"}},
		{"nodes not a number", strings.Replace(valid, "nodes: 64", "nodes: many", 1), []string{"nodes", "whole number"}},
		{"failures a mapping", strings.Replace(valid, "failures:\n", "failures: {}\nx:\n", 1), []string{"YAML"}},
		{"tab indentation", "nodes: 4\nshared:\n\twrite_bandwidth: 1GB/s\n", []string{"YAML"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := load(t, c.text)
			if err == nil {
				t.Fatalf("Load accepted %q", c.text)
			}
			for _, m := range c.mention {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not mention %q", err, m)
				}
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q spans several lines", err)
			}
		})
	}
}

// TestLoadRejectsFractionalNodes: "nodes: 1.5" is refused, for the system
// and for a failure category, rather than truncated to 1 as decoding
// straight into an int would.
func TestLoadRejectsFractionalNodes(t *testing.T) {
	sec := validSections()
	sec.nodes = "nodes: 64.5"
	if s, err := load(t, sec.String()); err == nil {
		t.Errorf("Load accepted nodes: 64.5 as %d nodes", s.Nodes)
	}
	sec = validSections()
	sec.failures = "failures:\n  - {name: node, nodes: 1.5, rate: 1e-5}"
	if s, err := load(t, sec.String()); err == nil {
		t.Errorf("Load accepted failures[0].nodes: 1.5 as %d", s.Failures[0].Nodes)
	}
}

func TestLoadOddInputNoPanic(t *testing.T) {
	// Odd but well-formed YAML values must give errors, never panics.
	odd := []string{
		"nodes: 9223372036854775807\n",
		"nodes: 99999999999999999999999\n",
		"nodes: ~\n",
		"nodes: 4\ncheckpoint_bytes_per_node: [1, 2]\n",
		"nodes: 4\nnode_local: 3\n",
		"nodes: 4\nfailures: [1, 2]\n",
		"nodes: 4\nfailures: [{nodes: [1]}]\n",
		"&a [*a]\n",
		"nodes: 4\ncheckpoint_bytes_per_node: 1e400GB\n",
		"nodes: 4\ncheckpoint_bytes_per_node: NaN\n",
		strings.Repeat("[", 10000),
	}
	for _, text := range odd {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("Load(%.40q) panicked: %v", text, r)
				}
			}()
			if _, err := load(t, text); err == nil {
				t.Errorf("Load(%.40q) accepted", text)
			}
		}()
	}
}

// The planner reads schemes with the store's parser (tested in
// internal/redundancy): the same spelling means the same scheme.
func TestParseSchemeIsTheStores(t *testing.T) {
	for _, in := range []string{"single", "partner", "xor:8", "rs:4+2"} {
		sc, err := ParseScheme(in)
		if err != nil || sc.String() != in {
			t.Errorf("ParseScheme(%q) = %v, %v", in, sc, err)
		}
	}
	if _, err := ParseScheme("xor:1"); err == nil {
		t.Error("xor:1 accepted")
	}
}

func TestFieldErrorUnwrap(t *testing.T) {
	inner := errors.New("boom")
	err := error(&FieldError{Field: "a.b", Err: inner})
	if !errors.Is(err, inner) || err.Error() != "a.b: boom" {
		t.Errorf("FieldError = %q, Is = %v", err, errors.Is(err, inner))
	}
	if errors.Is(err, fs.ErrNotExist) {
		t.Error("unexpected match")
	}
}

func schemeNames(ss []Scheme) string {
	var out []string
	for _, s := range ss {
		out = append(out, s.String())
	}
	return strings.Join(out, ",")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func near(a, b, rel float64) bool {
	return math.Abs(a-b) <= rel*math.Max(math.Abs(a), math.Abs(b))
}
