package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/ckpt/ckpt/internal/inject"
	"github.com/ckpt/ckpt/internal/jobdir"
	"github.com/ckpt/ckpt/internal/jobenv"
	"github.com/ckpt/ckpt/internal/launch"
	"github.com/ckpt/ckpt/internal/policy"
	"github.com/ckpt/ckpt/internal/report"
	"github.com/ckpt/ckpt/internal/units"
)

// runSpec is a job for `ckpt run` (and the runs of `ckpt demo`).
type runSpec struct {
	ranks, nodes int
	// hosts, if set, runs each node on a host of its own and the
	// coordinator on coordHost (ckpt run --transparent --netns).
	hosts       launch.Hosts
	program     string
	args        []string
	redundancy  string // "" = the store's default
	shared      string
	flushEvery  policy.FlushEvery
	interval    policy.Policy
	durability  string
	compress    string       // auto or off ("" = off)
	cacheRoot   string       // the job's directory
	job         string       // the job's name ("": the directory's base name)
	lock        *jobdir.Lock // held while the job runs (claim)
	retries     int
	heartbeat   time.Duration
	joinTimeout time.Duration // how long an attempt's ranks may take to join (0: the coordinator's default)
	tree        bool
	// uncoordinated: the ranks checkpoint alone and log their messages;
	// a failed rank recovers alone (--strategy uncoordinated).
	uncoordinated bool
	tls           bool           // mutual TLS with a key pair of the job's (launch.Job.TLS)
	keepCache     bool           // keep the node caches after the job finished
	verbose       bool           // also report every staging flush
	inject        *inject.Config // nil: no failures injected
	output        io.Writer      // the ranks' output
	progress      io.Writer      // one line per event

	// Non-blocking flushing (paper 001): staging servers pull every
	// flushEvery-th checkpoint while the job computes.
	stagingServers  int
	stageArgs       []string // more flags for `ckpt stage` (--writers, --rate, ...)
	flushBusy       string   // skip or wait ("" = the job's default)
	sharedBandwidth float64  // bytes/s of the whole shared tier, shared by its writers (0: no cap)
	stageToken      string
	onStaging       func(*launch.Staging) // tests: told of the staging servers once they run

	stop <-chan struct{} // closed: checkpoint, then stop (a signal)

	// launcher starts each attempt's ranks (nil: launch.Local, ckpt run's
	// own).
	launcher launch.Launcher
	// spares are nodes for the ranks of failed nodes, readmitAfter the
	// launches an excluded node waits (launch.Pool); timeLimit when the
	// job halts and must end (zero: never).
	spares, readmitAfter int
	timeLimit            launch.TimeLimit
}

// launcherName is the name of the launcher the job runs under.
func (s runSpec) launcherName() string {
	if s.launcher == nil {
		return launch.LauncherLocal
	}
	return s.launcher.Name()
}

// runResult is what a job did, and why it did not finish ("" if it did).
type runResult struct {
	launch.Outcome
	Err      string
	Launcher string // local, mpirun or srun
	Strategy string // coordinated or uncoordinated
}

func (s runSpec) haltFile() string { return s.dir().File(jobdir.HaltFile) }

// launchJob is what defines the job for the launcher.
func (s runSpec) launchJob() launch.Job {
	return launch.Job{Ranks: s.ranks, Nodes: s.nodes, Program: s.program, Args: s.args,
		Redundancy: s.redundancy, Shared: s.shared, FlushEvery: s.flushEvery, Interval: s.interval,
		Durability: s.durability, Compress: s.compress, Retries: s.retries, Heartbeat: s.heartbeat, JoinTimeout: s.joinTimeout,
		Tree: s.tree, Uncoordinated: s.uncoordinated, TLS: s.tls, Inject: s.inject, StagingServers: s.stagingServers, StageArgs: s.stageArgs,
		FlushBusy: s.flushBusy, SharedBandwidth: s.sharedBandwidth, Spares: s.spares, ReadmitAfter: s.readmitAfter}
}

// config is the launcher's configuration of the job, and the coordinators
// it runs with: the job's, reporting its events as progress lines.
func (s runSpec) config() (launch.Config, *launch.Coordinators, error) {
	cfg, coords, err := s.launchJob().Config(s.cacheRoot)
	if err != nil {
		return cfg, nil, err
	}
	var mu sync.Mutex // events come from the launcher and the coordinator
	start := time.Now()
	seen := false // a checkpoint was committed or restored: a restart from scratch lost it
	cfg.HaltFile, cfg.Output, cfg.Stop, cfg.Launcher = s.haltFile(), s.output, s.stop, s.launcher
	cfg.Deadline, cfg.HaltMargin = s.timeLimit.Deadline, s.timeLimit.Margin
	cfg.Event = func(e launch.Event) {
		mu.Lock()
		defer mu.Unlock()
		line := describe(e)
		if e.Kind == "restored" && e.Source == "none" && e.Incarnation > 0 {
			if s.uncoordinated {
				line += ": a whole-job relaunch starts every rank from the beginning (uncoordinated)"
			} else {
				line += scratchWhy(seen)
			}
		}
		seen = seen || e.Kind == "checkpoint" || (e.Kind == "restored" && e.Source != "none")
		fmt.Fprintf(s.progress, "  %6.2fs  %s\n", e.At.Seconds(), line)
	}
	// Every checkpoint committed is reported as it happens, one line, so
	// that a user sees the job progress between launch and finish.
	coords.OnCommit = func(inc uint64, name string) {
		cfg.Event(launch.Event{Kind: "checkpoint", At: time.Since(start), Incarnation: inc, Checkpoint: name})
	}
	return cfg, coords, nil
}

