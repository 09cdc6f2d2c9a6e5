package rank

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/flush"
	"github.com/ckpt/ckpt/internal/jobenv"
	"github.com/ckpt/ckpt/internal/policy"
)

// environ is a lookup over fixed variables, NAME, value, NAME, value...
func environ(kv ...string) func(string) (string, bool) {
	m := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(name string) (string, bool) { v, ok := m[name]; return v, ok }
}

// The launcher's environment fills what the options leave unset.
func TestConfigureFromEnvironment(t *testing.T) {
	c, err := Configure(Options{}, environ(
		jobenv.VarCoord, "h:1", jobenv.VarToken, "tok", jobenv.VarIncarnation, "4",
		jobenv.VarRank, "2", jobenv.VarSize, "3", jobenv.VarNode, "n7",
		jobenv.VarInterval, "10steps", jobenv.VarFlushEvery, "3", jobenv.VarFlushBusy, flush.Wait,
		jobenv.VarStage, "s:1, s:2", jobenv.VarStageToken, "st", jobenv.VarAdvertise, "me",
		jobenv.VarFlushPrior, `{"mode":"blocking","k":5}`, jobenv.VarDebug, "1"))
	if err != nil {
		t.Fatal(err)
	}
	want := Config{Rank: 2, Size: 3, Node: "n7", Policy: policy.Policy{Kind: policy.Steps, Steps: 10},
		Flush: flush.Config{Every: policy.FlushEvery{K: 3}, NonBlocking: true, Busy: flush.Wait,
			Prior: flush.Stats{Mode: flush.ModeBlocking, K: 5}},
		Stage: []string{"s:1", "s:2"}, StageToken: "st", Coord: "h:1", Token: "tok", Incarnation: 4,
		Advertise: "me", Debug: true, Strategy: jobenv.StrategyCoordinated}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("configured %+v\nwant %+v", c, want)
	}
}

// Options win over the environment, and a variable an option overrides is
// not read at all: its malformed value is no error. The coordinator's
// token and incarnation come with it or not at all.
func TestConfigureOptionsOverride(t *testing.T) {
	bad := environ(jobenv.VarCoord, "env:1", jobenv.VarToken, "envtok", jobenv.VarIncarnation, "x",
		jobenv.VarRank, "x", jobenv.VarSize, "2", jobenv.VarNode, "envnode",
		jobenv.VarInterval, "sometimes", jobenv.VarFlushEvery, "0", jobenv.VarFlushBusy, "block",
		jobenv.VarStage, "nohost", jobenv.VarAdvertise, "envhost")
	opts := Options{Set: jobenv.Env{Rank: 1, Size: 2, Node: "n", FlushBusy: flush.Skip,
		Stage: []string{"a:1", "b:2"}, Coord: "opt:1", Advertise: "a"}, Interval: "5s", FlushAuto: time.Hour}
	c, err := Configure(opts, bad)
	if err != nil {
		t.Fatalf("options over a malformed environment: %v", err)
	}
	want := Config{Rank: 1, Size: 2, Node: "n", Policy: policy.Policy{Kind: policy.Time, Period: 5 * time.Second},
		Flush: flush.Config{Every: policy.FlushEvery{Auto: true, Level2MTTI: time.Hour}, NonBlocking: true, Busy: flush.Skip},
		Stage: []string{"a:1", "b:2"}, Coord: "opt:1", Advertise: "a", Strategy: jobenv.StrategyCoordinated}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("configured %+v\nwant %+v", c, want)
	}
	// FlushEvery as an option overrides the variable as FlushAuto does.
	if c, err := Configure(Options{FlushEvery: 4}, environ(jobenv.VarFlushEvery, "0")); err != nil || c.Flush.Every != (policy.FlushEvery{K: 4}) {
		t.Errorf("FlushEvery 4 over a malformed variable: %+v, %v", c.Flush.Every, err)
	}
}

// Without options or variables: a job of one rank, no policy, every
// checkpoint flushed, skip when busy.
func TestConfigureDefaults(t *testing.T) {
	c, err := Configure(Options{}, environ())
	if err != nil {
		t.Fatal(err)
	}
	want := Config{Rank: 0, Size: 1, Policy: policy.Policy{Kind: policy.None},
		Flush: flush.Config{Every: policy.FlushEvery{K: 1}, Busy: flush.Skip}, Strategy: jobenv.StrategyCoordinated}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("configured %+v\nwant %+v", c, want)
	}
}

