package plan

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/examples/systems"
	"github.com/ckpt/ckpt/model"
)

// satoSystem is TSUBAME2.0 reduced to the two failure classes of
// SPEC-markov §8: λ1 = 1.757e-5 (one node, recovered by XOR) and
// λ2 = 1.3774e-6 (categories 2–5, which take the whole system down), with the
// node-local cost and restart given directly (c1 = r1 = 72.5 s), so that
// the shared tier costs c2 = r2 = 1408 × 29 GB / 8 GB/s = 5104 s and the
// background copy ℓ2 = 1408 × 29 GB / 6.4 GB/s = 6380 s.
const satoSystem = `
name: TSUBAME2.0, SPEC-markov §8
nodes: 1408
checkpoint_bytes_per_node: 29GB
node_local:
  cost: 72.5s
  restart: 72.5s
  redundancy: [xor:8]
shared:
  write_bandwidth: 8GB/s
  read_bandwidth: 8GB/s
staging:
  throughput: 6.4GB/s
  alpha: 0.00184
failures:
  - name: compute node
    nodes: 1
    rate: 1.757e-5
  - name: everything else
    nodes: 1408
    rate: 1.3774e-6
`

func mustLoad(t *testing.T, text string) System {
	t.Helper()
	s, err := Load(strings.NewReader(text))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return s
}

func builtin(t *testing.T, name string) System {
	t.Helper()
	text, ok := systems.Lookup(name)
	if !ok {
		t.Fatalf("no built-in system %q", name)
	}
	s, err := Load(bytes.NewReader(text))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return s
}

func mustPlan(t *testing.T, s System, opt Options) Report {
	t.Helper()
	rep, err := Plan(s, opt)
	if err != nil {
		t.Fatalf("Plan(%s): %v", s.Name, err)
	}
	return rep
}

// find returns the one alternative matching the predicate.
func find(t *testing.T, alts []Alternative, what string, pred func(*Alternative) bool) *Alternative {
	t.Helper()
	var found *Alternative
	for i := range alts {
		if pred(&alts[i]) {
			if found != nil {
				t.Fatalf("two alternatives are %s: %q and %q", what, found.Name, alts[i].Name)
			}
			found = &alts[i]
		}
	}
	if found == nil {
		t.Fatalf("no alternative is %s", what)
	}
	return found
}

func withinDigits(got, want float64, digits int) bool {
	return math.Abs(got-want) <= 0.5*math.Pow(10, -float64(digits))
}