// run runs the job to its end.
func (s runSpec) run(ctx context.Context) (runResult, error) {
	cfg, coords, err := s.config()
	if err != nil {
		if s.lock != nil {
			s.lock.Release()
		}
		return runResult{}, err
	}
	if s.hosts != nil {
		launch.OnHosts(&cfg, coords, s.hosts, coordHost)
	}
	return s.launch(ctx, cfg, coords)
}

// launch runs the job the launcher is configured for, in the job's
// directory (claimed first).
func (s runSpec) launch(ctx context.Context, cfg launch.Config, coords *launch.Coordinators) (runResult, error) {
	if err := s.claim(); err != nil {
		return runResult{}, err
	}
	redundancy := s.redundancy
	if redundancy == "" {
		redundancy = "default"
	}
	if s.stageToken == "" {
		s.stageToken = launch.NewToken()
	}
	out, err := launch.Session{Job: s.launchJob(), Lock: s.lock, Config: cfg, Coords: coords,
		Interval: s.interval.String(), Redundancy: redundancy, StartStaging: s.startStaging,
		StageToken: s.stageToken, OnStaging: s.onStaging, KeepCache: s.keepCache}.Run(ctx)
	res := runResult{Outcome: out, Launcher: s.launcherName(), Strategy: jobenv.StrategyCoordinated}
	if s.uncoordinated {
		res.Strategy = jobenv.StrategyUncoordinated
	}
	if err != nil {
		res.Err = oneLine(err.Error())
	}
	return res, err
}

// startStaging starts the job's staging servers: `ckpt stage` processes
// of this binary, with their journals under the cache root.
func (s runSpec) startStaging() (*launch.Staging, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return launch.StartStaging(s.launchJob().StagingConfig(exe, s.cacheRoot, s.stageToken, s.progress,
		func(e launch.StageEvent) {
			if e.State == "restarted" {
				fmt.Fprintf(s.progress, "  staging server %d died; started again on its address, resuming its flushes\n", e.Server)
			} else if s.verbose || e.State == "failed" {
				line := fmt.Sprintf("  staging server %d: %s %s (%s in %s)", e.Server, e.Name, e.State, units.FormatSize(float64(e.Bytes)), sec(e.Seconds))
				if e.Reason != "" {
					line += ": " + e.Reason
				}
				fmt.Fprintln(s.progress, line)
			}
		}))
}

// flushJSON is the "flush" object of ckpt run's and ckpt demo's JSON.
func flushJSON(r runResult) launch.FlushReport {
	f := r.Flush
	mode := f.Mode
	if mode == "" {
		mode = "none"
	}
	alpha := report.Float(f.Alpha())
	return launch.FlushReport{
		Mode:                mode,
		Due:                 f.Due,
		Started:             f.Started,
		Skipped:             f.Skipped,
		Durable:             f.Durable,
		Failed:              f.Failed,
		BlockingSecondsEach: report.Float(f.MeanSeconds()),
		LatencySecondsEach:  report.Float(f.MeanLatency()),
		WaitedSeconds:       report.Float(f.Waited),
		AlphaMeasured:       &alpha,
		StagingRestarts:     r.StagingRestarts,
		K:                   f.K,
		KError:              f.KError,
		LastFailure:         f.LastFailure,
	}
}

func fmtAlpha(a float64) string {
	if math.IsNaN(a) {
		return "n/a"
	}
	return fmt.Sprintf("%.3g", a)
}

