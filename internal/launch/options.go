package launch

import (
	"fmt"
	"strings"
	"time"

	"github.com/ckpt/ckpt/internal/inject"
	"github.com/ckpt/ckpt/internal/jobenv"
	"github.com/ckpt/ckpt/internal/policy"
	"github.com/ckpt/ckpt/internal/redundancy"
	"github.com/ckpt/ckpt/internal/resource"
)

// Options are `ckpt run`'s settings as its flags give them (times in
// seconds, bandwidths in bytes/s); Job checks them and makes the job. Each
// error names the flag and its value.
type Options struct {
	Ranks, Nodes int // Nodes 0: one per rank
	Program      string
	Args         []string
	Redundancy   string
	Shared       string
	Durability   string
	Compress     string // --compress: auto or off
	Interval     string
	FlushEvery   string
	Retries      int
	Spares       int     // --spares
	ReadmitAfter int     // --readmit-after
	Heartbeat    float64 // --heartbeat-timeout, if given
	JoinTimeout  float64 // --join-timeout, if given
	Tree         bool
	TLS          bool    // --tls
	InjectMTTI   float64 // --inject-mtti, if given
	InjectDist   string
	InjectKind   string
	Seed         uint64
	// Staging servers and their settings.
	StagingServers  int
	StageWriters    int
	StageRate       float64 // --stage-rate, if given
	FlushBusy       string
	SharedBandwidth float64 // --shared-bandwidth, if given
	// Given reports whether the flag of that name was given (nil: none).
	Given func(flag string) bool
	// Have is what this machine has (resource.Probe) and CPUs its
	// processors: admission.
	Have resource.Have
	CPUs int
}

// Default values of Options (the flags' defaults).
const (
	DefaultHeartbeat = 10 * time.Second
	DefaultRetries   = 10
)

func (o Options) given(flag string) bool { return o.Given != nil && o.Given(flag) }

// Job checks the options and returns the job they describe. Its errors are
// the user's to fix, each naming the flag and the value; the checks run in
// the order of ckpt run's, so the first bad flag is the one reported.
func (o Options) Job() (Job, error) {
	j := Job{Ranks: o.Ranks, Nodes: o.Nodes, Program: o.Program, Args: o.Args,
		Redundancy: o.Redundancy, Shared: o.Shared, Durability: o.Durability, Compress: o.Compress,
		Retries: o.Retries, Heartbeat: DefaultHeartbeat, Tree: o.Tree, TLS: o.TLS}
	if o.Ranks < 1 {
		return j, fmt.Errorf("-n %d: need at least one rank", o.Ranks)
	}
	if j.Nodes == 0 {
		j.Nodes = o.Ranks
	}
	if j.Nodes < 1 || j.Nodes > o.Ranks {
		return j, fmt.Errorf("--nodes %d: need 1 to %d (the number of ranks)", j.Nodes, o.Ranks)
	}
	var err error
	if j.JoinTimeout, err = o.admit(j.Nodes); err != nil {
		return j, err
	}
	if j.Redundancy != "" {
		if _, err := redundancy.ParseScheme(j.Redundancy); err != nil {
			return j, fmt.Errorf("--redundancy: %v", err)
		}
	}
	if j.Durability != "" {
		if err := jobenv.CheckDurability(j.Durability); err != nil {
			return j, fmt.Errorf("--cache-durability: %v", err)
		}
	}
	if err := jobenv.CheckCompress(j.Compress); err != nil {
		return j, fmt.Errorf("--compress: %v", err)
	}
	if j.Interval, err = policy.Parse(o.Interval); err != nil {
		return j, fmt.Errorf("--interval: %v", err)
	}
	if j.FlushEvery, err = policy.ParseFlushEvery(o.FlushEvery); err != nil {
		return j, fmt.Errorf("--flush-every: %v", err)
	}
	if j.Retries < 0 {
		return j, fmt.Errorf("--retries %d: need ≥ 0", j.Retries)
	}
	if j.Spares, j.ReadmitAfter = o.Spares, o.ReadmitAfter; j.Spares < 0 {
		return j, fmt.Errorf("--spares %d: need ≥ 0", j.Spares)
	}
	if j.ReadmitAfter < 0 {
		return j, fmt.Errorf("--readmit-after %d: need ≥ 0 (0: an excluded node is not re-admitted)", j.ReadmitAfter)
	}
	if o.given("heartbeat-timeout") {
		if o.Heartbeat < 0.1 {
			return j, fmt.Errorf("--heartbeat-timeout %gs: need at least 0.1s", o.Heartbeat)
		}
		j.Heartbeat = seconds(o.Heartbeat)
	}
	if o.given("inject-mtti") {
		cfg, err := inject.ParseFlags(fmt.Sprintf("%gs", o.InjectMTTI), o.InjectDist, o.InjectKind, o.Seed)
		if err != nil {
			return j, err
		}
		j.Inject = &cfg
	} else if o.InjectDist != "exp" || o.InjectKind != "rank" {
		return j, fmt.Errorf("--inject-dist and --inject-kind need --inject-mtti")
	}
	if err := CheckSharedLocation(j.Shared); err != nil {
		return j, err
	}
	if j.Shared == "" && o.given("flush-every") {
		return j, fmt.Errorf("--flush-every %s: needs --shared, the tier flushes go to", o.FlushEvery)
	}
	if err := o.staging(&j); err != nil {
		return j, err
	}
	if o.given("shared-bandwidth") {
		if o.SharedBandwidth <= 0 {
			return j, fmt.Errorf("--shared-bandwidth %g: want a positive bandwidth such as 1GB/s", o.SharedBandwidth)
		}
		if j.Shared == "" {
			return j, fmt.Errorf("--shared-bandwidth needs --shared")
		}
		j.SharedBandwidth = o.SharedBandwidth
	}
	return j, nil
}