// TestPlanSatoPlumbing checks the path from a system file to the model
// against SPEC-markov §8, row F = 1, C = 1.
func TestPlanSatoPlumbing(t *testing.T) {
	s := mustLoad(t, satoSystem)
	rep := mustPlan(t, s, Options{})
	if len(rep.Alternatives) != 3 {
		t.Fatalf("alternatives: %v", names(rep.Alternatives))
	}
	blocking := find(t, rep.Alternatives, "blocking xor:8", func(a *Alternative) bool {
		return a.Scheme != nil && !a.NonBlocking
	})
	nonBlocking := find(t, rep.Alternatives, "non-blocking xor:8", func(a *Alternative) bool {
		return a.Scheme != nil && a.NonBlocking
	})
	for _, a := range []*Alternative{blocking, nonBlocking} {
		if a.Err != nil {
			t.Fatalf("%s: %v", a.Name, a.Err)
		}
		if len(a.Levels) != 2 {
			t.Fatalf("%s: levels %+v", a.Name, a.Levels)
		}
		l1, l2 := a.Levels[0], a.Levels[1]
		if l1.Rate != 1.757e-5 || l2.Rate != 1.3774e-6 {
			t.Errorf("%s: λ1, λ2 = %.17g, %.17g; want 1.757e-5, 1.3774e-6 exactly", a.Name, l1.Rate, l2.Rate)
		}
		if l1.Cost != 72.5 || l1.Restart != 72.5 {
			t.Errorf("%s: c1, r1 = %g, %g; want 72.5", a.Name, l1.Cost, l1.Restart)
		}
		if !near(l2.Cost, 5104, 1e-12) || !near(l2.Restart, 5104, 1e-12) {
			t.Errorf("%s: c2, r2 = %.17g, %.17g; want 5104", a.Name, l2.Cost, l2.Restart)
		}
		if a.Scheme.String() != "xor:8" || a.Domain.Nodes != 1 || a.SharedUnused {
			t.Errorf("%s: scheme %v, domain %+v, shared unused %v", a.Name, a.Scheme, a.Domain, a.SharedUnused)
		}
	}
	if !near(nonBlocking.FlushLatency, 6380, 1e-12) || nonBlocking.Alpha != 0.00184 {
		t.Errorf("ℓ2, α = %.17g, %g; want 6380, 0.00184", nonBlocking.FlushLatency, nonBlocking.Alpha)
	}
	if got := blocking.Result.Efficiency; !withinDigits(got, 0.82731, 5) {
		t.Errorf("blocking efficiency = %.7f, want 0.82731 (SPEC-markov §8, F = C = 1)", got)
	}
	if got := nonBlocking.Result.Efficiency; !withinDigits(got, 0.92735, 5) {
		t.Errorf("non-blocking efficiency = %.7f, want 0.92735 (SPEC-markov §8, F = C = 1)", got)
	}
	// §8 prints t*, v* = 2507, 32 (blocking) and 3112, 1, m = 2 (non-blocking).
	// The argmax is only informative; check it loosely.
	if c := blocking.Result.Counts; len(c) != 1 || c[0] < 28 || c[0] > 36 {
		t.Errorf("blocking counts = %v, want about [32]", c)
	}
	if c := nonBlocking.Result.Counts; len(c) != 1 || c[0] != 1 || nonBlocking.Result.Incomplete != 2 {
		t.Errorf("non-blocking counts = %v, m = %d; want [1], 2", c, nonBlocking.Result.Incomplete)
	}
	if math.Abs(nonBlocking.Result.Interval-3112) > 5 {
		t.Errorf("non-blocking interval = %g, want about 3112", nonBlocking.Result.Interval)
	}
	// The same numbers straight from the model.
	direct, err := model.OptimizeBlocking(blocking.Model(), model.BlockingOptions{})
	if err != nil || direct.Efficiency != blocking.Result.Efficiency {
		t.Errorf("model.OptimizeBlocking = %v, %v; planner %v", direct.Efficiency, err, blocking.Result.Efficiency)
	}
	if rep.Recommended != nonBlocking {
		t.Errorf("recommended %q, want the non-blocking alternative", rep.Recommended.Name)
	}
	shared := find(t, rep.Alternatives, "shared only", func(a *Alternative) bool { return a.Scheme == nil })
	if len(shared.Levels) != 1 || !near(shared.Levels[0].Rate, 1.757e-5+1.3774e-6, 1e-12) {
		t.Errorf("shared only: %+v", shared.Levels)
	}
	checkReport(t, rep)
}

// TestPlanNodeFailuresOnly: with failures of single nodes only (the red-storm
// example), redundancy across nodes recovers from every failure: each
// node-local alternative has one level and SharedUnused, and a node-local
// alternative is recommended.
func TestPlanNodeFailuresOnly(t *testing.T) {
	s := builtin(t, "red-storm")
	rep := mustPlan(t, s, Options{})
	local := 0
	for _, a := range rep.Alternatives {
		if a.Err != nil {
			t.Errorf("%s: %v", a.Name, a.Err)
			continue
		}
		if a.Scheme == nil {
			if a.SharedUnused {
				t.Errorf("%s: shared only cannot have SharedUnused", a.Name)
			}
			continue
		}
		local++
		if !a.SharedUnused || len(a.Levels) != 1 || a.NonBlocking {
			t.Errorf("%s: SharedUnused %v, %d levels, non-blocking %v", a.Name, a.SharedUnused, len(a.Levels), a.NonBlocking)
		}
		if len(a.Result.Counts) != 0 {
			t.Errorf("%s: counts %v for one level", a.Name, a.Result.Counts)
		}
	}
	if local != len(s.NodeLocal.Schemes) {
		t.Errorf("%d node-local alternatives, want one per scheme (%d)", local, len(s.NodeLocal.Schemes))
	}
	if rep.Recommended.Scheme == nil || !rep.Recommended.SharedUnused {
		t.Errorf("recommended %q, want a node-local alternative", rep.Recommended.Name)
	}
	sharedOnly := find(t, rep.Alternatives, "shared only", func(a *Alternative) bool { return a.Scheme == nil })
	if rep.Recommended.Result.Efficiency <= sharedOnly.Result.Efficiency {
		t.Errorf("recommended %g is no better than shared only %g", rep.Recommended.Result.Efficiency, sharedOnly.Result.Efficiency)
	}
	// The shared tier is not needed, so there is no bandwidth to solve for.
	rep = mustPlan(t, s, Options{TargetEfficiency: 0.9})
	if rep.Target == nil || !math.IsNaN(rep.Target.Blocking.Bandwidth) || !math.IsNaN(rep.Target.NonBlocking.Bandwidth) {
		t.Errorf("target = %+v, want NaN bandwidths", rep.Target)
	}
}

