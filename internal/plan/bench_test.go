package plan

import (
	"bytes"
	"testing"

	"github.com/ckpt/ckpt/examples/systems"
)

// BenchmarkPlanTSUBAME plans the built-in TSUBAME2.0 system: 33
// alternatives, each an optimisation of interval and counts, on every core.
func BenchmarkPlanTSUBAME(b *testing.B) {
	text, _ := systems.Lookup("tsubame2")
	s, err := Load(bytes.NewReader(text))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := Plan(s, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPlanTSUBAMETarget adds the bandwidth solve of --target-efficiency 0.9.
func BenchmarkPlanTSUBAMETarget(b *testing.B) {
	text, _ := systems.Lookup("tsubame2")
	s, err := Load(bytes.NewReader(text))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := Plan(s, Options{TargetEfficiency: 0.9}); err != nil {
			b.Fatal(err)
		}
	}
}
