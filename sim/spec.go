package sim

import (
	"errors"
	"fmt"
	"math"

	"github.com/ckpt/ckpt/internal/inject"
	"github.com/ckpt/ckpt/model"
)

// Given is a quantity a front end may have been given: Set tells whether
// it was, V is its value in SI units.
type Given struct {
	V   float64
	Set bool
}

// GivenList is a list of quantities a front end may have been given.
type GivenList struct {
	V   []float64
	Set bool
}

// GivenInts is a list of whole numbers a front end may have been given.
type GivenInts struct {
	V   []int
	Set bool
}

// Spec is a simulation as `ckpt simulate` describes it: each field is one
// of its flags, named alike (Work is --work, LogProtect --log-protect), with
// whether it was given. Resolve checks it and turns it into a Config; its
// errors name the flags, so a front end prints them as they are.
type Spec struct {
	Work, MTTI, Interval, FlushLatency, Alpha, Detect, Phi Given
	LogProtect, LogReplay                                  Given
	Rates, Cost, Restart                                   GivenList
	Counts                                                 GivenInts
	// Variant is moody or l1-protected; Dist exp or weibull:SHAPE;
	// Strategy coordinated or uncoordinated.
	Variant, Dist, Strategy string
	NonBlocking             bool
	Procs                   int
	ProcsSet                bool
	// Deps is --deps, P(n) of each process, comma-separated; Graph the
	// path of the --graph file, which ReadGraph reads (its errors are
	// returned as they are). DepsSet and GraphSet tell that the flags were
	// given, even empty.
	Deps, Graph       string
	DepsSet, GraphSet bool
	ReadGraph         func(path string) (model.DependencyGraph, error)
	Replications      int
	Workers           int
}

// SpecError is a Spec's flags that do not describe a simulation: a flag
// missing, out of range, or not used with the others. Its message names
// the flag as the command line spells it.
type SpecError struct{ Msg string }

func (e *SpecError) Error() string { return e.Msg }

func specErrorf(format string, args ...any) error {
	return &SpecError{fmt.Sprintf(format, args...)}
}

// maxDependencies bounds φ·N², the dependency entries of --phi/--procs
// (about 8 bytes each).
const maxDependencies = 64 << 20

// Resolve checks the spec and returns the simulation it describes, with
// its schedule (the model's optimum when it gives no interval) and what
// the model predicts (Predict). Errors are a *SpecError, a
// *model.ParamError naming the flag (see Explain), model.ErrNoOptimum,
// model.ErrInfeasible, or ReadGraph's.
func (s Spec) Resolve() (Config, Prediction, error) {
	cfg, logProtect, err := s.config()
	if err != nil {
		return cfg, Prediction{}, err
	}
	cfg, pred, err := Predict(cfg, logProtect)
	var ie *IntervalError
	switch {
	case errors.As(err, &ie):
		return cfg, pred, specErrorf("no --interval given and %v", ie.Err)
	case err != nil && cfg.Strategy == Uncoordinated:
		return cfg, pred, s.Explain(err)
	case err != nil:
		return cfg, pred, err
	}
	if err := cfg.Validate(); err != nil {
		return cfg, pred, s.Explain(err)
	}
	if ev := EstimatedEvents(cfg, pred.Efficiency); ev > 1e9 {
		return cfg, pred, specErrorf("--work: a replication would simulate about %.2g events (the model's efficiency for this schedule is %.3g: failures come about as fast as the job progresses); shorten --work or change the schedule", ev, pred.Efficiency)
	}
	return cfg, pred, nil
}

// Explain renames the quantity of a *model.ParamError from Config's names
// to the spec's flags: rates to mtti when MTTI gave the rate, log-overhead
// (κ) to log-protect. Other errors are returned as they are.
func (s Spec) Explain(err error) error {
	var pe *model.ParamError
	if errors.As(err, &pe) {
		switch pe.Param {
		case "rates":
			if s.MTTI.Set {
				pe.Param = "mtti"
			}
		case "log-overhead":
			pe.Param = "log-protect"
		}
		return pe
	}
	return err
}