// TestPlanBuiltins plans every example (but TSUBAME2.0, which the slower
// test below covers) and checks the invariants of a report.
func TestPlanBuiltins(t *testing.T) {
	for _, name := range []string{"bluegene-l", "jaguar", "petaflop", "red-storm"} {
		t.Run(name, func(t *testing.T) {
			rep := mustPlan(t, builtin(t, name), Options{})
			checkReport(t, rep)
		})
	}
}

func TestPlanTsubame2(t *testing.T) {
	if testing.Short() {
		t.Skip("plans 33 alternatives")
	}
	s := builtin(t, "tsubame2")
	rep := mustPlan(t, s, Options{})
	checkReport(t, rep)
	checkRecommendation(t, rep)
	if len(rep.Alternatives) != len(Alternatives(s)) {
		t.Errorf("%d alternatives planned, %d enumerated", len(rep.Alternatives), len(Alternatives(s)))
	}
	// README: the recommendation is xor:16 across racks, non-blocking, ≈ 0.9411.
	r := rep.Recommended
	if r.Scheme == nil || r.Scheme.String() != "xor:16" || r.Domain.Nodes != 32 || !r.NonBlocking {
		t.Errorf("recommended %q", r.Name)
	}
	if !withinDigits(r.Result.Efficiency, 0.9411, 4) {
		t.Errorf("recommended efficiency %.5f, README prints 0.9411", r.Result.Efficiency)
	}
	// Spreading a set over racks recovers everything but the whole-system
	// category; the shared tier takes that one.
	shared := r.Levels[len(r.Levels)-1]
	if shared.Name != "shared" || len(shared.Categories) != 1 || shared.Categories[0] != "PFS or core switch" {
		t.Errorf("shared level %+v", shared)
	}
}

