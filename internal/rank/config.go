package rank

import (
	"fmt"
	"time"

	"github.com/ckpt/ckpt/internal/flush"
	"github.com/ckpt/ckpt/internal/jobenv"
	"github.com/ckpt/ckpt/internal/jobtls"
	"github.com/ckpt/ckpt/internal/policy"
)

// Options are the application's settings (ckpt.JobOptions and the
// identity of its Store options).
type Options struct {
	// Set holds those a launcher could also give, in the contract's form:
	// a set field overrides its variable, which is then not read (Token
	// and Incarnation come with Coord, Rank with Size, as Env.Encode
	// writes them). Set's Interval, FlushEvery and FlushPrior are not
	// options; the fields below are.
	Set jobenv.Env
	// Interval is JobOptions.Interval (policy.Parse's form); FlushEvery
	// and FlushAuto are JobOptions': either, when positive, overrides
	// jobenv.VarFlushEvery.
	Interval   string
	FlushEvery int
	FlushAuto  time.Duration
}

// Config is a rank's resolved settings.
type Config struct {
	Rank, Size  int
	Node        string // "" without an option or jobenv.VarNode: the store chooses
	Policy      policy.Policy
	Flush       flush.Config // without a clock
	Stage       []string     // staging servers: flushes are non-blocking
	StageToken  string       // "": the coordinator's token
	Coord       string       // "": a job of one rank
	Token       string
	Incarnation uint64
	Advertise   string // "": chosen from the coordinator's address
	Debug       bool   // log the staging client's steps
	// TLS names the job's TLS files (ckpt run --tls): the coordinator,
	// the peers and the staging servers are spoken to over mutual TLS.
	// None: plain TCP.
	TLS jobtls.Files
	// Strategy is jobenv.StrategyCoordinated (the default) or
	// jobenv.StrategyUncoordinated (see uncoord.go); RecoverAlone says
	// this process restarts a rank lost while the job runs, alone
	// (jobenv.VarRecoverAlone, uncoordinated only).
	Strategy     string
	RecoverAlone bool
}

// Configure resolves opts against the environment, read through lookup
// (os.LookupEnv's form). Variables an option overrides are not read, so
// a malformed value there is no error. Every error is a configuration
// error: one of the options, or a *jobenv.Error naming the variable.
func Configure(opts Options, lookup func(string) (string, bool)) (Config, error) {
	set := opts.Set
	env, err := jobenv.LookupOnly(lookup, map[string]bool{
		jobenv.VarFlushPrior:  true,
		jobenv.VarStageToken:  true,
		jobenv.VarRank:        set.Size == 0,
		jobenv.VarSize:        set.Size == 0,
		jobenv.VarNode:        set.Node == "",
		jobenv.VarInterval:    opts.Interval == "",
		jobenv.VarFlushEvery:  opts.FlushAuto <= 0 && opts.FlushEvery <= 0,
		jobenv.VarFlushBusy:   set.FlushBusy == "",
		jobenv.VarStage:       len(set.Stage) == 0,
		jobenv.VarCoord:       set.Coord == "",
		jobenv.VarToken:       set.Coord == "",
		jobenv.VarIncarnation: set.Coord == "",
		jobenv.VarAdvertise:   set.Advertise == "",
		jobenv.VarTLSCA:       set.TLS == (jobtls.Files{}),
		jobenv.VarTLSCert:     set.TLS == (jobtls.Files{}),
		jobenv.VarTLSKey:      set.TLS == (jobtls.Files{}),
		jobenv.VarStrategy:    set.Strategy == "",
	})
	if err != nil {
		return Config{}, fmt.Errorf("ckpt: %w", err)
	}
	debug, _ := lookup(jobenv.VarDebug)
	c := Config{Rank: set.Rank, Size: set.Size, Node: set.Node, Stage: set.Stage, StageToken: env.StageToken,
		Coord: set.Coord, Token: set.Token, Incarnation: set.Incarnation, Advertise: set.Advertise, Debug: debug != ""}
	if c.Size == 0 {
		c.Rank, c.Size = jobenv.Identity(env, lookup)
	}
	if c.Node == "" {
		c.Node = env.Node
	}
	if c.Coord == "" {
		c.Coord, c.Token, c.Incarnation = env.Coord, env.Token, env.Incarnation
	}
	if c.Advertise == "" {
		c.Advertise = env.Advertise
	}
	if c.TLS = set.TLS; c.TLS == (jobtls.Files{}) {
		c.TLS = env.TLS
	}
	if len(c.Stage) == 0 {
		c.Stage = env.Stage
	}
	if c.Strategy = set.Strategy; c.Strategy == "" {
		c.Strategy = env.Strategy
	}
	if c.Strategy, err = oneOf("strategy", c.Strategy, jobenv.StrategyCoordinated, jobenv.StrategyUncoordinated); err != nil {
		return Config{}, err
	}
	if v, _ := lookup(jobenv.VarRecoverAlone); v != "" && c.Strategy == jobenv.StrategyUncoordinated {
		c.RecoverAlone = true
	}

	switch {
	case opts.Interval != "":
		if c.Policy, err = policy.Parse(opts.Interval); err != nil {
			return Config{}, fmt.Errorf("ckpt: checkpoint interval: %w", err)
		}
	case env.Interval != nil:
		c.Policy = *env.Interval
	default:
		c.Policy = policy.Policy{Kind: policy.None}
	}

	f := flush.Config{Level1MTTI: c.Policy.MTTI, Prior: env.FlushPrior, Busy: set.FlushBusy}
	switch {
	case opts.FlushAuto > 0:
		f.Every = policy.FlushEvery{Auto: true, Level2MTTI: opts.FlushAuto}
	case opts.FlushEvery > 0:
		f.Every = policy.FlushEvery{K: opts.FlushEvery}
	case env.FlushEvery != nil:
		f.Every = *env.FlushEvery
	default:
		f.Every = policy.FlushEvery{K: 1}
	}
	if f.Busy == "" {
		f.Busy = env.FlushBusy
	}
	if f.Busy, err = oneOf("flush busy policy", f.Busy, flush.Skip, flush.Wait); err != nil {
		return Config{}, err
	}
	f.NonBlocking = len(c.Stage) > 0
	c.Flush = f
	return c, nil
}

// oneOf is v, one of a setting's two values, or the first (the default)
// where v is empty; what names the setting in the error for any other.
func oneOf(what, v, def, other string) (string, error) {
	switch v {
	case "":
		return def, nil
	case def, other:
		return v, nil
	}
	return "", fmt.Errorf("ckpt: %s %q: want %s or %s", what, v, def, other)
}