func describe(e launch.Event) string {
	switch e.Kind {
	case "launch":
		if e.Incarnation == 0 {
			return "launch"
		}
		return fmt.Sprintf("relaunch %d", e.Incarnation)
	case "inject":
		if e.Node >= 0 {
			return fmt.Sprintf("inject: node %d lost with its cache (ranks %s)", e.Node, joinInts(e.Ranks))
		}
		if e.Hang {
			return fmt.Sprintf("inject: rank %s hung (stopped, not killed)", joinInts(e.Ranks))
		}
		return fmt.Sprintf("inject: rank %s killed", joinInts(e.Ranks))
	case "fail":
		return "failed: " + e.Reason + failDetail(e)
	case "restored":
		if e.Source == "none" {
			return "started from scratch"
		}
		return fmt.Sprintf("restored %s from %s", e.Checkpoint, e.Source)
	case "halt":
		switch e.Reason {
		case "":
			return "halt requested: stopping after the next checkpoint"
		case "time limit":
			return "time limit: halt requested: stopping after the next checkpoint"
		}
		return e.Reason
	case "exclude":
		return e.Change.String()
	case "readmit":
		return "re-admitted as spares: " + strings.Join(e.Nodes, ",")
	case "pin", "hold":
		return e.Reason
	case "checkpoint":
		return "checkpoint " + e.Checkpoint + " committed"
	case "finish":
		return "finished"
	case "recover":
		return fmt.Sprintf("rank %s restarted alone (%s); the other ranks go on", joinInts(e.Ranks), e.Reason)
	case "fallback":
		return "a failure relaunches the whole job: " + e.Reason
	case "reform":
		return e.Reason
	}
	return e.Kind
}

// scratchWhy says why a relaunch started from scratch, given whether a
// checkpoint had been committed or restored before it.
func scratchWhy(seen bool) string {
	if seen {
		return ": no checkpoint recoverable"
	}
	return ": no checkpoint committed yet"
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ",")
}

// runFlags are the flags `ckpt run` and `ckpt demo` share.
type runFlags struct {
	nodes               *int
	redundancy, shared  *string
	flushEvery          *string
	interval            *string
	durability          *string
	compress            *string
	cacheRoot           *string
	retries             *int
	heartbeat           *quantity
	joinTimeout         *quantity
	tree                *bool
	tls                 *bool
	keepCache           *bool
	verbose             *bool
	injectMTTI          *quantity
	injectDist, injKind *string
	seed                *uint64
	stagingServers      *int
	stageWriters        *int
	stageRate           *quantity
	flushBusy           *string
	sharedBandwidth     *quantity
	job                 *string
	spares, readmit     *int
	changed             func(name string) bool // the flag was given
}

func addRunFlags(c *cobra.Command) *runFlags {
	fs := c.Flags()
	return &runFlags{
		changed:         fs.Changed,
		nodes:           fs.Int("nodes", 0, "simulated nodes, each with its own cache directory (default: one per rank)"),
		redundancy:      fs.String("redundancy", "", "protection of cached checkpoints: single, partner, xor:S, rs:K+M (default xor over the nodes, at most 8)"),
		shared:          fs.String("shared", "", "shared tier: a directory or s3://BUCKET/PREFIX (default none)"),
		flushEvery:      fs.String("flush-every", "1", "flush every K-th checkpoint to the shared tier, or auto:MTTI: K from the multi-level Markov model, MTTI the mean time between failures the caches cannot survive"),
		interval:        fs.String("interval", "auto", "when to checkpoint: 100steps, 30s, auto (Daly's interval from the measured cost and MTTI), auto:MTTI, none"),
		durability:      fs.String("cache-durability", "", "node (sync: survives the node's crash) or process (no sync: survives the processes' crash)"),
		compress:        fs.String("compress", "off", "compress checkpoint files in the caches before redundancy: auto (each file whose first bytes shrink by half: zstd or s2, byte-shuffled for float arrays) or off"),
		cacheRoot:       fs.String("cache-root", "", "the job's directory, holding its node caches: new, empty, or a job's (default: --job's directory under the temp directory's ckpt-run)"),
		retries:         fs.Int("retries", 10, "relaunches allowed after failures"),
		heartbeat:       durationFlag(fs, "heartbeat-timeout", "a rank silent this long has failed (default 10s)"),
		joinTimeout:     durationFlag(fs, "join-timeout", joinTimeoutUsage),
		tree:            fs.Bool("tree", false, "one sub-coordinator per node, which its ranks connect to (Cao et al.'s tree)"),
		tls:             fs.Bool("tls", false, "mutual TLS on all the job's traffic (coordinator, relays, peers, staging servers): a key pair of the job's own, made at launch in its directory, readable by the job's user only (for runs across machines; the job's token is checked too)"),
		keepCache:       fs.Bool("keep-cache", false, "keep the node caches after the job finished (default: removed; a failed job's always stay)"),
		verbose:         fs.BoolP("verbose", "v", false, "also report every staging server's flush as it finishes (launches, failures, restores and checkpoints are always reported)"),
		injectMTTI:      durationFlag(fs, "inject-mtti", "inject failures with this mean time between them (job time)"),
		injectDist:      fs.String("inject-dist", "exp", "distribution of the time between injected failures: exp or weibull:SHAPE"),
		injKind:         fs.String("inject-kind", "rank", "what a failure does: rank (kills one process), node (its ranks and its cache), hang (stops one rank without killing it)"),
		seed:            fs.Uint64("seed", 1, "seed of the injected failures"),
		stagingServers:  fs.Int("staging-servers", 0, "staging servers that flush non-blocking: they pull one checkpoint in --flush-every (K) from the nodes while the job computes (needs --shared)"),
		stageWriters:    fs.Int("stage-writers", 4, "shared-tier writers of each staging server"),
		stageRate:       bandwidthFlag(fs, "stage-rate", "cap on the bytes per second each staging server pulls (bounds the interference α)"),
		flushBusy:       fs.String("flush-busy", "skip", "a non-blocking flush due while the previous one runs: skip it, or wait for the previous one"),
		sharedBandwidth: bandwidthFlag(fs, "shared-bandwidth", "cap the shared tier's bandwidth, divided among its concurrent writers (models a parallel file system the job shares)"),
		spares:          fs.Int("spares", 0, "spare nodes beyond --nodes: the ranks of a node whose failure was detected go to a spare at the relaunch, and the node is excluded (without a spare the job shrinks onto its other nodes if the redundancy sets still fit, else keeps the node)"),
		readmit:         fs.Int("readmit-after", 0, "re-admit an excluded node as a spare after this many launches without it (0: never during the run)"),
		job:             fs.String("job", "", "the job's name, its directory under the default root (default: the program's name and a hash of everything that defines the job, or Slurm's job name and the hash)"),
	}
}