// checkReport checks what every report must satisfy.
func checkReport(t *testing.T, rep Report) {
	t.Helper()
	if rep.Recommended == nil {
		t.Fatal("no recommendation")
	}
	inReport := false
	for i := range rep.Alternatives {
		if &rep.Alternatives[i] == rep.Recommended {
			inReport = true
		}
	}
	if !inReport {
		t.Error("Recommended does not point into Alternatives")
	}
	if rep.Recommended.Err != nil {
		t.Errorf("recommended alternative failed: %v", rep.Recommended.Err)
	}
	// Sorted best first, failed ones last.
	for i := 1; i < len(rep.Alternatives); i++ {
		a, b := rep.Alternatives[i-1], rep.Alternatives[i]
		if a.Err != nil && b.Err == nil {
			t.Errorf("failed %q sorted before %q", a.Name, b.Name)
		}
		if a.Err == nil && b.Err == nil && a.Result.Efficiency < b.Result.Efficiency {
			t.Errorf("not sorted: %q %g before %q %g", a.Name, a.Result.Efficiency, b.Name, b.Result.Efficiency)
		}
	}
	total := rep.System.TotalRate()
	seen := map[string]bool{}
	for _, a := range rep.Alternatives {
		if seen[a.Name] {
			t.Errorf("two alternatives named %q", a.Name)
		}
		seen[a.Name] = true
		if a.Err != nil {
			continue
		}
		if e := a.Result.Efficiency; !(e > 0 && e <= 1) {
			t.Errorf("%s: efficiency %g outside (0, 1]", a.Name, e)
		}
		if !(a.Result.Interval > 0) || math.IsInf(a.Result.Interval, 0) {
			t.Errorf("%s: interval %g", a.Name, a.Result.Interval)
		}
		if len(a.Result.Counts) != len(a.Levels)-1 {
			t.Errorf("%s: %d counts for %d levels", a.Name, len(a.Result.Counts), len(a.Levels))
		}
		// Every failure is handled by exactly one level.
		sum := 0.0
		cats := 0
		for _, l := range a.Levels {
			sum += l.Rate
			cats += len(l.Categories)
			if !(l.Cost > 0) || l.Restart < 0 {
				t.Errorf("%s: level %s cost %g restart %g", a.Name, l.Name, l.Cost, l.Restart)
			}
		}
		if !near(sum, total, 1e-12) || cats != len(rep.System.Failures) {
			t.Errorf("%s: level rates add up to %g (want %g), %d categories (want %d)", a.Name, sum, total, cats, len(rep.System.Failures))
		}
	}
}

// checkRecommendation checks the documented tie rule: the recommended
// alternative lies within tie of the best efficiency, and none of the
// alternatives within tie of the best is simpler.
func checkRecommendation(t *testing.T, rep Report) {
	t.Helper()
	best := math.Inf(-1)
	for _, a := range rep.Alternatives {
		if a.Err == nil {
			best = math.Max(best, a.Result.Efficiency)
		}
	}
	r := rep.Recommended
	if r.Result.Efficiency < best-tie {
		t.Errorf("recommended %q has efficiency %.6f, more than %g below the best %.6f", r.Name, r.Result.Efficiency, tie, best)
	}
	for i := range rep.Alternatives {
		a := &rep.Alternatives[i]
		if a.Err == nil && a.Result.Efficiency >= best-tie && simpler(a, r) {
			t.Errorf("%q (%.6f) is within %g of the best and simpler than the recommended %q (%.6f)",
				a.Name, a.Result.Efficiency, tie, r.Name, r.Result.Efficiency)
		}
	}
}

func TestRecommendTieRule(t *testing.T) {
	xor8, xor16 := Scheme{Kind: "xor", Data: 7, Parity: 1}, Scheme{Kind: "xor", Data: 15, Parity: 1}
	two := []Level{{Name: "cache"}, {Name: "shared"}}
	alt := func(name string, eff float64, nb bool, sc Scheme, domain int) Alternative {
		return Alternative{Name: name, Levels: two, Scheme: &sc, Domain: Domain{Nodes: domain}, NonBlocking: nb,
			Result: model.MultilevelResult{Efficiency: eff}}
	}
	cases := []struct {
		name string
		alts []Alternative
		want string
	}{
		{"clear winner", []Alternative{
			alt("nb", 0.95, true, xor16, 32),
			alt("b", 0.90, false, xor16, 32),
		}, "nb"},
		{"blocking is simpler within the tie", []Alternative{
			alt("nb", 0.9500, true, xor16, 32),
			alt("b", 0.9495, false, xor16, 32),
		}, "b"},
		{"smaller sets are simpler within the tie", []Alternative{
			alt("xor16", 0.9500, false, xor16, 32),
			alt("xor8", 0.9492, false, xor8, 32),
		}, "xor8"},
		{"larger domains are simpler within the tie", []Alternative{
			alt("nodes", 0.9500, false, xor8, 1),
			alt("racks", 0.9495, false, xor8, 32),
		}, "racks"},
		{"fewer levels are simpler within the tie", []Alternative{
			{Name: "three", Levels: []Level{{}, {}, {}}, Result: model.MultilevelResult{Efficiency: 0.95}},
			alt("two", 0.9499, true, xor16, 1),
		}, "two"},
		{"outside the tie the better wins", []Alternative{
			alt("nb", 0.9500, true, xor16, 32),
			alt("b", 0.9485, false, xor16, 32),
		}, "nb"},
		{"failed alternatives are skipped", []Alternative{
			{Name: "failed", Levels: []Level{{}}, Err: errors.New("boom"), Result: model.MultilevelResult{Efficiency: 0.99}},
			alt("ok", 0.5, true, xor16, 32),
		}, "ok"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := recommend(c.alts)
			if got == nil || got.Name != c.want {
				t.Errorf("recommend = %v, want %s", got, c.want)
			}
		})
	}
	if got := recommend([]Alternative{{Name: "x", Err: errors.New("boom")}}); got != nil {
		t.Errorf("recommend of failed alternatives = %q, want nil", got.Name)
	}
}

