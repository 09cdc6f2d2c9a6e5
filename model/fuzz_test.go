package model

import (
	"strings"
	"testing"
)

// FuzzParseDependencyGraph: any text gives a graph whose φ lies in (0, 1],
// or an error; never a panic.
func FuzzParseDependencyGraph(f *testing.F) {
	f.Add("master: w1 w2\nw1: master\nw2: master\n")
	f.Add("a:\n# comment\nb: a, c\n")
	f.Add("a b\n")
	f.Add("::\n")
	f.Fuzz(func(t *testing.T, text string) {
		g, err := ParseDependencyGraph(strings.NewReader(text))
		if err != nil {
			return
		}
		phi, err := g.Phi()
		if err != nil {
			t.Fatalf("parsed graph %+v has no φ: %v", g, err)
		}
		if !(phi > 0 && phi <= 1) {
			t.Errorf("φ = %g outside (0, 1] for %q", phi, text)
		}
	})
}
