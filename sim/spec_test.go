package sim

import (
	"errors"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/model"
)

// oneLevel is the spec of Fialho et al. 2011, §4.1 at Daly's interval.
func oneLevel() Spec {
	return Spec{Work: Given{500 * 86400, true}, MTTI: Given{6 * 3600, true}, Cost: GivenList{[]float64{300}, true},
		Restart: GivenList{[]float64{300}, true}, Interval: Given{3300, true},
		Variant: "moody", Dist: "exp", Strategy: "coordinated", Replications: 10}
}

// Resolve turns a spec into the configuration Predict and Validate accept,
// with the rate from the MTTI and the Weibull shape from Dist.
func TestSpecResolve(t *testing.T) {
	s := oneLevel()
	s.Dist = "weibull:0.7"
	cfg, pred, err := s.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Rates[0] != 1/(6*3600.0) || cfg.Interval != 3300 || cfg.Dist.Shape != 0.7 || cfg.Strategy != Coordinated || pred.Kind != "single-level" || pred.Optimized {
		t.Errorf("cfg %+v, prediction %+v", cfg, pred)
	}
	u := oneLevel()
	u.Strategy, u.Interval, u.Phi, u.Procs, u.ProcsSet = "uncoordinated", Given{}, Given{0.5, true}, 4, true
	cfg, pred, err = u.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Strategy != Uncoordinated || len(cfg.Dependents) != 4 || !pred.Optimized || !(cfg.Interval > 0) {
		t.Errorf("uncoordinated: cfg %+v, prediction %+v", cfg, pred)
	}
}