// config checks the flags every strategy shares, then the strategy's, and
// returns the configuration before Predict, with Δ_lp (Uncoordinated).
func (s Spec) config() (Config, float64, error) {
	if !s.Work.Set {
		return Config{}, 0, specErrorf("--work is required")
	}
	if s.Rates.Set == s.MTTI.Set {
		return Config{}, 0, specErrorf("give --rates (one entry per level) or --mtti (one level), not both or neither")
	}
	rates := s.Rates.V
	if s.MTTI.Set {
		if !(s.MTTI.V > 0) || math.IsInf(s.MTTI.V, 0) {
			return Config{}, 0, specErrorf("--mtti: must be a finite number > 0 (got %g)", s.MTTI.V)
		}
		rates = []float64{1 / s.MTTI.V}
	}
	for _, l := range []struct {
		name string
		set  bool
	}{{"cost", s.Cost.Set}, {"restart", s.Restart.Set}} {
		if !l.set {
			return Config{}, 0, specErrorf("--%s is required (one entry per level)", l.name)
		}
	}
	cfg := Config{Work: s.Work.V, Levels: model.Levels{Rates: rates, Cost: s.Cost.V, Restart: s.Restart.V}, Detect: s.Detect.V}
	if err := cfg.Levels.Validate(); err != nil {
		return cfg, 0, s.Explain(err)
	}
	if err := nonNegative(s.Detect, "detect"); err != nil {
		return cfg, 0, err
	}
	d, err := inject.ParseDist(s.Dist)
	if err != nil {
		var fe *inject.FlagError
		if errors.As(err, &fe) {
			return cfg, 0, specErrorf("--dist %q: %s", s.Dist, fe.Reason)
		}
		return cfg, 0, specErrorf("--dist: %v", err)
	}
	if d.Family == inject.Weibull {
		cfg.Dist.Shape = d.Shape
	}
	if s.Replications < 2 || s.Replications > 1e8 {
		return cfg, 0, specErrorf("--replications: between 2 and 10⁸ (got %d)", s.Replications)
	}
	if s.Workers < 0 {
		return cfg, 0, specErrorf("--workers: must be ≥ 0 (got %d)", s.Workers)
	}
	switch s.Strategy {
	case "coordinated":
		return cfg, 0, s.coordinated(&cfg)
	case "uncoordinated":
		return cfg, s.LogProtect.V, s.uncoordinated(&cfg)
	}
	return cfg, 0, specErrorf("--strategy: unknown strategy %q (use coordinated or uncoordinated)", s.Strategy)
}

// coordinated checks the flags of coordinated checkpointing, blocking or
// non-blocking, and sets cfg's strategy and schedule (none: the optimum).
func (s Spec) coordinated(cfg *Config) error {
	for _, u := range []struct {
		name string
		set  bool
	}{{"phi", s.Phi.Set}, {"procs", s.ProcsSet}, {"deps", s.DepsSet}, {"graph", s.GraphSet}, {"log-protect", s.LogProtect.Set}, {"log-replay", s.LogReplay.Set}} {
		if u.set {
			return specErrorf("--%s: only used with --strategy uncoordinated", u.name)
		}
	}
	L := cfg.L()
	if s.Counts.Set && !s.Interval.Set {
		return specErrorf("--counts: give --interval too, or neither to use the model's optimum")
	}
	if s.Interval.Set && !s.Counts.Set && L > 1 {
		return specErrorf("--interval: with %d levels give --counts too (%d entries), or neither to use the model's optimum", L, L-1)
	}
	switch s.Variant {
	case "moody":
	case "l1-protected":
		if s.NonBlocking {
			return specErrorf("--variant: applies to the blocking model only")
		}
		if L != 2 {
			return specErrorf("--variant: l1-protected is defined for two levels (got %d rates)", L)
		}
		cfg.L1ProtectedFirst = true
	default:
		return specErrorf("--variant: unknown variant %q (use moody or l1-protected)", s.Variant)
	}
	if !s.NonBlocking && (s.FlushLatency.Set || s.Alpha.Set) {
		name := "flush-latency"
		if s.Alpha.Set {
			name = "alpha"
		}
		return specErrorf("--%s: only used with --nonblocking", name)
	}
	if s.Interval.Set {
		if err := s.checkInterval(); err != nil {
			return err
		}
		cfg.Schedule = model.Schedule{Interval: s.Interval.V, Counts: s.Counts.V}
		if cfg.Counts == nil {
			cfg.Counts = []int{}
		}
	}
	if s.NonBlocking {
		if L != 2 {
			return specErrorf("--nonblocking: the non-blocking model has exactly two levels (got %d rates)", L)
		}
		if !s.FlushLatency.Set {
			return specErrorf("--flush-latency is required with --nonblocking")
		}
		cfg.Strategy = NonBlocking
		cfg.FlushLatency, cfg.Alpha = s.FlushLatency.V, s.Alpha.V
	}
	return nil
}