// TestRecommendStaysWithinTieOfBest: the simplest alternative is chosen
// among those within tie of the best, not by a chain of pairwise ties that
// could drift further below it (red-storm: xor:16 0.99144, xor:8 0.99114,
// xor:4 0.99043 — xor:4 is 1.01e-3 below the best and must not win).
func TestRecommendStaysWithinTieOfBest(t *testing.T) {
	xor4, xor8, xor16 := Scheme{Kind: "xor", Data: 3, Parity: 1}, Scheme{Kind: "xor", Data: 7, Parity: 1}, Scheme{Kind: "xor", Data: 15, Parity: 1}
	one := []Level{{Name: "cache"}}
	alts := []Alternative{
		{Name: "xor:16", Levels: one, Scheme: &xor16, Domain: Domain{Nodes: 1}, Result: model.MultilevelResult{Efficiency: 0.9500}},
		{Name: "xor:8", Levels: one, Scheme: &xor8, Domain: Domain{Nodes: 1}, Result: model.MultilevelResult{Efficiency: 0.9493}},
		{Name: "xor:4", Levels: one, Scheme: &xor4, Domain: Domain{Nodes: 1}, Result: model.MultilevelResult{Efficiency: 0.9486}},
	}
	if got := recommend(alts); got.Name != "xor:8" {
		t.Errorf("recommend = %s (0.9486, 1.4e-3 below the best 0.9500), want xor:8, the simplest within %g of the best", got.Name, tie)
	}
	for _, name := range []string{"red-storm", "petaflop"} {
		t.Run(name, func(t *testing.T) {
			checkRecommendation(t, mustPlan(t, builtin(t, name), Options{}))
		})
	}
}

func TestRecommendationRuleOnPlans(t *testing.T) {
	for _, name := range []string{"bluegene-l", "jaguar"} {
		t.Run(name, func(t *testing.T) {
			checkRecommendation(t, mustPlan(t, builtin(t, name), Options{}))
		})
	}
	t.Run("sato", func(t *testing.T) {
		checkRecommendation(t, mustPlan(t, mustLoad(t, satoSystem), Options{}))
	})
}

const rackSystem = `
name: 256 nodes in racks of 32
nodes: 256
checkpoint_bytes_per_node: 4GB
node_local:
  write_bandwidth: 1GB/s
  read_bandwidth: 1GB/s
  redundancy: [partner, xor:8, xor:16, single]
shared:
  write_bandwidth: 10GB/s
failures:
  - name: node
    nodes: 1
    rate: 1e-5
  - name: rack
    nodes: 32
    rate: 1e-6
  - name: machine room
    nodes: 256
    rate: 1e-7
`