// options are the flags' values, for the launcher to check.
func (f *runFlags) options(ranks int, program string, args []string) launch.Options {
	return launch.Options{Ranks: ranks, Nodes: *f.nodes, Program: program, Args: args,
		Redundancy: *f.redundancy, Shared: *f.shared, Durability: *f.durability, Compress: *f.compress,
		Interval: *f.interval, FlushEvery: *f.flushEvery, Retries: *f.retries,
		Heartbeat: f.heartbeat.v, JoinTimeout: f.joinTimeout.v, Tree: *f.tree, TLS: *f.tls,
		InjectMTTI: f.injectMTTI.v, InjectDist: *f.injectDist, InjectKind: *f.injKind, Seed: *f.seed,
		StagingServers: *f.stagingServers, StageWriters: *f.stageWriters, StageRate: f.stageRate.v,
		FlushBusy: *f.flushBusy, SharedBandwidth: f.sharedBandwidth.v,
		Spares: *f.spares, ReadmitAfter: *f.readmit,
		Given: f.changed, Have: probeResources(), CPUs: runtime.NumCPU()}
}

// spec checks the flags and builds the job; a bad flag is a usage error.
func (f *runFlags) spec(ranks int, program string, args []string) (runSpec, error) {
	j, err := f.options(ranks, program, args).Job()
	s := runSpec{ranks: j.Ranks, nodes: j.Nodes, program: j.Program, args: j.Args,
		redundancy: j.Redundancy, shared: j.Shared, flushEvery: j.FlushEvery, interval: j.Interval,
		durability: j.Durability, compress: j.Compress, retries: j.Retries, heartbeat: j.Heartbeat, joinTimeout: j.JoinTimeout,
		tree: j.Tree, tls: j.TLS, inject: j.Inject, stagingServers: j.StagingServers, stageArgs: j.StageArgs,
		flushBusy: j.FlushBusy, sharedBandwidth: j.SharedBandwidth, spares: j.Spares, readmitAfter: j.ReadmitAfter,
		keepCache: *f.keepCache, verbose: *f.verbose}
	if err != nil {
		return s, usageError{err}
	}
	if s.job, s.cacheRoot, err = runJobDir(*f.job, *f.cacheRoot, s.jobSpec()); err != nil {
		return s, err
	}
	return s, nil
}

// checkSharedLocation refuses a shared-tier location that looks like a
// mistyped object store address (a usage error).
func checkSharedLocation(loc string) error {
	if err := launch.CheckSharedLocation(loc); err != nil {
		return usageError{err}
	}
	return nil
}