// uncoordinated checks the flags of uncoordinated checkpointing and sets
// cfg's strategy, dependencies, log replay and interval (none: eq. 11's).
func (s Spec) uncoordinated(cfg *Config) error {
	switch {
	case s.NonBlocking:
		return specErrorf("--nonblocking: not with --strategy uncoordinated")
	case s.Counts.Set:
		return specErrorf("--counts: uncoordinated checkpointing has one level")
	case s.Variant != "moody":
		return specErrorf("--variant: applies to coordinated blocking checkpointing only")
	}
	cfg.Strategy = Uncoordinated
	if cfg.L() != 1 {
		return specErrorf("--rates: uncoordinated checkpointing has one level: give the failure rate of the whole application (got %d rates)", cfg.L())
	}
	if err := nonNegative(s.LogProtect, "log-protect"); err != nil {
		return err
	}
	if err := nonNegative(s.LogReplay, "log-replay"); err != nil {
		return err
	}
	var err error
	if cfg.Dependents, err = s.dependents(); err != nil {
		return err
	}
	if len(cfg.Dependents) > 1<<20 {
		return specErrorf("at most 2^20 processes (got %d)", len(cfg.Dependents))
	}
	if s.Interval.Set {
		if err := s.checkInterval(); err != nil {
			return err
		}
		cfg.Interval = s.Interval.V
	}
	cfg.LogReplay = s.LogReplay.V
	return nil
}

func (s Spec) checkInterval() error {
	if !(s.Interval.V > 0) {
		return specErrorf("--interval: must be a finite number > 0 (got %g)", s.Interval.V)
	}
	return nil
}

// dependents builds who waits for whom from Deps, Graph or Phi with Procs.
func (s Spec) dependents() ([][]int, error) {
	given := 0
	for _, set := range []bool{s.Phi.Set || s.ProcsSet, s.Deps != "", s.Graph != ""} {
		if set {
			given++
		}
	}
	if given != 1 {
		return nil, specErrorf("give the dependencies once: --phi F with --procs N, --deps P1,P2,…, or --graph FILE")
	}
	var p []int
	var err error
	switch {
	case s.Deps != "":
		if p, err = model.ParseDeps(s.Deps); err != nil {
			return nil, specErrorf("--deps: %v", err)
		}
	case s.Graph != "":
		g, err := s.ReadGraph(s.Graph)
		if err != nil {
			return nil, err
		}
		return DependentsFromGraph(g), nil
	default:
		phi, procs := s.Phi.V, s.Procs
		if !s.Phi.Set || !s.ProcsSet {
			return nil, specErrorf("--phi and --procs go together (or give --deps or --graph)")
		}
		if procs < 1 || procs > 1<<20 {
			return nil, specErrorf("--procs: between 1 and 2^20 (got %d)", procs)
		}
		// The dependency lists hold about φ·N² entries: bound them so a
		// large --procs fails with a message, not by exhausting memory.
		if n := phi * float64(procs) * float64(procs); n > maxDependencies {
			return nil, specErrorf("--phi %g --procs %d: about %.3g dependencies, more than the simulator holds (%g); fewer processes or a smaller φ",
				phi, procs, n, float64(maxDependencies))
		}
		if p, err = UniformP(phi, procs); err != nil {
			return nil, s.Explain(err)
		}
	}
	d, err := DependentsFromP(p)
	if err != nil {
		return nil, s.Explain(err)
	}
	return d, nil
}

// nonNegative checks a quantity that may be 0 when it is given.
func nonNegative(q Given, flag string) error {
	if q.Set && !(q.V >= 0) {
		return specErrorf("--%s: must be a finite number ≥ 0 (got %g)", flag, q.V)
	}
	return nil
}

// Agreement compares the model's efficiency with the simulated one (per
// process, for Uncoordinated): off is the model's relative error, and
// inside tells that the model lies within the simulation's 95% interval.
func Agreement(cfg Config, pred Prediction, res Result) (off float64, inside bool) {
	e := res.Efficiency
	if cfg.Strategy == Uncoordinated {
		e = res.ProcessEfficiency
	}
	return pred.Efficiency/e.Mean - 1, math.Abs(pred.Efficiency-e.Mean) <= e.CI95
}
