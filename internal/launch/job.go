package launch

import (
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/ckpt/ckpt/internal/inject"
	"github.com/ckpt/ckpt/internal/jobdir"
	"github.com/ckpt/ckpt/internal/jobenv"
	"github.com/ckpt/ckpt/internal/jobtls"
	"github.com/ckpt/ckpt/internal/placement"
	"github.com/ckpt/ckpt/internal/policy"
	"github.com/ckpt/ckpt/internal/redundancy"
)

// Job is a job as `ckpt run` runs it: what defines it for its ranks, its
// coordinators and its staging servers. Options.Job makes one from the
// values of the command's flags, checked.
type Job struct {
	Ranks, Nodes int
	Program      string
	Args         []string
	Redundancy   string // "" = the store's default
	Shared       string // the shared tier ("" = none)
	FlushEvery   policy.FlushEvery
	Interval     policy.Policy
	Durability   string // the caches' ("" = the store's default)
	Compress     string // auto or off ("" = the store's default, off)
	Retries      int
	Heartbeat    time.Duration // a rank silent this long has failed
	JoinTimeout  time.Duration // 0: the coordinator's default
	Tree         bool
	// Uncoordinated runs the job under the uncoordinated strategy
	// (jobenv.StrategyUncoordinated; Config.Uncoordinated and
	// Coordinators.Uncoordinated).
	Uncoordinated bool
	Inject        *inject.Config // nil: no failures injected
	// Spares are nodes beyond Nodes for the ranks of a failed node;
	// ReadmitAfter re-admits an excluded node after that many launches
	// without it (0: never). See Pool.
	Spares, ReadmitAfter int

	// Non-blocking flushing (paper 001): staging servers pull every
	// FlushEvery-th checkpoint while the job computes.
	StagingServers  int
	StageArgs       []string // more flags for `ckpt stage` (--writers, --rate, ...)
	FlushBusy       string   // skip or wait ("" = the job's default)
	SharedBandwidth float64  // bytes/s of the whole shared tier, shared by its writers (0: no cap)

	// TLS makes the job's traffic mutual TLS (ckpt run --tls): a key pair
	// of the job's own, made at launch in its directory (TLSDir), which
	// the coordinators, the ranks and the staging servers present.
	TLS bool
}

// TLSDir is where a job whose caches are under cacheRoot keeps its TLS
// key pair while it runs (Job.TLS).
func TLSDir(cacheRoot string) string { return filepath.Join(cacheRoot, jobdir.TLSDir) }

// Env is the job's part of every rank's environment. Every rank writes its
// own object at once in a blocking flush: each gets its share of the shared
// tier's bandwidth.
func (j Job) Env() jobenv.Env {
	iv := j.Interval
	e := jobenv.Env{Interval: &iv, Redundancy: j.Redundancy, Shared: j.Shared, CacheDurability: j.Durability, Compress: j.Compress}
	if j.FlushEvery.Auto || j.FlushEvery.K > 0 {
		fe := j.FlushEvery
		e.FlushEvery = &fe
	}
	if j.SharedBandwidth > 0 && j.Ranks > 0 {
		e.SharedBandwidth = j.SharedBandwidth / float64(j.Ranks)
	}
	if j.Uncoordinated {
		e.Strategy = jobenv.StrategyUncoordinated
	}
	return e
}

// Coordinators is the factory of the job's coordinators.
func (j Job) Coordinators() *Coordinators {
	return &Coordinators{Ranks: j.Ranks, Nodes: j.Nodes, Policy: j.Interval,
		HeartbeatTimeout: j.Heartbeat, JoinTimeout: j.JoinTimeout, Tree: j.Tree, Uncoordinated: j.Uncoordinated}
}