// TestAlternativesDomains: redundancy sets are spread over failure domains,
// and a set larger than the number of domains is not offered: xor:16 over
// 32-node racks of a 256-node system has only 8 racks.
func TestAlternativesDomains(t *testing.T) {
	s := mustLoad(t, rackSystem)
	alts := Alternatives(s)
	got := map[string]*Alternative{}
	for i := range alts {
		a := &alts[i]
		key := "shared"
		if a.Scheme != nil {
			key = fmt.Sprintf("%s/%d", a.Scheme, a.Domain.Nodes)
		}
		if got[key] != nil {
			t.Errorf("two alternatives for %s: %q, %q", key, got[key].Name, a.Name)
		}
		got[key] = a
		if a.NonBlocking {
			t.Errorf("%s: non-blocking without staging servers", a.Name)
		}
	}
	// single recovers only process failures, of which this system has none,
	// so it is not offered.
	want := []string{"shared", "partner/1", "partner/32", "xor:8/1", "xor:8/32", "xor:16/1"}
	for _, k := range want {
		if got[k] == nil {
			t.Errorf("missing alternative %s (have %v)", k, names(alts))
		}
	}
	if len(got) != len(want) {
		t.Errorf("alternatives %v, want exactly %v", names(alts), want)
	}
	if a := got["xor:16/32"]; a != nil {
		t.Errorf("offered %q: xor:16 needs 16 racks, the system has 8", a.Name)
	}
	// xor:8 over racks: each rack holds one member of a set, so losing a
	// rack is recovered locally; over nodes a rack loss needs the shared tier.
	if a := got["xor:8/32"]; a != nil {
		if a.Domain.Count != 8 || a.Domain.Name != "rack" {
			t.Errorf("domain %+v", a.Domain)
		}
		if !near(a.Levels[0].Rate, 1.1e-5, 1e-12) || !near(a.Levels[1].Rate, 1e-7, 1e-12) {
			t.Errorf("%s: rates %g, %g", a.Name, a.Levels[0].Rate, a.Levels[1].Rate)
		}
		// xor:8 stores 8/7 of the data: 4 GB × 8/7 at 1 GB/s.
		if !near(a.Levels[0].Cost, 4*8.0/7, 1e-12) || !near(a.Levels[1].Cost, 256*4e9/10e9, 1e-12) {
			t.Errorf("%s: costs %g, %g", a.Name, a.Levels[0].Cost, a.Levels[1].Cost)
		}
	}
	if a := got["xor:8/1"]; a != nil {
		if !near(a.Levels[0].Rate, 1e-5, 1e-12) || !near(a.Levels[1].Rate, 1.1e-6, 1e-12) {
			t.Errorf("%s: rates %g, %g", a.Name, a.Levels[0].Rate, a.Levels[1].Rate)
		}
	}
	d := domains(s)
	if len(d) != 2 || d[0] != (Domain{Nodes: 1, Count: 256, Name: "node"}) || d[1] != (Domain{Nodes: 32, Count: 8, Name: "rack"}) {
		t.Errorf("domains = %+v", d)
	}
}

// TestAlternativesSingleAndProcessFailures: the unprotected "single"
// cache recovers only failures that leave the node intact.
func TestAlternativesSingleAndProcessFailures(t *testing.T) {
	s := mustLoad(t, strings.Replace(rackSystem, "redundancy: [partner, xor:8, xor:16, single]", "redundancy: [single]", 1))
	for _, a := range Alternatives(s) {
		if a.Scheme != nil {
			t.Errorf("offered %q although no failure leaves the node's cache intact", a.Name)
		}
	}
	// With process failures, single is useful, and each protected scheme
	// also gets a three-level variant below it.
	withProc := strings.Replace(rackSystem, "failures:\n", "failures:\n  - name: process\n    nodes: 0\n    rate: 1e-4\n", 1)
	s = mustLoad(t, withProc)
	alts := Alternatives(s)
	three := 0
	for _, a := range alts {
		if a.Scheme != nil && a.Scheme.Kind == "single" {
			if len(a.Levels) != 2 || !near(a.Levels[0].Rate, 1e-4, 1e-12) {
				t.Errorf("%s: levels %+v", a.Name, a.Levels)
			}
		}
		if len(a.Levels) == 3 {
			three++
			if a.Levels[0].Name != "cache single" || !near(a.Levels[0].Rate, 1e-4, 1e-12) || a.Levels[0].Cost != 4 {
				t.Errorf("%s: first level %+v", a.Name, a.Levels[0])
			}
			sum := a.Levels[0].Rate + a.Levels[1].Rate + a.Levels[2].Rate
			if !near(sum, s.TotalRate(), 1e-12) {
				t.Errorf("%s: rates add up to %g, want %g", a.Name, sum, s.TotalRate())
			}
		}
	}
	// partner/1, partner/32, xor:8/1, xor:8/32, xor:16/1.
	if three != 5 {
		t.Errorf("%d three-level alternatives, want 5: %v", three, names(alts))
	}
	// Planning three levels is slow (nested count scans); plan a small one.
	small := mustLoad(t, `
nodes: 64
checkpoint_bytes_per_node: 4GB
node_local: {write_bandwidth: 1GB/s, read_bandwidth: 1GB/s, redundancy: [xor:8]}
shared: {write_bandwidth: 10GB/s}
failures:
  - {name: process, nodes: 0, rate: 1e-4}
  - {name: node, nodes: 1, rate: 1e-5}
  - {name: machine room, nodes: 64, rate: 1e-5}
`)
	rep := mustPlan(t, small, Options{})
	checkReport(t, rep)
	if len(rep.Alternatives) != 3 {
		t.Errorf("alternatives %v, want shared only, xor:8 and single + xor:8", names(rep.Alternatives))
	}
	for _, a := range rep.Alternatives {
		if len(a.Levels) == 3 && len(a.Result.Counts) != 2 {
			t.Errorf("%s: counts %v", a.Name, a.Result.Counts)
		}
	}
}