// Each bad spec is refused with an error naming the flag; a rate given by
// --mtti is named mtti, and a bad --graph is ReadGraph's error unchanged.
func TestSpecResolveErrors(t *testing.T) {
	graphErr := errors.New("no such graph")
	for _, c := range []struct {
		name    string
		edit    func(*Spec)
		mention string
		param   bool // a *model.ParamError, not a *SpecError
	}{
		{"no work", func(s *Spec) { s.Work = Given{} }, "--work is required", false},
		{"rates and mtti", func(s *Spec) { s.Rates = GivenList{[]float64{1}, true} }, "not both or neither", false},
		{"mtti 0", func(s *Spec) { s.MTTI.V = 0 }, "--mtti: must be", false},
		{"no restart", func(s *Spec) { s.Restart = GivenList{} }, "--restart is required", false},
		{"negative cost", func(s *Spec) { s.Cost.V = []float64{-1} }, "cost", true},
		{"bad dist", func(s *Spec) { s.Dist = "gamma" }, `--dist "gamma"`, false},
		{"replications", func(s *Spec) { s.Replications = 1 }, "--replications", false},
		{"workers", func(s *Spec) { s.Workers = -1 }, "--workers", false},
		{"strategy", func(s *Spec) { s.Strategy = "optimistic" }, "--strategy", false},
		{"phi coordinated", func(s *Spec) { s.Phi = Given{0.5, true} }, "--phi: only used with --strategy uncoordinated", false},
		{"counts without levels", func(s *Spec) { s.Counts = GivenInts{[]int{1}, true}; s.Interval = Given{} }, "--counts: give --interval", false},
		{"interval 0", func(s *Spec) { s.Interval.V = 0 }, "--interval: must be", false},
		{"variant", func(s *Spec) { s.Variant = "l1-protected" }, "--variant: l1-protected is defined for two levels", false},
		{"alpha alone", func(s *Spec) { s.Alpha = Given{0.1, true} }, "--alpha: only used with --nonblocking", false},
		{"nonblocking one level", func(s *Spec) { s.NonBlocking, s.FlushLatency = true, Given{60, true} }, "--nonblocking: the non-blocking model has exactly two levels", false},
		{"too many events", func(s *Spec) { s.Work.V, s.MTTI.V = 1000*365*86400, 1 }, "--work: a replication would simulate", false},
		{"no dependencies", func(s *Spec) { s.Strategy = "uncoordinated" }, "give the dependencies once", false},
		{"phi without procs", func(s *Spec) { s.Strategy, s.Phi = "uncoordinated", Given{0.5, true} }, "--phi and --procs go together", false},
		{"bad deps", func(s *Spec) { s.Strategy, s.Deps, s.DepsSet = "uncoordinated", "a,1", true }, `--deps: element 1 ("a")`, false},
		{"deps out of range", func(s *Spec) { s.Strategy, s.Deps, s.DepsSet = "uncoordinated", "5,1", true }, "deps", true},
		{"huge procs", func(s *Spec) { s.Strategy, s.Phi, s.Procs, s.ProcsSet = "uncoordinated", Given{1, true}, 100000, true }, "more than the simulator holds", false},
		{"negative log-replay", func(s *Spec) {
			s.Strategy, s.Phi, s.Procs, s.ProcsSet, s.LogReplay = "uncoordinated", Given{0.5, true}, 4, true, Given{-1, true}
		}, "--log-replay: must be", false},
		{"mtti named", func(s *Spec) {
			s.Strategy, s.Phi, s.Procs, s.ProcsSet, s.Interval = "uncoordinated", Given{0.5, true}, 4, true, Given{}
			s.LogProtect = Given{1000 * 3600, true}
		}, "log-protect", true},
	} {
		s := oneLevel()
		s.ReadGraph = func(string) (model.DependencyGraph, error) { return model.DependencyGraph{}, graphErr }
		c.edit(&s)
		_, _, err := s.Resolve()
		var se *SpecError
		var pe *model.ParamError
		switch {
		case err == nil:
			t.Errorf("%s: accepted", c.name)
		case c.param && !errors.As(err, &pe):
			t.Errorf("%s: %v is not a *model.ParamError", c.name, err)
		case !c.param && !errors.As(err, &se):
			t.Errorf("%s: %v is not a *SpecError", c.name, err)
		case !strings.Contains(err.Error(), c.mention):
			t.Errorf("%s: %q does not mention %q", c.name, err, c.mention)
		}
	}
	s := oneLevel()
	s.Strategy, s.Graph, s.GraphSet = "uncoordinated", "g", true
	s.ReadGraph = func(string) (model.DependencyGraph, error) { return model.DependencyGraph{}, graphErr }
	if _, _, err := s.Resolve(); err != graphErr {
		t.Errorf("a graph that cannot be read: %v, want ReadGraph's error", err)
	}
}

// Explain names the rate by the flag that gave it.
func TestSpecExplainNamesTheRateFlag(t *testing.T) {
	s := oneLevel()
	for _, c := range []struct {
		mtti bool
		want string
	}{{true, "mtti"}, {false, "rates"}} {
		s.MTTI.Set = c.mtti
		var pe *model.ParamError
		if err := s.Explain(&model.ParamError{Param: "rates", Value: -1}); !errors.As(err, &pe) || pe.Param != c.want {
			t.Errorf("MTTI given %v: %v, want %s", c.mtti, err, c.want)
		}
	}
	if err := s.Explain(ErrTooLong); err != ErrTooLong {
		t.Errorf("Explain(ErrTooLong) = %v", err)
	}
}

// Agreement compares per process for Uncoordinated.
func TestAgreement(t *testing.T) {
	res := Result{Efficiency: Estimate{Mean: 0.5, CI95: 0.01}, ProcessEfficiency: Estimate{Mean: 0.8, CI95: 0.01}}
	pred := Prediction{Efficiency: 0.8}
	if off, inside := Agreement(Config{}, pred, res); inside || !(off > 0.59 && off < 0.61) {
		t.Errorf("coordinated: off %g, inside %v", off, inside)
	}
	if off, inside := Agreement(Config{Strategy: Uncoordinated}, pred, res); !inside || off != 0 {
		t.Errorf("uncoordinated: off %g, inside %v", off, inside)
	}
}
