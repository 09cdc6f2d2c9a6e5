package plan

import (
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/ckpt/ckpt/internal/redundancy"
	"github.com/ckpt/ckpt/internal/units"
)

// System is a described machine and job, in SI units, after parsing and
// validation.
type System struct {
	Name         string
	Nodes        int
	BytesPerNode float64 // checkpoint bytes each node writes
	NodeLocal    NodeLocal
	Shared       Shared
	Staging      *Staging // nil: no staging servers, blocking flush only
	Failures     []Failure
}

// NodeLocal describes the node-local cache level. Either the bandwidths are
// known (costs then depend on the redundancy scheme), or Cost and Restart are
// given directly for its one scheme.
type NodeLocal struct {
	WriteBW, ReadBW float64 // bytes/s per node; 0 when Cost/Restart are given
	Cost, Restart   float64 // seconds; 0 when bandwidths are given
	Schemes         []Scheme
}

// Shared describes the shared tier (parallel file system or object store).
type Shared struct {
	WriteBW, ReadBW float64 // aggregate bytes/s
}

// Staging describes the staging servers that flush in the background (001).
type Staging struct {
	Throughput float64 // aggregate bytes/s they can move to the shared tier
	Alpha      float64 // overhead factor α on computation while a flush runs
}

// Failure is a failure category (as in 001 Table I): how many nodes one
// failure takes down, and the category's rate over the whole system.
// Nodes = 0 is a process failure that leaves the node and its cache intact.
type Failure struct {
	Name  string
	Nodes int
	Rate  float64 // per second, whole system
}

// TotalBytes is the size of one checkpoint of the whole job.
func (s System) TotalBytes() float64 { return float64(s.Nodes) * s.BytesPerNode }

// TotalRate is the rate of all failures.
func (s System) TotalRate() float64 {
	r := 0.0
	for _, f := range s.Failures {
		r += f.Rate
	}
	return r
}

// Scheme is a redundancy scheme of the node-local level, described by its
// data and parity shards per set: the store's own description.
type Scheme = redundancy.Scheme

// ParseScheme reads single, partner, xor:S or rs:K+M, the spelling
// `ckpt run --redundancy` uses too.
func ParseScheme(text string) (Scheme, error) { return redundancy.ParseScheme(text) }

// DefaultSchemes are considered when a system file does not list any.
var DefaultSchemes = []string{"partner", "xor:4", "xor:8", "xor:16"}

// The file format. Quantities are strings so that they can carry units.
type file struct {
	Name                   string        `yaml:"name"`
	Description            string        `yaml:"description"`
	Nodes                  wholeNumber   `yaml:"nodes"`
	CheckpointBytesPerNode string        `yaml:"checkpoint_bytes_per_node"`
	NodeLocal              *fileLocal    `yaml:"node_local"`
	Shared                 *fileShared   `yaml:"shared"`
	Staging                *fileStaging  `yaml:"staging"`
	Failures               []fileFailure `yaml:"failures"`
}

type fileLocal struct {
	WriteBandwidth string   `yaml:"write_bandwidth"`
	ReadBandwidth  string   `yaml:"read_bandwidth"`
	Cost           string   `yaml:"cost"`
	Restart        string   `yaml:"restart"`
	Redundancy     []string `yaml:"redundancy"`
}

type fileShared struct {
	WriteBandwidth string `yaml:"write_bandwidth"`
	ReadBandwidth  string `yaml:"read_bandwidth"`
}

type fileStaging struct {
	Throughput string `yaml:"throughput"`
	Alpha      string `yaml:"alpha"`
}

type fileFailure struct {
	Name  string      `yaml:"name"`
	Nodes wholeNumber `yaml:"nodes"`
	Rate  string      `yaml:"rate"`
	MTBF  string      `yaml:"mtbf"`
}

// FieldError names the field of a system file that is wrong.
type FieldError struct {
	Field string // dotted path, e.g. failures[2].rate
	Err   error
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Err.Error() }
func (e *FieldError) Unwrap() error { return e.Err }

func fieldErr(field string, format string, args ...any) error {
	return &FieldError{Field: field, Err: fmt.Errorf(format, args...)}
}

// wholeNumber is an integer field that refuses fractions ("64.5") rather than
// truncating them, as decoding straight into an int would.
type wholeNumber struct {
	text string
	set  bool
}

func (w *wholeNumber) UnmarshalYAML(n *yaml.Node) error {
	w.text, w.set = n.Value, true
	if n.Kind != yaml.ScalarNode {
		w.text = "a " + map[yaml.Kind]string{yaml.MappingNode: "mapping", yaml.SequenceNode: "list"}[n.Kind]
	}
	return nil
}