// TestPlanTarget: the bandwidth the target answer returns reaches the target
// efficiency when it is the shared tier's bandwidth, and 0.9 × it does not.
func TestPlanTarget(t *testing.T) {
	const eff = 0.9
	s := mustLoad(t, satoSystem)
	rep := mustPlan(t, s, Options{TargetEfficiency: eff})
	tg := rep.Target
	if tg == nil {
		t.Fatal("no target answer")
	}
	if tg.Efficiency != eff || tg.Alpha != 0.00184 || tg.Scheme == nil || tg.Scheme.String() != "xor:8" {
		t.Errorf("target = %+v", tg)
	}
	if !(tg.Blocking.Bandwidth > 0) || !(tg.NonBlocking.Bandwidth > 0) {
		t.Fatalf("bandwidths %g, %g", tg.Blocking.Bandwidth, tg.NonBlocking.Bandwidth)
	}
	if tg.NonBlocking.Bandwidth > tg.Blocking.Bandwidth {
		t.Errorf("non-blocking needs %g B/s, more than blocking %g B/s", tg.NonBlocking.Bandwidth, tg.Blocking.Bandwidth)
	}
	// At 8 GB/s blocking reaches 0.827 and non-blocking 0.927.
	if !(tg.Blocking.Bandwidth > 8e9) || !(tg.NonBlocking.Bandwidth < 8e9) {
		t.Errorf("blocking %g B/s should exceed and non-blocking %g B/s fall short of 8 GB/s", tg.Blocking.Bandwidth, tg.NonBlocking.Bandwidth)
	}

	// Re-plan with the shared tier at the returned bandwidth.
	blockingAt := func(bw float64) float64 {
		t.Helper()
		s2 := s
		s2.Shared = Shared{WriteBW: bw, ReadBW: bw}
		r := mustPlan(t, s2, Options{Workers: 1})
		a := find(t, r.Alternatives, "blocking xor:8", func(a *Alternative) bool { return a.Scheme != nil && !a.NonBlocking })
		return a.Result.Efficiency
	}
	if got := blockingAt(tg.Blocking.Bandwidth); got < eff-1e-9 || got > eff+1e-3 {
		t.Errorf("blocking efficiency at %g B/s = %.6f, want %g within 1e-3", tg.Blocking.Bandwidth, got, eff)
	}
	if got := blockingAt(0.9 * tg.Blocking.Bandwidth); got >= eff {
		t.Errorf("blocking efficiency at 0.9 × %g B/s = %.6f, reaches %g: the bandwidth is not the smallest", tg.Blocking.Bandwidth, got, eff)
	}
	// Non-blocking: staging saturating the shared tier (the copy runs at the
	// shared bandwidth), restarts read the shared tier at the same bandwidth.
	nonBlockingAt := func(bw float64) float64 {
		t.Helper()
		s2 := s
		s2.Shared = Shared{WriteBW: bw, ReadBW: bw}
		s2.Staging = &Staging{Throughput: 1e15, Alpha: s.Staging.Alpha}
		r := mustPlan(t, s2, Options{Workers: 1})
		a := find(t, r.Alternatives, "non-blocking xor:8", func(a *Alternative) bool { return a.Scheme != nil && a.NonBlocking })
		return a.Result.Efficiency
	}
	if got := nonBlockingAt(tg.NonBlocking.Bandwidth); got < eff-1e-9 || got > eff+1e-3 {
		t.Errorf("non-blocking efficiency at %g B/s = %.6f, want %g within 1e-3", tg.NonBlocking.Bandwidth, got, eff)
	}
	if got := nonBlockingAt(0.9 * tg.NonBlocking.Bandwidth); got >= eff {
		t.Errorf("non-blocking efficiency at 0.9 × %g B/s = %.6f, reaches %g", tg.NonBlocking.Bandwidth, got, eff)
	}
}