// staging checks the staging servers' settings.
func (o Options) staging(j *Job) error {
	j.StagingServers = o.StagingServers
	if j.StagingServers == 0 {
		for _, name := range []string{"flush-busy", "stage-writers", "stage-rate"} {
			if o.given(name) {
				return fmt.Errorf("--%s applies to non-blocking flushes: add --staging-servers S", name)
			}
		}
	}
	switch {
	case j.StagingServers < 0:
		return fmt.Errorf("--staging-servers %d: need ≥ 0", j.StagingServers)
	case j.StagingServers > 0 && j.Shared == "":
		return fmt.Errorf("--staging-servers %d: needs --shared, the tier the servers write to", j.StagingServers)
	case o.FlushBusy != jobenv.FlushSkip && o.FlushBusy != jobenv.FlushWait:
		return fmt.Errorf("--flush-busy %q: want %s or %s", o.FlushBusy, jobenv.FlushSkip, jobenv.FlushWait)
	case o.StageWriters < 1 || o.StageWriters > 1024:
		return fmt.Errorf("--stage-writers %d: want 1 to 1024", o.StageWriters)
	}
	if j.StagingServers > 0 {
		j.FlushBusy = o.FlushBusy
		j.StageArgs = []string{"--writers", fmt.Sprint(o.StageWriters)}
		if o.given("stage-rate") {
			if o.StageRate <= 0 {
				return fmt.Errorf("--stage-rate %g: want a positive bandwidth such as 200MB/s", o.StageRate)
			}
			j.StageArgs = append(j.StageArgs, "--rate", jobenv.FormatBandwidth(o.StageRate))
		}
	}
	return nil
}

// admit checks that this machine can run a job of -n ranks at all —
// processes and the launcher's file descriptors, refused up front with what
// is needed and what is there rather than forking until something breaks —
// and returns how long the ranks of an attempt may take to join.
func (o Options) admit(nodes int) (time.Duration, error) {
	need := NeedsOf(o.Ranks, nodes, o.Tree, o.StagingServers)
	if err := resource.Check(resource.Procs, need.Procs, o.Have.Procs); err != nil {
		return 0, fmt.Errorf("-n %d: the job %v", o.Ranks, err)
	}
	if err := resource.Check(resource.FDs, need.FDs, o.Have.FDs); err != nil {
		return 0, fmt.Errorf("-n %d: the launcher %v (3 per rank)", o.Ranks, err)
	}
	if o.given("join-timeout") {
		if o.JoinTimeout <= 0 {
			return 0, fmt.Errorf("--join-timeout %gs: need a positive duration", o.JoinTimeout)
		}
		return seconds(o.JoinTimeout), nil
	}
	return JoinAllowance(o.Ranks, o.CPUs), nil
}

// CheckSharedLocation refuses a shared-tier location that looks like a
// mistyped object store address (it would become a local directory).
func CheckSharedLocation(loc string) error {
	if scheme, _, ok := strings.Cut(loc, ":"); ok && strings.EqualFold(scheme, "s3") && !strings.HasPrefix(loc, "s3://") {
		return fmt.Errorf("--shared %q: an object store location is written s3://BUCKET/PREFIX", loc)
	}
	return nil
}

func seconds(v float64) time.Duration { return time.Duration(v * float64(time.Second)) }
