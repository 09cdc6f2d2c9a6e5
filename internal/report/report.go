// Package report holds what the typed JSON reports of ckpt's commands
// share. A report is a struct with json tags, defined next to the code that
// computes it, so that the command printing it and a command reading it
// back (ckpt model multilevel --alpha-from, say) use one type.
package report

import (
	"encoding/json"
	"math"
)

// Float is a float64 that is JSON-safe both ways: a non-finite value is
// written as null, and null reads back as NaN (not measured).
type Float float64

// MarshalJSON writes f as json.Marshal writes a float64, or null when f is
// NaN or infinite.
func (f Float) MarshalJSON() ([]byte, error) {
	x := float64(f)
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return []byte("null"), nil
	}
	return json.Marshal(x)
}

// UnmarshalJSON reads a number, or null as NaN.
func (f *Float) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*f = Float(math.NaN())
		return nil
	}
	var x float64
	if err := json.Unmarshal(b, &x); err != nil {
		return err
	}
	*f = Float(x)
	return nil
}