func (w wholeNumber) get(field string) (int, error) {
	if !w.set {
		return 0, fieldErr(field, "missing")
	}
	v, err := strconv.Atoi(strings.TrimSpace(w.text))
	if err != nil {
		return 0, fieldErr(field, "must be a whole number, got %q", w.text)
	}
	return v, nil
}

// yamlFieldRE and yamlTypeRE rewrite the YAML decoder's messages, which
// name Go types, into the file's terms.
var (
	yamlFieldRE = regexp.MustCompile(`field (\S+) not found in type \S+`)
	yamlTypeRE  = regexp.MustCompile("cannot unmarshal !!(\\w+)(?: `([^`]*)`)? into (\\S+)")
)

func yamlMessage(err error) string {
	var parts []string
	for _, line := range strings.Split(err.Error(), "\n") {
		line = strings.TrimSpace(strings.TrimPrefix(line, "yaml: "))
		if line == "" || line == "unmarshal errors:" {
			continue
		}
		line = yamlFieldRE.ReplaceAllString(line, `unknown field "$1"`)
		line = yamlTypeRE.ReplaceAllStringFunc(line, func(m string) string {
			sub := yamlTypeRE.FindStringSubmatch(m)
			want := "a single value"
			switch {
			case strings.HasPrefix(sub[3], "[]"):
				want = "a list"
			case strings.Contains(sub[3], "."):
				want = "a mapping of keys"
			}
			got := map[string]string{"map": "a mapping", "seq": "a list"}[sub[1]]
			if got == "" {
				got = fmt.Sprintf("%q", sub[2])
			}
			return fmt.Sprintf("expected %s, got %s", want, got)
		})
		parts = append(parts, line)
	}
	return strings.Join(parts, "; ")
}

// Load reads and validates a system file (YAML; see docs/PLANNING.md and the
// examples in examples/systems/). Unknown fields are errors, so a misspelt
// key is reported rather than silently ignored.
func Load(r io.Reader) (System, error) {
	var f file
	dec := yaml.NewDecoder(io.LimitReader(r, 16<<20))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		if errors.Is(err, io.EOF) {
			return System{}, errors.New("the system file is empty")
		}
		return System{}, fmt.Errorf("malformed YAML: %s", yamlMessage(err))
	}
	var extra any
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return System{}, errors.New("the file holds more than one YAML document; describe one system per file")
	}
	return f.system()
}