// The identity falls back to the launchers' own variables only when
// VarRank and VarSize are unset; set but malformed, they are an error,
// never silently replaced by another launcher's (two ranks could then
// take one identity).
func TestConfigureIdentity(t *testing.T) {
	slurm := []string{"SLURM_PROCID", "3", "SLURM_NTASKS", "4"}
	c, err := Configure(Options{}, environ(slurm...))
	if err != nil || c.Rank != 3 || c.Size != 4 {
		t.Errorf("under Slurm: rank %d of %d, %v", c.Rank, c.Size, err)
	}
	c, err = Configure(Options{}, environ(append([]string{jobenv.VarRank, "1", jobenv.VarSize, "2"}, slurm...)...))
	if err != nil || c.Rank != 1 || c.Size != 2 {
		t.Errorf("the launcher's variables before Slurm's: rank %d of %d, %v", c.Rank, c.Size, err)
	}
	for _, kv := range [][]string{{jobenv.VarRank, "x", jobenv.VarSize, "4"}, {jobenv.VarRank, "1"}, {jobenv.VarRank, "4", jobenv.VarSize, "4"}} {
		_, err := Configure(Options{}, environ(append(kv, slurm...)...))
		var je *jobenv.Error
		if !errors.As(err, &je) || je.Name != kv[0] {
			t.Errorf("%v under Slurm: %v, want an error naming %s", kv, err, kv[0])
		}
	}
}

// Every malformed setting is reported naming what is wrong; the root marks
// them all configuration errors.
func TestConfigureErrors(t *testing.T) {
	for _, c := range []struct {
		opts Options
		env  []string
		name string // of the variable, "" for an option
	}{
		{Options{Interval: "sometimes"}, nil, ""},
		{Options{Set: jobenv.Env{FlushBusy: "block"}}, nil, ""},
		{Options{}, []string{jobenv.VarInterval, "sometimes"}, jobenv.VarInterval},
		{Options{}, []string{jobenv.VarFlushEvery, "0"}, jobenv.VarFlushEvery},
		{Options{}, []string{jobenv.VarFlushBusy, "block"}, jobenv.VarFlushBusy},
		{Options{}, []string{jobenv.VarFlushPrior, "{not json"}, jobenv.VarFlushPrior},
		{Options{}, []string{jobenv.VarIncarnation, "x"}, jobenv.VarIncarnation},
		{Options{}, []string{jobenv.VarStage, "nohost"}, jobenv.VarStage},
	} {
		_, err := Configure(c.opts, environ(c.env...))
		var je *jobenv.Error
		switch {
		case err == nil:
			t.Errorf("%+v %v: no error", c.opts, c.env)
		case c.name != "" && (!errors.As(err, &je) || je.Name != c.name):
			t.Errorf("%v: %v, want an error naming %s", c.env, err, c.name)
		case c.name == "" && errors.As(err, &je):
			t.Errorf("option %+v: %v blames a variable", c.opts, err)
		}
	}
}

// The strategy: coordinated by default, uncoordinated from the option or
// the environment; CKPT_RECOVER_ALONE counts only under uncoordinated.
func TestConfigureStrategy(t *testing.T) {
	for _, c := range []struct {
		opt          string
		env          []string
		want         string
		recoverAlone bool
		bad          bool
	}{
		{want: jobenv.StrategyCoordinated},
		{env: []string{jobenv.VarRecoverAlone, "1"}, want: jobenv.StrategyCoordinated},
		{env: []string{jobenv.VarStrategy, "uncoordinated"}, want: jobenv.StrategyUncoordinated},
		{env: []string{jobenv.VarStrategy, "uncoordinated", jobenv.VarRecoverAlone, "1"}, want: jobenv.StrategyUncoordinated, recoverAlone: true},
		{opt: "uncoordinated", env: []string{jobenv.VarStrategy, "nonsense"}, want: jobenv.StrategyUncoordinated},
		{opt: "coordinated", env: []string{jobenv.VarStrategy, "uncoordinated", jobenv.VarRecoverAlone, "1"}, want: jobenv.StrategyCoordinated},
		{env: []string{jobenv.VarStrategy, "nonsense"}, bad: true},
		{opt: "optimistic", bad: true},
	} {
		cfg, err := Configure(Options{Set: jobenv.Env{Strategy: c.opt}}, environ(c.env...))
		if c.bad {
			if err == nil {
				t.Errorf("%q %v: accepted", c.opt, c.env)
			}
			continue
		}
		if err != nil || cfg.Strategy != c.want || cfg.RecoverAlone != c.recoverAlone {
			t.Errorf("%q %v: strategy %q, alone %v, %v; want %q, %v", c.opt, c.env, cfg.Strategy, cfg.RecoverAlone, err, c.want, c.recoverAlone)
		}
	}
}