// runLong is the help of 'ckpt run'.
const runLong = `Starts the job's coordinator and N rank processes of PROGRAM on this machine,
spread over M simulated nodes (each with its own cache directory). Ranks
find the coordinator, their node and their cache through the environment
(CKPT_COORD, CKPT_TOKEN, CKPT_RANK, CKPT_SIZE, CKPT_NODE, CKPT_CACHE) and
join through ckpt's rank API (ckpt.Join).

When a rank dies, or the coordinator aborts the job (a rank lost or silent
past --heartbeat-timeout), every rank is killed and the job is launched
again; its ranks restart from the newest checkpoint they can recover — from
the node caches, rebuilt from redundancy onto replacement nodes, or from
the shared tier — up to --retries times. Each restart and where it restored
from is reported as it happens.

--launcher mpirun or srun starts the ranks of every launch through one run
of Open MPI's or MPICH's mpirun (-np N --oversubscribe, --allow-run-as-root
as root, the job's variables passed by name with -x) or of Slurm's srun
(-n N --kill-on-bad-exit=1 --export=ALL,CKPT_...), with --launcher-args
added before PROGRAM (split into words as a shell does). Every rank then
gets the same environment: it takes its rank from the launcher
(OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID), its node from CKPT_NODES
(ranks fill the M nodes in blocks, as under ckpt run's own launcher) and its
cache from CKPT_CACHE_ROOT. A relaunch runs mpirun or srun again; injected
failures kill the ranks' processes by the pid each published when it joined
(on this host only). --tree needs the local launcher. Under srun each of the
--nodes is one Slurm node (srun --nodes, --ntasks-per-node), and a lost
node's Slurm node is left out of the relaunch (--exclude); tested against a
real Slurm cluster (docs/RUNTIME.md, "Launchers", "Slurm in the tests").
Outside a Slurm allocation (no SLURM_JOB_ID, no --jobid in --launcher-args),
--launcher srun first holds one for the whole job: salloc --no-shell
--no-kill --exclusive --nodes=(--nodes + --spares), with the partition,
account, QOS, reservation, constraint, time, nodelist and exclude of
--launcher-args; every launch and relaunch is then a step of it (srun
--jobid=ID), so that a relaunch does not wait in Slurm's queue for new
nodes. ckpt run cancels it
(scancel) when it ends, however it ends (finished, failed, halted, or
stopped by SIGINT or SIGTERM); only a ckpt run killed outright (SIGKILL)
leaves it for scancel.

A node lost as a whole (--inject-kind node) is left out of the next launch:
its ranks go to a spare (--spares K: nodes beyond --nodes, unused until
then), or, without one, to the other nodes if the redundancy sets still
fit there; else it is kept, with an empty cache. Each decision is a
progress line and --json's "excluded_nodes"; --readmit-after N makes an
excluded node a spare again after N launches without it.

--time-limit, or a Slurm allocation's end (SLURM_JOB_END_TIME, else
squeue), makes the job checkpoint and halt --halt-before the end (SCR's
SCR_HALT_SECONDS); ckpt run then exits with status 3: run the same command
again, in the next allocation, to resume (docs/RUNTIME.md, "Time limits").

--strategy uncoordinated checkpoints each rank alone, on its own schedule
(--interval: Nsteps and durations per rank; auto is Fialho et al. 2011's
eq. 11 from the rank's own measured costs), with no barrier and no vote;
every message a rank receives is logged by it at its protector (the next
rank on another node) before the application sees it. A rank killed while
the job runs is restarted alone, on its node, with CKPT_RECOVER_ALONE set to 1:
it reloads its own checkpoint, replays its log and rejoins while the
other ranks go on. A node lost (--inject-kind node) has its ranks
restarted alone on its replacement, from their copies and logs at their
protectors, and the ranks it protected re-protect with a checkpoint at
once; beyond tolerance (a rank lost with its protector, or every rank on
one node) the whole job is relaunched. When its checkpoint or log cannot
serve (damaged, lost) a rank exits with status 66 and the whole job is
relaunched, every rank from the beginning with fresh logs. --json reports ranks_recovered_alone,
whole_job_restarts, and log_protect_seconds and log_replay_seconds, summed
over the ranks and launches. Not with --tree, --transparent, --shared,
--staging-servers or --inject-kind hang; under --launcher mpirun or srun
every failure relaunches the whole job (a warning says so). The rank API's
collectives (Barrier, AllGather) and 'ckpt halt' are not offered under it
(docs/MESSAGE-LOGGING.md).

--transparent runs an unmodified PROGRAM (any program: no ckpt API): each
rank's process tree is checkpointed with CRIU 4.1 or newer (CKPT_CRIU, else
criu in PATH; as root) into the same caches, with the same redundancy,
interval policy and restarts; all ranks are frozen before any is dumped.
What CRIU lacks is an error before anything starts (exit status 2). The
programs' output goes to files in the job's directory and is printed when
the job ends (docs/TRANSPARENT.md). With --netns each node's ranks run in a
network namespace of its own, with its own address on a bridge (node0
10.77.0.1, node1 10.77.0.2, ...), and the TCP connections between ranks are
checkpointed and restored with them, on their nodes (CRIU 4.2 or newer,
root, nftables in the kernel; not with --spares).

--inject-mtti kills ranks (or with --inject-kind node whole nodes with their
cache) at random times, exponential or Weibull, seeded: Fialho et al.'s fault
injector. 'ckpt halt' stops the job cleanly after its next checkpoint.

With --shared every --flush-every-th checkpoint also goes to the shared
tier: copied by the ranks (blocking), or, with --staging-servers S, pulled
by S staging servers ('ckpt stage', started here) while the job computes
(non-blocking; docs/STAGING.md). --flush-every auto:MTTI lets the
multi-level Markov model choose K from the costs the job measures; a flush
due while the previous one still runs is skipped or waited for
(--flush-busy).

Every job has a name, --job NAME (default: the program's name and a hash of
everything that defines the job — program, arguments, -n, --nodes,
--redundancy, --shared — or Slurm's job name and the hash), and a directory
of that name under the default root ($TMPDIR/ckpt-run), or --cache-root
DIR. The directory is locked while the job runs: a second run of the same
job is refused, naming the PID that runs it, and a run of the same name
with another configuration is refused too. A job that failed for good, or
was halted, resumes from its checkpoints when started again; a job that
finished has what it made removed (--keep-cache keeps it), and nothing
else. 'ckpt status', 'ckpt checkpoint' and 'ckpt halt' act on a running job
by its name; 'ckpt ls' lists the jobs and, with --job, their checkpoints.

What a relaunch cannot fix ends the job at once. The flags are checked
before anything starts (--redundancy against the nodes, --shared and
--cache-root a writable directory, s3:// credentials; exit status 2). A
rank that exits with status 78 (a configuration error, such as a grid too
small for the ranks), or a program that fails before the job's first
checkpoint, or twice from the same checkpoint, is not launched again: the
error names the rank that failed first, its exit status and its last line
of output, and --json's "error" says it (null when the job finished).
Relaunches after failures wait 0.1s, doubling up to 5s, and start over
after a committed checkpoint (none after injected failures).

The first SIGINT or SIGTERM, or --signal's (USR1 for Slurm's
--signal=USR1@60), asks the job to checkpoint and stop, as 'ckpt halt'
does; its ranks are killed if it has not stopped within --halt-timeout,
or at a second signal. Every process of the job is reaped before ckpt run
exits, and it says how to resume: run the same command again. Exit status
130 after SIGINT, 143 after SIGTERM (128+N); 0 when --signal's stop
checkpointed cleanly.

  ckpt run -n 8 --nodes 4 --redundancy xor:4 -- ckpt example himeno
  ckpt run -n 8 --nodes 4 --inject-mtti 3s --inject-kind node -- ckpt example himeno
  ckpt run --launcher mpirun --launcher-args '--bind-to none' -n 4 --nodes 2 -- ckpt example himeno
  ckpt run -n 8 --nodes 4 --shared /lustre/job --staging-servers 2 --flush-every auto:1h \
      -- ckpt example himeno
  ckpt run --transparent -n 4 --nodes 4 --interval 2s -- ./stencil
  ckpt run --strategy uncoordinated -n 6 --nodes 6 --interval 10steps -- ./torus`

