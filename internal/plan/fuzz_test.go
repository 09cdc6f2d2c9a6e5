package plan

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/examples/systems"
)

// FuzzLoad feeds arbitrary text to the system-file loader: it must return a
// valid system or a one-line error, never panic.
func FuzzLoad(f *testing.F) {
	for _, name := range systems.Names() {
		text, _ := systems.Lookup(name)
		f.Add(string(text))
	}
	f.Add("nodes: 4\n")
	f.Add("nodes: [1, 2]\nfailures: {a: b}\n")
	f.Add("---\n---\n")
	f.Fuzz(func(t *testing.T, text string) {
		s, err := Load(strings.NewReader(text))
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("multi-line error %q", err)
			}
			var fe *FieldError
			if errors.As(err, &fe) && fe.Field == "" {
				t.Errorf("field error without a field: %v", err)
			}
			return
		}
		if s.Nodes < 1 || !(s.BytesPerNode > 0) || !(s.Shared.WriteBW > 0) || len(s.Failures) == 0 || math.IsInf(s.TotalRate(), 0) {
			t.Errorf("Load accepted an invalid system: %+v", s)
		}
	})
}
