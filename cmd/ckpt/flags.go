package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ckpt/ckpt/internal/units"
)

// quantity is a flag holding a number with a unit, parsed by one of the
// units parsers into SI units. set records whether the user gave it.
type quantity struct {
	v     float64
	set   bool
	kind  string
	parse func(string) (float64, error)
}

func (q *quantity) String() string {
	if !q.set {
		return ""
	}
	return strconv.FormatFloat(q.v, 'g', -1, 64)
}
func (q *quantity) Set(s string) error {
	v, err := q.parse(s)
	if err != nil {
		return err
	}
	q.v, q.set = v, true
	return nil
}
func (q *quantity) Type() string { return q.kind }

// quantityFlag adds a quantity flag of the given kind, parsed by parse.
func quantityFlag(fs *pflag.FlagSet, name, kind string, parse func(string) (float64, error), usage string) *quantity {
	q := &quantity{kind: kind, parse: parse}
	fs.Var(q, name, usage)
	return q
}

func durationFlag(fs *pflag.FlagSet, name, usage string) *quantity {
	return quantityFlag(fs, name, "duration", units.ParseDuration, usage)
}

func sizeFlag(fs *pflag.FlagSet, name, usage string) *quantity {
	return quantityFlag(fs, name, "size", units.ParseSize, usage)
}

func bandwidthFlag(fs *pflag.FlagSet, name, usage string) *quantity {
	return quantityFlag(fs, name, "bandwidth", units.ParseBandwidth, usage)
}

func numberFlag(fs *pflag.FlagSet, name, usage string) *quantity {
	return quantityFlag(fs, name, "number", units.ParseFloat, usage)
}

// list is a comma-separated list flag of quantities.
type list struct {
	v     []float64
	set   bool
	kind  string
	parse func(string) (float64, error)
}

func (l *list) String() string {
	parts := make([]string, len(l.v))
	for i, x := range l.v {
		parts[i] = strconv.FormatFloat(x, 'g', -1, 64)
	}
	return strings.Join(parts, ",")
}
func (l *list) Set(s string) error {
	v, err := units.ParseList(s, l.parse)
	if err != nil {
		return err
	}
	l.v, l.set = v, true
	return nil
}
func (l *list) Type() string { return l.kind }

func listFlag(fs *pflag.FlagSet, name, kind string, parse func(string) (float64, error), usage string) *list {
	l := &list{kind: kind, parse: parse}
	fs.Var(l, name, usage)
	return l
}

// intList is a comma-separated list of whole numbers ≥ 0.
type intList struct {
	v   []int
	set bool
}

func (l *intList) String() string {
	parts := make([]string, len(l.v))
	for i, x := range l.v {
		parts[i] = strconv.Itoa(x)
	}
	return strings.Join(parts, ",")
}
func (l *intList) Set(s string) error {
	var out []int
	for i, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		n, err := strconv.Atoi(part)
		if err != nil || n < 0 {
			return fmt.Errorf("element %d (%q) is not a whole number ≥ 0", i+1, part)
		}
		out = append(out, n)
	}
	l.v, l.set = out, true
	return nil
}
func (l *intList) Type() string { return "ints" }

// jsonFlag adds the --json flag every command has.
func jsonFlag(c *cobra.Command) *bool {
	return c.Flags().Bool("json", false, "print one JSON object (SI units: seconds, bytes, bytes/s; non-finite values are null)")
}

// req names a quantity flag for require.
type req struct {
	name string
	q    *quantity
}

// require reports the first of the named quantities the user did not give.
func require(rs ...req) error {
	for _, r := range rs {
		if !r.q.set {
			return usagef("--%s is required", r.name)
		}
	}
	return nil
}