func newRunCmd() *cobra.Command {
	c := command("run -n N [flags] -- PROGRAM [ARGS...]", "Run a job of N ranks on simulated nodes, relaunching it from checkpoints after failures",
		runLong, "", cobra.MinimumNArgs(1))
	fs := c.Flags()
	f := &runCmdFlags{ranks: fs.IntP("ranks", "n", 0, "ranks (processes) of the job")}
	f.runFlags = addRunFlags(c)
	f.asJSON = jsonFlag(c)
	f.signal = fs.String("signal", "", "a signal that also means \"checkpoint, then stop\" (USR1, SIGUSR1 or a number; for Slurm's --signal=USR1@60), and exits 0 when the job stopped cleanly")
	f.haltTimeout = durationFlag(fs, "halt-timeout", "after a signal, how long the job may take to checkpoint and stop before its ranks are killed (default 60s)")
	f.launcher = fs.String("launcher", launch.LauncherLocal, "what starts the ranks of each launch: local (ckpt run itself), mpirun (Open MPI's or MPICH's) or srun (Slurm's)")
	f.launcherArgs = fs.String("launcher-args", "", "more arguments for mpirun or srun, split into words as a shell does (quotes, backslashes; nothing expanded), placed before PROGRAM")
	f.timeLimit = durationFlag(fs, "time-limit", "the job must be over this long after its start: it checkpoints and halts --halt-before the end, exit status 3 (default: the Slurm allocation's end, SLURM_JOB_END_TIME or squeue, if any)")
	f.haltBefore = durationFlag(fs, "halt-before", "how long before the time limit the job is asked to checkpoint and halt (default 60s, or a quarter of the time left if shorter; SCR's SCR_HALT_SECONDS)")
	f.transparent = fs.Bool("transparent", false, "PROGRAM is unmodified (any program, no ckpt API): ckpt checkpoints each rank's process tree with CRIU (docs/TRANSPARENT.md)")
	f.netns = fs.Bool("netns", false, "with --transparent: run each node's ranks in a network namespace of its own, with its own address on a bridge, and checkpoint the TCP connections between ranks with them (needs root, iproute2, nftables in the kernel and CRIU 4.2 or newer)")
	f.strategy = fs.String("strategy", jobenv.StrategyCoordinated, "how the ranks checkpoint: coordinated (all at one step; a failure relaunches the whole job) or uncoordinated (each alone, messages logged by their receiver at a protector; a failed rank recovers alone while the others go on)")
	c.RunE = f.run
	return c
}