func (f file) system() (System, error) {
	s := System{Name: f.Name}
	if s.Name == "" {
		s.Name = "unnamed system"
	}
	var err error
	if s.Nodes, err = f.Nodes.get("nodes"); err != nil {
		return s, err
	}
	if s.Nodes < 1 {
		return s, fieldErr("nodes", "must be a whole number ≥ 1, got %d", s.Nodes)
	}
	if s.BytesPerNode, err = quantity("checkpoint_bytes_per_node", f.CheckpointBytesPerNode, units.ParseSize, true); err != nil {
		return s, err
	}
	if s.BytesPerNode <= 0 {
		return s, fieldErr("checkpoint_bytes_per_node", "must be > 0")
	}

	if f.NodeLocal == nil {
		return s, fieldErr("node_local", "missing: give write_bandwidth and read_bandwidth (or cost and restart) of the node-local cache")
	}
	nl := f.NodeLocal
	if s.NodeLocal.WriteBW, err = quantity("node_local.write_bandwidth", nl.WriteBandwidth, units.ParseBandwidth, false); err != nil {
		return s, err
	}
	if s.NodeLocal.ReadBW, err = quantity("node_local.read_bandwidth", nl.ReadBandwidth, units.ParseBandwidth, false); err != nil {
		return s, err
	}
	if s.NodeLocal.Cost, err = quantity("node_local.cost", nl.Cost, units.ParseDuration, false); err != nil {
		return s, err
	}
	if s.NodeLocal.Restart, err = quantity("node_local.restart", nl.Restart, units.ParseDuration, false); err != nil {
		return s, err
	}
	byBW := nl.WriteBandwidth != "" || nl.ReadBandwidth != ""
	byCost := nl.Cost != "" || nl.Restart != ""
	switch {
	case byBW && byCost:
		return s, fieldErr("node_local", "give either write_bandwidth and read_bandwidth, or cost and restart, not both")
	case byBW:
		if s.NodeLocal.WriteBW <= 0 {
			return s, fieldErr("node_local.write_bandwidth", "must be > 0")
		}
		if s.NodeLocal.ReadBW <= 0 {
			return s, fieldErr("node_local.read_bandwidth", "must be > 0")
		}
	case byCost:
		if s.NodeLocal.Cost <= 0 {
			return s, fieldErr("node_local.cost", "must be > 0")
		}
		if s.NodeLocal.Restart < 0 || nl.Restart == "" {
			return s, fieldErr("node_local.restart", "must be given and ≥ 0 with cost")
		}
	default:
		return s, fieldErr("node_local", "give write_bandwidth and read_bandwidth (or cost and restart)")
	}
	names := nl.Redundancy
	if len(names) == 0 {
		names = DefaultSchemes
		if byCost {
			return s, fieldErr("node_local.redundancy", "name the one scheme that cost and restart describe (for example [xor:8])")
		}
	}
	if byCost && len(names) != 1 {
		return s, fieldErr("node_local.redundancy", "with cost and restart given, list exactly one scheme (they describe that scheme), got %d", len(names))
	}
	for i, n := range names {
		sc, err := ParseScheme(n)
		if err != nil {
			return s, &FieldError{Field: fmt.Sprintf("node_local.redundancy[%d]", i), Err: err}
		}
		s.NodeLocal.Schemes = append(s.NodeLocal.Schemes, sc)
	}

	if f.Shared == nil {
		return s, fieldErr("shared", "missing: give write_bandwidth and read_bandwidth of the shared tier")
	}
	if s.Shared.WriteBW, err = quantity("shared.write_bandwidth", f.Shared.WriteBandwidth, units.ParseBandwidth, true); err != nil {
		return s, err
	}
	if s.Shared.ReadBW, err = quantity("shared.read_bandwidth", f.Shared.ReadBandwidth, units.ParseBandwidth, false); err != nil {
		return s, err
	}
	if f.Shared.ReadBandwidth == "" {
		s.Shared.ReadBW = s.Shared.WriteBW
	}
	if s.Shared.WriteBW <= 0 {
		return s, fieldErr("shared.write_bandwidth", "must be > 0")
	}
	if s.Shared.ReadBW <= 0 {
		return s, fieldErr("shared.read_bandwidth", "must be > 0")
	}

	if f.Staging != nil {
		st := &Staging{}
		if st.Throughput, err = quantity("staging.throughput", f.Staging.Throughput, units.ParseBandwidth, true); err != nil {
			return s, err
		}
		if st.Throughput <= 0 {
			return s, fieldErr("staging.throughput", "must be > 0")
		}
		if st.Alpha, err = quantity("staging.alpha", f.Staging.Alpha, units.ParseFloat, false); err != nil {
			return s, err
		}
		if st.Alpha < 0 {
			return s, fieldErr("staging.alpha", "must be ≥ 0, got %g", st.Alpha)
		}
		s.Staging = st
	}

	if len(f.Failures) == 0 {
		return s, fieldErr("failures", "list at least one failure category (name, nodes, rate or mtbf)")
	}
	for i, ff := range f.Failures {
		field := fmt.Sprintf("failures[%d]", i)
		fc := Failure{Name: ff.Name}
		if fc.Name == "" {
			fc.Name = fmt.Sprintf("category %d", i+1)
		}
		if !ff.Nodes.set {
			return s, fieldErr(field+".nodes", "missing: how many nodes one failure takes down (0 for a process failure)")
		}
		if fc.Nodes, err = ff.Nodes.get(field + ".nodes"); err != nil {
			return s, err
		}
		if fc.Nodes < 0 || fc.Nodes > s.Nodes {
			return s, fieldErr(field+".nodes", "must lie in [0, %d] (the system's nodes), got %d", s.Nodes, fc.Nodes)
		}
		switch {
		case ff.Rate != "" && ff.MTBF != "":
			return s, fieldErr(field, "give rate or mtbf, not both")
		case ff.Rate != "":
			if fc.Rate, err = quantity(field+".rate", ff.Rate, units.ParseRate, true); err != nil {
				return s, err
			}
		case ff.MTBF != "":
			m, err := quantity(field+".mtbf", ff.MTBF, units.ParseDuration, true)
			if err != nil {
				return s, err
			}
			if m <= 0 {
				return s, fieldErr(field+".mtbf", "must be > 0")
			}
			fc.Rate = 1 / m
		default:
			return s, fieldErr(field, "give rate (per second over the whole system) or mtbf")
		}
		if fc.Rate <= 0 || math.IsInf(fc.Rate, 0) {
			return s, fieldErr(field+".rate", "must be > 0")
		}
		s.Failures = append(s.Failures, fc)
	}
	return s, nil
}

// quantity parses an optional or required field with a unit parser.
func quantity(field, text string, parse func(string) (float64, error), required bool) (float64, error) {
	if strings.TrimSpace(text) == "" {
		if required {
			return 0, fieldErr(field, "missing")
		}
		return 0, nil
	}
	v, err := parse(text)
	if err != nil {
		return 0, &FieldError{Field: field, Err: err}
	}
	if v < 0 {
		return 0, fieldErr(field, "must not be negative, got %q", text)
	}
	return v, nil
}
