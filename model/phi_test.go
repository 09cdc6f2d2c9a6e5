package model

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// 003 eq. 12, φ = Σ P(n) / N².
func TestPhi(t *testing.T) {
	cases := []struct {
		name string
		deps []int
		want float64
	}{
		// 003 §3.3: master/worker with 8 processes: P(master) = 8, P(worker) = 2:
		// (8 + 7·2)/64 = 22/64 = 0.34375, as printed.
		{"003 §3.3 master/worker", []int{8, 2, 2, 2, 2, 2, 2, 2}, 0.34375},
		{"single process", []int{1}, 1},
		{"all depend on all", []int{3, 3, 3}, 1},
		{"independent", []int{1, 1, 1, 1}, 0.25}, // 4/16: the minimum 1/N
		// 003 Table 2 rows: P = min(5, N) for every process → N·min(5,N)/N².
		{"Table 2 N=9", []int{5, 5, 5, 5, 5, 5, 5, 5, 5}, 45.0 / 81},
	}
	for _, c := range cases {
		got, err := Phi(c.deps)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		checkRel(t, c.name, got, c.want, 1e-15)
	}
	// Table 2's printed φ column, to 4 decimals.
	for _, r := range []struct {
		n       int
		printed float64
	}{{4, 1.0000}, {9, 0.5556}, {16, 0.3125}, {25, 0.2000}, {36, 0.1389}, {64, 0.0781}, {100, 0.0500}} {
		if got := math.Round(tablePhi(t, r.n)*1e4) / 1e4; got != r.printed {
			t.Errorf("Table 2 N=%d: φ = %.4f, printed %.4f", r.n, got, r.printed)
		}
	}
}

func TestPhiErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		deps []int
	}{
		{"empty", nil},
		{"empty slice", []int{}},
		{"P(n) = 0", []int{1, 0, 1}},
		{"negative P(n)", []int{-1}},
		{"P(n) > N", []int{1, 4, 1}},
	} {
		phi, err := Phi(c.deps)
		checkParamErr(t, c.name, err, "deps")
		if phi != 0 {
			t.Errorf("%s: φ = %g alongside the error", c.name, phi)
		}
	}
}

func readGraph(t *testing.T, name string) DependencyGraph {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	g, err := ParseDependencyGraph(f)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return g
}

func TestDependencyGraphMasterWorker(t *testing.T) {
	g := readGraph(t, "master-worker.graph")
	wantProcs := []string{"master", "w1", "w2", "w3", "w4", "w5", "w6", "w7"}
	if strings.Join(g.Processes, " ") != strings.Join(wantProcs, " ") {
		t.Errorf("processes %v, want %v", g.Processes, wantProcs)
	}
	wantP := []int{8, 2, 2, 2, 2, 2, 2, 2}
	gotP := g.P()
	for i := range wantP {
		if i >= len(gotP) || gotP[i] != wantP[i] {
			t.Fatalf("P = %v, want %v", gotP, wantP)
		}
	}
	phi, err := g.Phi()
	if err != nil || phi != 0.34375 {
		t.Errorf("φ = %g, %v; want 0.34375 (003 §3.3)", phi, err)
	}
}

func TestDependencyGraphTorus(t *testing.T) {
	g := readGraph(t, "torus-3x3.graph")
	if len(g.Processes) != 9 {
		t.Fatalf("%d processes, want 9", len(g.Processes))
	}
	// Check the fixture itself: each process waits for 4 distinct others.
	for _, p := range g.Processes {
		seen := map[string]bool{}
		for _, q := range g.Waits[p] {
			if q == p || seen[q] {
				t.Errorf("%s waits for %s twice or for itself", p, q)
			}
			seen[q] = true
		}
		if len(seen) != 4 {
			t.Errorf("%s waits for %d processes, want 4", p, len(seen))
		}
	}
	for i, p := range g.P() {
		if p != 5 {
			t.Errorf("P(%s) = %d, want 5", g.Processes[i], p)
		}
	}
	phi, err := g.Phi()
	if err != nil {
		t.Fatal(err)
	}
	checkRel(t, "3×3 torus φ", phi, 45.0/81, 1e-15)
}

func TestParseDependencyGraphSyntax(t *testing.T) {
	// Commas, tabs, comments, repeated lines (targets accumulate, duplicates
	// count once), a target-only process, a waiter with no targets, self-loops ignored.
	src := "# header\n\n a:\tb,c  # comment\na: b\nb: a\nd:\nc: c\n"
	g, err := ParseDependencyGraph(strings.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(g.Processes, ","); got != "a,b,c,d" {
		t.Errorf("processes %q, want a,b,c,d", got)
	}
	// Dependents: a ← b; b ← a; c ← a; d ← nobody. P = 1 + dependents.
	want := []int{2, 2, 2, 1}
	got := g.P()
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("P = %v, want %v", got, want)
		}
	}
	phi, _ := g.Phi()
	checkRel(t, "φ", phi, 7.0/16, 1e-15)

	bad := []struct{ name, src string }{
		{"no colon", "master w1 w2\n"},
		{"two names before colon", "a b: c\n"},
		{"comma in the name", "a,b: c\n"},
		{"empty name", ": a b\n"},
		{"two colons", "a: b: c\n"},
		{"empty file", ""},
		{"only comments and blanks", "# nothing\n\n   \n# more\n"},
	}
	for _, c := range bad {
		if _, err := ParseDependencyGraph(strings.NewReader(c.src)); err == nil {
			t.Errorf("%s: %q parsed without error", c.name, c.src)
		}
	}
	// The error names the line.
	_, err = ParseDependencyGraph(strings.NewReader("a: b\n# ok\nbroken line\n"))
	if err == nil || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("error %v should name line 3", err)
	}
}

// ParseDeps reads comma-separated whole numbers and names the entry that
// is not one.
func TestParseDeps(t *testing.T) {
	p, err := ParseDeps(" 3, 1,2")
	if err != nil || len(p) != 3 || p[0] != 3 || p[1] != 1 || p[2] != 2 {
		t.Fatalf("ParseDeps = %v, %v", p, err)
	}
	if _, err := ParseDeps("1,x"); err == nil || err.Error() != `element 2 ("x") is not a whole number` {
		t.Errorf("ParseDeps(1,x): %v", err)
	}
}
