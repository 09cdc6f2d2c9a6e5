package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/ckpt/ckpt/model"
)

// object is a JSON object whose keys keep the order they were added in, so
// that --json output reads in the same order as the table.
type object []kv

type kv struct {
	key string
	val any
}

func (o object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(f.key)
		b.Write(k)
		b.WriteByte(':')
		v, err := json.Marshal(f.val)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.key, err)
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// num makes a float JSON-safe: non-finite values become null.
func num(x float64) any {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return x
}

// nums applies num to a slice.
func nums(xs []float64) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = num(x)
	}
	return out
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// table prints aligned rows.
type table struct {
	tw *tabwriter.Writer
}

func newTable(w io.Writer) *table {
	return &table{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
}

func (t *table) row(cells ...string) { fmt.Fprintln(t.tw, strings.Join(cells, "\t")) }
func (t *table) flush() error        { return t.tw.Flush() }

// modelErr turns a model error into a usage error naming the flag.
func modelErr(err error) error {
	if err == nil {
		return nil
	}
	var pe *model.ParamError
	if errors.As(err, &pe) {
		if math.IsNaN(pe.Value) {
			return usagef("--%s: %s", pe.Param, pe.Reason)
		}
		return usagef("--%s: %s (got %g)", pe.Param, pe.Reason, pe.Value)
	}
	if errors.Is(err, model.ErrNoOptimum) {
		return usageError{err}
	}
	if errors.Is(err, model.ErrInfeasible) {
		return usagef("--flush-latency: %v", err)
	}
	return err
}

// pct formats a fraction as a percentage.
func pct(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "-"
	}
	return fmt.Sprintf("%.2f%%", 100*x)
}

// sec prints seconds exactly enough for scripts reading the table too.
func sec(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "-"
	}
	return fmt.Sprintf("%.6g s", x)
}

// everyNth says how often something happens counted in checkpoints:
// "every checkpoint", "every 2nd checkpoint", "every 11th checkpoint".
func everyNth(k int) string {
	if k <= 1 {
		return "every checkpoint"
	}
	return "every " + ordinal(k) + " checkpoint"
}