// runCmdFlags are the flags of ckpt run: those it shares with ckpt demo
// (runFlags), -n, --json and the signal's.
type runCmdFlags struct {
	*runFlags
	ranks       *int
	asJSON      *bool
	signal      *string
	haltTimeout *quantity
	// The launcher of every attempt and its arguments.
	launcher, launcherArgs *string
	// The job's time limit and how long before it the job halts.
	timeLimit, haltBefore *quantity
	transparent           *bool // ranks are unmodified programs, checkpointed with CRIU
	netns                 *bool // with transparent: nodes on hosts of their own, TCP connections checkpointed
	strategy              *string
}

// run checks the flags (a bad one is a usage error) and runs the job.
func (f *runCmdFlags) run(c *cobra.Command, args []string) error {
	if !f.changed("ranks") {
		return usagef("-n: how many ranks? (see 'ckpt run --help')")
	}
	uncoordinated, err := strategyFlag(*f.strategy)
	if err != nil {
		return err
	}
	if *f.transparent {
		if uncoordinated {
			return usagef("--strategy %s: not with --transparent (CRIU checkpoints every rank's process together)", jobenv.StrategyUncoordinated)
		}
		return f.runTransparent(c, args)
	}
	if *f.netns {
		return usagef("--netns: only with --transparent (ckpt demo --netns runs API jobs on hosts of their own)")
	}
	spec, err := f.spec(*f.ranks, args[0], args[1:])
	if err != nil {
		return err
	}
	if uncoordinated {
		if err := spec.checkUncoordinated(); err != nil {
			return err
		}
		spec.uncoordinated = true
	}
	halt, grace, err := signalFlags(*f.signal, f.haltTimeout)
	if err != nil {
		return err
	}
	if spec.launcher, err = runLauncher(*f.launcher, *f.launcherArgs, spec.tree); err != nil {
		return err
	}
	if spec.uncoordinated && spec.launcherName() != launch.LauncherLocal {
		fmt.Fprintf(c.ErrOrStderr(), "ckpt run: warning: --strategy %s under --launcher %s: %s starts every rank in one run, so a failure relaunches the whole job (only --launcher local restarts one rank alone)\n",
			jobenv.StrategyUncoordinated, spec.launcherName(), spec.launcherName())
	}
	if spec.timeLimit, err = runTimeLimit(f.timeLimit, f.haltBefore, time.Now(), os.LookupEnv, squeueEnd); err != nil {
		return err
	}
	if err := spec.uncoordinatedTimeLimit(c.ErrOrStderr()); err != nil {
		return err
	}
	return runCommand(c, spec, halt, grace, *f.asJSON)
}

// runCommand runs the job of 'ckpt run' to its end and reports it: the
// checks before anything starts, the signals, the job's directory, the
// summary and the exit status.
func runCommand(c *cobra.Command, spec runSpec, halt os.Signal, grace time.Duration, asJSON bool) error {
	// Before anything is launched: what every rank would find out.
	if err := spec.preflight(c.Context()); err != nil {
		return err
	}
	ctx, sigs := watchSignals(c.Context(), c.ErrOrStderr(), grace, halt)
	defer sigs.stopWatching()
	spec.stop = sigs.stop
	spec.output, spec.progress = c.ErrOrStderr(), c.ErrOrStderr()
	if err := spec.claim(); err != nil {
		return err
	}
	through := ""
	if spec.launcherName() != launch.LauncherLocal {
		through = " through " + spec.launcherName()
	}
	fmt.Fprintf(spec.progress, "ckpt run: job %s: %d ranks on %d nodes%s, caches in %s (ckpt status|checkpoint|halt %s)\n",
		spec.dir().Name, spec.ranks, spec.nodes, through, spec.cacheRoot, spec.jobRef())
	res, runErr := spec.run(ctx)
	sig, killed := sigs.received()
	if sig != nil && (runErr != nil || res.Halted) {
		msg, err := signalEnd(sig, halt, killed, res, runErr, spec.cacheRoot)
		res.Err, runErr = msg, err
		if err == nil {
			fmt.Fprintf(c.ErrOrStderr(), "ckpt run: %s\n", msg)
		}
	} else if res.TimeLimit && runErr == nil {
		// main prints the message, and exits with the status.
		runErr = timeLimitEnd(spec.timeLimit, res, spec.cacheRoot)
		res.Err = runErr.Error()
	}
	mtti := 0.0
	if spec.inject != nil {
		mtti = spec.inject.MTTI.Seconds()
	}
	if err := printRun(c.OutOrStdout(), res, predict(0, 0, mtti, res).withFialho(res, spec.ranks, mtti, spec.interval), asJSON); err != nil {
		return err
	}
	return runErr
}