// TestPlanTargetUnreachable: the node-local level alone keeps efficiency
// below 0.999, so no shared bandwidth reaches it.
func TestPlanTargetUnreachable(t *testing.T) {
	rep := mustPlan(t, mustLoad(t, satoSystem), Options{TargetEfficiency: 0.999})
	if rep.Target == nil || !math.IsNaN(rep.Target.Blocking.Bandwidth) || !math.IsNaN(rep.Target.NonBlocking.Bandwidth) {
		t.Errorf("target = %+v, want NaN bandwidths", rep.Target)
	}
}

func TestPlanBadTarget(t *testing.T) {
	s := builtin(t, "red-storm")
	for _, eff := range []float64{1, 1.5, -0.5, math.NaN(), math.Inf(1)} {
		_, err := Plan(s, Options{TargetEfficiency: eff, Workers: 1})
		var pe *model.ParamError
		if !errors.As(err, &pe) || pe.Param != "target-efficiency" {
			t.Errorf("target %g: error %v, want a ParamError naming target-efficiency", eff, err)
		}
	}
}

// TestPlanWorkersAgree runs the same plan serially and concurrently (the
// race detector watches the concurrent one) and expects the same report.
func TestPlanWorkersAgree(t *testing.T) {
	s := mustLoad(t, rackSystem)
	serial := mustPlan(t, s, Options{Workers: 1})
	for _, w := range []int{2, 7, 64} {
		par := mustPlan(t, s, Options{Workers: w})
		if len(par.Alternatives) != len(serial.Alternatives) {
			t.Fatalf("workers %d: %d alternatives, serial %d", w, len(par.Alternatives), len(serial.Alternatives))
		}
		for i := range par.Alternatives {
			a, b := par.Alternatives[i], serial.Alternatives[i]
			if a.Name != b.Name || a.Result.Efficiency != b.Result.Efficiency || a.Result.Interval != b.Result.Interval {
				t.Errorf("workers %d: #%d %q %g, serial %q %g", w, i, a.Name, a.Result.Efficiency, b.Name, b.Result.Efficiency)
			}
		}
		if par.Recommended.Name != serial.Recommended.Name {
			t.Errorf("workers %d recommend %q, serial %q", w, par.Recommended.Name, serial.Recommended.Name)
		}
	}
}

func TestParallelRunsEveryIndexOnce(t *testing.T) {
	for _, c := range []struct{ n, workers int }{{0, 4}, {1, 4}, {5, 1}, {100, 3}, {7, 100}} {
		counts := make([]int, c.n)
		parallel(c.n, c.workers, func(i int) { counts[i]++ })
		for i, k := range counts {
			if k != 1 {
				t.Errorf("n %d workers %d: f(%d) ran %d times", c.n, c.workers, i, k)
			}
		}
	}
}

func names(alts []Alternative) []string {
	var out []string
	for _, a := range alts {
		out = append(out, a.Name)
	}
	return out
}