// Config is the launcher's configuration of the job, its caches under
// cacheRoot, and the coordinators it runs with; the caller adds what is
// its own (output, events, halt file, stop).
func (j Job) Config(cacheRoot string) (Config, *Coordinators, error) {
	coords := j.Coordinators()
	cfg := Config{Ranks: j.Ranks, Nodes: j.Nodes, Program: j.Program, Args: j.Args, Job: j.Env(),
		CacheRoot: cacheRoot, Retries: j.Retries, NewCoordinator: coords.New,
		Spares: j.Spares, ReadmitAfter: j.ReadmitAfter, Fits: j.Fits, Uncoordinated: j.Uncoordinated}
	if j.TLS {
		cfg.Job.TLS = jobtls.FilesIn(TLSDir(cacheRoot)) // made by Session.Run
	}
	if j.Inject != nil {
		sched, err := inject.NewSchedule(*j.Inject)
		if err != nil {
			return cfg, nil, err
		}
		cfg.Failures = failures{sched}
		cfg.NodeFailures = j.Inject.Kind == inject.Node
		cfg.HangFailures = j.Inject.Kind == inject.Hang
	}
	return cfg, coords, nil
}

// failures adapts inject's schedule to the launcher.
type failures struct{ s *inject.Schedule }

func (f failures) Next(live int) (time.Duration, int) {
	e := f.s.Next(live)
	return e.At, e.Target
}

// StagingConfig configures the job's staging servers: `ckpt stage`
// processes of program (this binary), each with its share of the shared
// tier's bandwidth, their journals under cacheRoot/staging.
func (j Job) StagingConfig(program, cacheRoot, token string, log io.Writer, event func(StageEvent)) StagingConfig {
	args := []string{"stage", "--shared", j.Shared}
	if j.SharedBandwidth > 0 {
		args = append(args, "--shared-bandwidth", jobenv.FormatBandwidth(j.SharedBandwidth/float64(j.StagingServers)))
	}
	args = append(args, j.StageArgs...)
	cfg := StagingConfig{Servers: j.StagingServers, Program: program, Args: args,
		Dir: filepath.Join(cacheRoot, "staging"), Token: token, Log: log, Event: event}
	if j.TLS {
		cfg.TLS = jobtls.FilesIn(TLSDir(cacheRoot))
	}
	return cfg
}

// UseStaging tells the ranks of cfg about running staging servers: their
// flushes become non-blocking.
func (j Job) UseStaging(cfg *Config, st *Staging, token string) {
	cfg.Job.Stage, cfg.Job.StageToken, cfg.Job.FlushBusy = st.Addrs(), token, j.FlushBusy
}

// Restarts counts the attempts after the first by where they restored
// from: cache, rebuild, shared, none.
func (r Report) Restarts() map[string]int {
	n := map[string]int{}
	for _, a := range r.Attempts[min(1, len(r.Attempts)):] {
		n[a.Restored]++
	}
	return n
}

// CheckRedundancy applies the store's own placement rule to the nodes the
// ranks are spread over: each set needs its members on distinct nodes. A
// scheme the nodes cannot hold would fail every launch; the error names
// --redundancy and the scheme.
func (j Job) CheckRedundancy() error {
	if j.Redundancy == "" {
		return nil // the default fits any number of nodes
	}
	sc, err := redundancy.ParseScheme(j.Redundancy)
	if err != nil {
		return fmt.Errorf("--redundancy: %v", err)
	}
	if err := formSets(NewPool(j.Ranks, NodeNames(j.Nodes), nil, nil, 0).Layout(), sc.SetSize()); err != nil {
		return fmt.Errorf("--redundancy %s: %v (use more --nodes, at most one per rank, or a smaller set)", j.Redundancy, err)
	}
	return nil
}

// Fits checks a layout of the job's ranks (rank r on layout[r]) against
// its redundancy sets, by the store's own placement rule: Config.Fits,
// which decides whether the job can shrink onto fewer nodes. The default
// scheme is taken as it is on the job's nodes, xor over them, at most 8
// (the store's default): a shrink must not weaken it.
func (j Job) Fits(layout []string) error {
	size := min(j.Nodes, 8)
	if j.Redundancy != "" {
		sc, err := redundancy.ParseScheme(j.Redundancy)
		if err != nil {
			return err
		}
		size = sc.SetSize()
	}
	return formSets(layout, size)
}

// formSets forms the redundancy sets of size of the ranks on layout.
func formSets(layout []string, size int) error {
	members := make([]placement.Member, len(layout))
	for r, n := range layout {
		members[r] = placement.Member{Rank: r, Node: n}
	}
	_, err := placement.FormSets(members, size)
	return err
}