// printRun reports a job; pred is Daly's model's prediction for a run
// with injected failures (NaN without).
func printRun(w io.Writer, r runResult, pred prediction, asJSON bool) error {
	failures := 0
	for _, a := range r.Attempts {
		if a.Failure != "" {
			failures++
		}
	}
	if asJSON {
		return writeJSON(w, object{
			{"result", r.Result},
			{"halted", r.Halted},
			{"launcher", r.Launcher},
			{"excluded_nodes", excludedJSON(r.Excluded)},
			{"time_limit", r.TimeLimit},
			{"attempts", len(r.Attempts)},
			{"failures", failures},
			{"failures_injected", r.Injected},
			{"restarts_from_cache", r.Restarts["cache"]},
			{"restarts_from_rebuild", r.Restarts["rebuild"]},
			{"restarts_from_shared", r.Restarts["shared"]},
			{"restarts_from_scratch", r.Restarts["none"]},
			{"scratch_no_checkpoint", r.Account.ScratchNoCheckpoint},
			{"scratch_unrecoverable", r.Account.ScratchUnrecoverable},
			{"relaunches_never_restored", r.Account.NeverRestored},
			{"elapsed_seconds", num(r.Elapsed.Seconds())},
			{"checkpoint_seconds", num(r.Policy.Cost.Seconds())},
			{"restart_seconds", num(pred.restart)},
			{"model_efficiency", num(pred.modelEfficiency())},
			{"failures_expected", num(pred.applied.Expected)},
			{"model_efficiency_applied", num(pred.appliedEfficiency)},
			{"flush", flushJSON(r)},
			{"strategy", nullIfEmpty(r.Strategy)},
			{"ranks_recovered_alone", r.RanksRecoveredAlone},
			{"whole_job_restarts", r.WholeJobRestarts},
			{"log_protect_seconds", num(r.MsgLog.Protect.Seconds())},
			{"log_replay_seconds", num(r.MsgLog.Replay.Seconds())},
			{"phi", phiNum(r.Phi)},
			{"error", nullIfEmpty(r.Err)},
		})
	}
	t := newTable(w)
	t.row("result", r.Result)
	if r.Launcher != "" && r.Launcher != launch.LauncherLocal {
		t.row("launcher", r.Launcher)
	}
	t.row("attempts", fmt.Sprint(len(r.Attempts)), fmt.Sprintf("(%d failures, %d injected)", failures, r.Injected))
	t.row("restarts", fmt.Sprintf("cache %d, rebuild %d, shared %d, scratch %d",
		r.Restarts["cache"], r.Restarts["rebuild"], r.Restarts["shared"], r.Restarts["none"]))
	t.row("failures", r.Account.String())
	if r.Strategy == jobenv.StrategyUncoordinated {
		t.row("strategy", fmt.Sprintf("uncoordinated: %d ranks recovered alone, %d whole-job restarts", r.RanksRecoveredAlone, r.WholeJobRestarts))
		t.row("", fmt.Sprintf("message logging %s, log replay %s (summed over the ranks and launches)", sec(r.MsgLog.Protect.Seconds()), sec(r.MsgLog.Replay.Seconds())))
		t.row("", fialhoNote(r, pred))
	}
	if len(r.Excluded) > 0 {
		t.row("excluded", excludedText(r.Excluded))
	}
	t.row("elapsed", sec(r.Elapsed.Seconds()))
	if r.Policy.Cost > 0 {
		t.row("checkpoint cost", sec(r.Policy.Cost.Seconds()), "(measured, smoothed)")
	}
	if f := r.Flush; f.Due > 0 {
		switch f.Mode {
		case "blocking":
			t.row("flushes", fmt.Sprintf("%d blocking, %s each; %s", f.Started, sec(f.MeanSeconds()), everyNth(f.K)))
		case "nonblocking":
			t.row("flushes", fmt.Sprintf("%d due (%s), %d announced to staging servers, %d skipped (previous still running), %d durable, %d failed",
				f.Due, everyNth(f.K), f.Started, f.Skipped, f.Durable, f.Failed))
			t.row("", fmt.Sprintf("latency %s each; waited %s; α measured %s", sec(f.MeanLatency()), sec(f.Waited), fmtAlpha(f.Alpha())))
			if f.LastFailure != "" {
				t.row("", "last failure: "+f.LastFailure)
			}
		}
	}
	if f := r.Flush; f.KError != "" {
		t.row("", "--flush-every auto could not choose K: "+f.KError)
	}
	if r.StagingRestarts > 0 {
		t.row("staging", fmt.Sprintf("%d server restarts", r.StagingRestarts))
	}
	if !math.IsNaN(pred.efficiency) {
		t.row("model", fmt.Sprintf("efficiency %.1f%% expected (Daly's run time, Oldfield et al. 2007, eq. 1, at Daly's interval %s, with restart %s measured and the injector's MTTI)",
			100*pred.efficiency, sec(pred.interval), sec(pred.restart)))
	}
	return t.flush()
}
