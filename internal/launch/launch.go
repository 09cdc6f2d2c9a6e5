// Package launch runs a job's ranks as processes on this machine, spread
// over simulated nodes (each with its own cache directory), and keeps the
// job going through failures: when a rank dies, or the coordinator aborts
// the job, every rank of the attempt is killed and the job is launched
// again, with a new coordinator, from the best checkpoint its ranks can
// recover (the store's Restart chooses it), until it finishes or the retry
// budget is spent. That is SCR's scr_srun loop, with paper 003's fault
// injector built in: failures of ranks, or of whole nodes together with
// their cache, at random times.
//
// What starts each attempt's ranks is a Launcher (Config.Launcher): Local,
// which starts every rank itself and gives each its rank, node and cache,
// or External, one run of mpirun or srun per attempt, whose ranks derive
// those from the launcher's rank variables and jobenv.VarNodes and
// VarCacheRoot. Injected failures kill ranks through it: by process under
// Local, by the pid a rank published as it joined (jobenv.KeyProc) under
// External.
//
// Which nodes each launch runs on is a Pool's (pure): a node lost as a
// whole is left out of the next launch, its ranks going to a spare
// (Config.Spares) or, if the redundancy sets still fit (Config.Fits), to
// the other nodes; Report.Excluded lists what was left out. A deadline
// (Config.Deadline, TimeLimit) halts the job HaltMargin before it, as
// SCR's SCR_HALT_SECONDS does.
//
// What a relaunch cannot fix is not relaunched: Classify (pure) reads each
// attempt's end from the ranks' exit statuses (ExitConfig, ExitJobFailed)
// and the checkpoints committed, and Run gives up with the first real
// cause; relaunches back off (Backoff). Config.Stop asks the job to
// checkpoint and stop (a signal to the launcher); cancelling Run's context
// kills every rank's process group and reaps them.
//
// The launcher does no checkpointing itself: ranks find the coordinator and
// their node's cache through the environment (package jobenv's contract:
// Config.Job with the coordinator, token, incarnation, rank, size, node and
// cache filled in per rank), and tell the launcher what they restored, their
// result and their flushes through the coordinator's key–value service
// (jobenv.KeyRestored, KeyResult, KeyFlush). Each launch gets what the
// launches before it flushed (jobenv.VarFlushPrior), and Report.Flush sums
// them.
//
// Job is a job as `ckpt run` runs it: Options.Job checks the command's
// options (each error names the flag and its value), Job.Config makes the
// launcher's Config and the coordinators, Job.StagingConfig the staging
// servers'. The command keeps the flags, its job directory and the output.
package launch

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ckpt/ckpt/internal/jobenv"
	"github.com/ckpt/ckpt/internal/placement"
	"github.com/ckpt/ckpt/internal/uncoord"
	"github.com/ckpt/ckpt/model"
)

// Coordinator is a job's coordinator as the launcher sees it; one serves
// one attempt.
type Coordinator interface {
	// Addr is where ranks connect (host:port).
	Addr() string
	// Done is closed when the attempt ends: every rank left, or the job was
	// aborted.
	Done() <-chan struct{}
	// Err, once Done is closed, is nil if every rank left cleanly, else why
	// the job was aborted.
	Err() error
	// Value reads what a rank published under key.
	Value(key string) ([]byte, bool)
	// Halt asks the job to stop cleanly after its next checkpoint.
	Halt()
	Close() error
}

// Failures is the fault injector's schedule (package inject provides one).
type Failures interface {
	// Next returns the job time of the next failure, and the index of the
	// target it hits among live targets. Job time is the job's wall clock
	// from its first launch: attempts, their restart work and the gaps
	// between one attempt's end and the next one's start all count, as in
	// the models (the convention of package inject). A failure due while
	// no attempt runs strikes the next attempt as soon as it is launched.
	Next(live int) (at time.Duration, target int)
}

// Config describes a job.
type Config struct {
	Ranks, Nodes int
	// Program and Args are what every rank runs.
	Program string
	Args    []string
	// Job is the job's part of every rank's environment (redundancy,
	// shared tier, interval, ...); the launcher fills in each rank's
	// coordinator, token, incarnation, rank, size, node and cache, and each
	// launch's FlushPrior (what the launches before it flushed, summed).
	Job jobenv.Env
	// Env is added to every rank's environment after Job's variables:
	// the program's own.
	Env []string
	// AttemptEnv, if set, adds to the environment of each attempt what
	// the attempts before it leave to it (done, oldest first; empty for
	// the first).
	AttemptEnv func(done []Attempt) []string
	// CacheRoot holds the node caches, CacheRoot/node<i>.
	CacheRoot string
	// Retries is how many times the job is launched again after failures.
	Retries int
	// NewCoordinator starts the coordinator of one attempt.
	NewCoordinator func(incarnation uint64, token string) (Coordinator, error)
	// Failures, if set, injects failures; NodeFailures makes each kill a
	// whole node's ranks and delete its cache; HangFailures stops a rank
	// (SIGSTOP) instead of killing it, so that it neither exits nor
	// heartbeats.
	Failures     Failures
	NodeFailures bool
	HangFailures bool
	// Inject, if set, injects failures of the given targets (ranks, or
	// nodes with NodeFailures) at once whenever a set of them is received:
	// failures on demand, at a moment of the caller's choosing.
	Inject <-chan []int
	// HaltFile, if set: when it appears the job is asked to halt.
	HaltFile string
	// Stop, if set, is closed to ask the job to checkpoint and stop (a
	// signal to the launcher): every attempt from then on is asked to halt
	// as by HaltFile, and a failed attempt is not launched again. To stop
	// at once, cancel Run's context instead.
	Stop <-chan struct{}
	// AbortGrace is how long the ranks have to exit on their own after the
	// coordinator aborted the job, before they are killed (default 3s): the
	// rank that caused the abort is exiting, and its exit status says why
	// (a configuration error?), which a SIGKILL would erase.
	AbortGrace time.Duration
	// Backoff is the wait before the first relaunch, doubling for each
	// next one up to MaxBackoff, and reset by an attempt that committed a
	// checkpoint (defaults 100ms and 5s; negative: no wait). An attempt
	// ended by an injected failure is relaunched at once.
	Backoff, MaxBackoff time.Duration
	// Output receives the ranks' output, each line prefixed with its rank
	// (or, under an External launcher, with the launcher's name).
	Output io.Writer
	// Launcher starts each attempt's ranks (default Local).
	Launcher Launcher
	// Spares are nodes beyond Nodes, free for the ranks of a node whose
	// failure was detected (Pool): node<Nodes> to node<Nodes+Spares-1>.
	// Fits checks a layout of the ranks (rank r on layout[r]) against the
	// job's redundancy sets, for shrinking the job onto fewer nodes when
	// no spare is left (nil: the job never shrinks). An excluded node is re-admitted as a
	// spare after ReadmitAfter launches without it (0: never).
	Spares       int
	Fits         func(layout []string) error
	ReadmitAfter int
	// Deadline, if set, is when the job must be over (ckpt run
	// --time-limit, or the allocation's end): HaltMargin before it the job
	// is asked to checkpoint and halt, as SCR's SCR_HALT_SECONDS does, and
	// it is not launched again after that; at the deadline its ranks are
	// killed.
	Deadline   time.Time
	HaltMargin time.Duration
	// Event, if set, is told what happens as it happens.
	Event func(Event)
	// Uncoordinated: the ranks checkpoint on their own and log what they
	// receive (docs/MESSAGE-LOGGING.md), and NewCoordinator's
	// coordinators let a lost rank rejoin (coord.Config.Uncoordinated).
	// A rank whose process is killed while the attempt runs (by a signal
	// it did not raise itself: an injected failure, the OOM killer) is
	// then restarted alone, with jobenv.VarRecoverAlone set, if the
	// Launcher can (a Restarter: Local) and the coordinator still runs;
	// the others go on; so are a lost node's ranks (NodeFailures), on its
	// replacement, unless the loss is beyond what the protectors
	// tolerate (attempt.nodeLoss). Each such restart spends one of Retries. The
	// attempt falls back to today's end, and the whole job's relaunch,
	// when it cannot: a rank that exits with ExitCannotServe, any other
	// failure, the coordinator's abort, or a launcher that starts every
	// rank in one process (mpirun, srun), which is said at the launch
	// (Event "fallback"). Not with HangFailures (yet): a stopped process
	// does not end, so it would never be restarted.
	Uncoordinated bool
}

// Event is one thing that happened; Kind says which fields are set.
type Event struct {
	// "launch", "inject", "fail", "restored", "checkpoint", "finish",
	// "halt", "exclude", "readmit", "pin", "hold" (Reason: what the
	// launcher holds for the whole job, Holder); with Config.Uncoordinated,
	// "recover" (Ranks: the rank restarted alone; Reason: how its process
	// ended), "fallback" (Reason: why a failure restarts the whole job)
	// and "reform" (a node lost: Ranks re-protect; Reason says how).
	Kind        string
	Hang        bool // inject: the rank was stopped, not killed
	At          time.Duration
	Incarnation uint64
	Ranks       []int  // inject: the ranks killed
	Node        int    // inject with node failures: the node lost (else -1)
	Source      string // restored: cache, rebuild, shared or none
	Checkpoint  string // restored, checkpoint: its name
	Reason      string // fail: why the attempt ended; halt: "time limit", "" (ckpt halt, a signal) or why the job is not launched again; pin: where each node runs, or why it is not pinned
	// exclude: what a failed node changes for the next launch; readmit:
	// the nodes that became spares again (Nodes).
	Change Change
	Nodes  []string
	// fail: the class of the end (ClassFailure, ClassConfig,
	// ClassApplication, ClassStopped), its first real cause, and the wait
	// before the relaunch (0 if the job is not launched again).
	Class   string
	Cause   string
	Backoff time.Duration
}

// Attempt is one launch of the job.
type Attempt struct {
	Incarnation uint64
	// Start and End are wall-clock time since the job's first launch;
	// RestoredAt is when rank 0 reported what it restored (0 if it never
	// did), to within the launcher's 25 ms poll.
	Start, End, RestoredAt time.Duration
	Restored               string // "cache", "rebuild", "shared" or "none"
	Checkpoint             string // what it restored
	Failure                string // why it ended, "" if it finished
	// Class and Cause: what Classify made of the end ("" if it finished).
	Class, Cause string
	// Committed counts the checkpoints the attempt committed (known when
	// the coordinator counts them, see Committer).
	Committed int
	// Flush is what rank 0 last published under jobenv.KeyFlush (zero if
	// nothing, or nothing that decodes).
	Flush jobenv.FlushStats
	// Injected: a failure was injected into the attempt; InjectedAt is
	// when the first one struck (since the job's first launch). From then
	// to the next attempt's RestoredAt is what the failure cost beyond the
	// lost work: Daly's restart R, the teardown included.
	Injected   bool
	InjectedAt time.Duration
	// Nodes are the attempt's nodes, in the order of their first rank.
	Nodes []string
	// RecoveredAlone are the ranks restarted alone in the attempt
	// (Config.Uncoordinated), in order.
	RecoveredAlone []int
	// MsgLog sums what the ranks last published under jobenv.KeyMsgLog
	// (Config.Uncoordinated): each rank's time waiting for its messages
	// to be logged and replaying its log, its processes restarted alone
	// included.
	MsgLog jobenv.MsgLogStats
	// Phi is the dependency factor φ of Fialho et al. 2011 eq. 12
	// measured from who waited on whom (jobenv.KeyPeers): the ranks
	// each rank exchanged messages with during its steps
	// (Config.Uncoordinated; 0 when no rank published them).
	Phi float64
}

// Report is what Run did.
type Report struct {
	Attempts []Attempt
	Injected int    // failures injected
	Halted   bool   // a halt was requested: the job stopped early
	Result   string // rank 0's result line, from the last attempt
	Elapsed  time.Duration
	// Class and Cause say why the job ended without finishing: the class
	// of the last attempt's end and its first real cause ("" when it
	// finished).
	Class, Cause string
	// Checkpoint is the newest checkpoint committed by an attempt, or
	// else restored by one: where a later run resumes from.
	Checkpoint string
	// Flush sums the attempts' flush statistics (FlushStats.Add, oldest
	// first).
	Flush jobenv.FlushStats
	// Excluded lists the nodes left out of launches after their failure
	// (Pool.Excluded).
	Excluded []Exclusion
	// TimeLimit: the job was halted, or not launched again, because its
	// Deadline came near.
	TimeLimit bool
	// RanksRecoveredAlone counts the ranks restarted alone while the
	// others went on (Config.Uncoordinated); WholeJobRestarts the
	// relaunches of the whole job after a failure.
	RanksRecoveredAlone int
	WholeJobRestarts    int
	// MsgLog sums the attempts' (Attempt.MsgLog): over every rank and
	// every launch.
	MsgLog jobenv.MsgLogStats
	// Phi is the last attempt's that measured it (Attempt.Phi).
	Phi float64
}

// Joiner is a Coordinator that knows which ranks joined its attempt (the
// others are named when the attempt times out waiting for them).
type Joiner interface {
	Joined(rank int) bool
}

// Committer is a Coordinator that counts the checkpoints its attempt
// committed, and knows the newest one's name.
type Committer interface {
	Committed() (n int, newest string)
}

// NodeOf is the node rank r of a job of ranks on nodes runs on: ranks fill
// nodes in blocks, as a batch scheduler places them (jobenv.NodeOf, which
// ranks under an External launcher apply themselves).
func NodeOf(r, ranks, nodes int) int { return jobenv.NodeOf(r, ranks, nodes) }

// ErrRetriesExhausted is wrapped by Run's error when the job failed more
// often than Config.Retries allows.
var ErrRetriesExhausted = errors.New("retries exhausted")

// ErrGaveUp is wrapped by Run's error when an attempt ended in a way a
// relaunch cannot fix (Classify): a configuration error, or an application
// error before the first checkpoint or repeated without progress.
var ErrGaveUp = errors.New("not relaunched")

// ErrStopped is wrapped by Run's error when an attempt failed after
// Config.Stop was closed: the job is not launched again.
var ErrStopped = errors.New("stopped")

func (cfg *Config) check() error {
	switch {
	case cfg.Ranks < 1:
		return fmt.Errorf("launch: %d ranks: need at least 1", cfg.Ranks)
	case cfg.Nodes < 1 || cfg.Nodes > cfg.Ranks:
		return fmt.Errorf("launch: %d nodes for %d ranks: need 1 to %d", cfg.Nodes, cfg.Ranks, cfg.Ranks)
	case cfg.Program == "":
		return errors.New("launch: no program")
	case cfg.CacheRoot == "":
		return errors.New("launch: no cache root")
	case cfg.NewCoordinator == nil:
		return errors.New("launch: no coordinator")
	case cfg.Retries < 0:
		return fmt.Errorf("launch: %d retries: need ≥ 0", cfg.Retries)
	case cfg.Uncoordinated && cfg.HangFailures:
		// The coordinator vacates a hung rank at its heartbeat timeout,
		// but its process neither ends nor is killed: the job would wait
		// for the join timeout, then fall back.
		return errors.New("launch: hang failures with the uncoordinated strategy are not supported yet: the launcher restarts a rank alone only when its process ends")
	case cfg.Spares < 0 || cfg.ReadmitAfter < 0:
		return fmt.Errorf("launch: %d spares, re-admission after %d launches: need ≥ 0", cfg.Spares, cfg.ReadmitAfter)
	}
	return nil
}

// Run runs the job to its end: it returns when an attempt finishes, when
// the retries are spent (an error wrapping ErrRetriesExhausted), or when
// ctx is done (every rank killed).
func Run(ctx context.Context, cfg Config) (rep Report, err error) {
	if err := cfg.check(); err != nil {
		return rep, err
	}
	if cfg.Output == nil {
		cfg.Output = io.Discard
	}
	if cfg.Event == nil {
		cfg.Event = func(Event) {}
	}
	if cfg.Launcher == nil {
		cfg.Launcher = Local{}
	}
	start := time.Now()
	since := func() time.Duration { return time.Since(start) }
	defer func() { rep.Elapsed = since() }()
	if h, ok := cfg.Launcher.(Holder); ok {
		// What every launch runs on, held for the whole job (srun
		// outside an allocation: one of its own), released however Run
		// ends.
		note := func(s string) { cfg.Event(Event{Kind: "hold", At: since(), Reason: s}) }
		l, release, err := h.Hold(ctx, cfg.Stop, cfg.Nodes+cfg.Spares, note)
		if err != nil {
			return rep, err
		}
		defer release()
		cfg.Launcher = l
	}
	// The next injected failure, in job time; it carries over relaunches.
	nextFailure, target := time.Duration(-1), 0
	live := cfg.Ranks
	if cfg.NodeFailures {
		live = cfg.Nodes
	}
	if cfg.Failures != nil {
		nextFailure, target = cfg.Failures.Next(live)
	}
	names := NodeNames(cfg.Nodes + cfg.Spares)
	fits := cfg.Fits
	if fits == nil {
		// Without the job's redundancy sets no shrink is known to keep
		// them: a failed node's ranks go to a spare, or it is kept.
		fits = func([]string) error { return errors.New("the job's redundancy sets are not known") }
	}
	pool := NewPool(cfg.Ranks, names[:cfg.Nodes], names[cfg.Nodes:], fits, cfg.ReadmitAfter)
	defer func() { rep.Excluded = pool.Excluded() }()
	var hosts hostList // the hosts ranks ran on, and those left out
	backoff := Backoff{Initial: cfg.Backoff, Max: cfg.MaxBackoff}
	if backoff.Initial == 0 {
		backoff.Initial = 100 * time.Millisecond
	}
	if backoff.Max == 0 {
		backoff.Max = 5 * time.Second
	}
	checkpointed, prevApp := false, false
	for inc := uint64(0); ; inc++ {
		job := cfg.Job
		job.FlushPrior = rep.Flush
		if inc > 0 {
			if back := pool.Launched(); len(back) > 0 {
				cfg.Event(Event{Kind: "readmit", At: since(), Incarnation: inc, Nodes: back})
			}
		}
		a := &attempt{cfg: &cfg, inc: inc, since: since, job: job, env: cfg.Env, layout: pool.Layout()}
		a.hosts = hosts.plan(a.layout, spareHosts(cfg.Launcher))
		if ev, ok := pinEvent(cfg.Launcher, a.layout, a.hosts); ok {
			ev.At, ev.Incarnation = since(), inc
			cfg.Event(ev)
		}
		if cfg.AttemptEnv != nil {
			a.env = append(slices.Clone(cfg.Env), cfg.AttemptEnv(rep.Attempts)...)
		}
		// Restarts of one rank alone spend the retries too.
		a.alone = cfg.Retries - len(rep.Attempts) - rep.RanksRecoveredAlone
		att, err := a.run(ctx, &nextFailure, &target, &rep.Injected)
		rep.RanksRecoveredAlone += len(att.RecoveredAlone)
		rep.MsgLog = rep.MsgLog.Add(att.MsgLog)
		if att.Phi > 0 {
			rep.Phi = att.Phi
		}
		rep.Halted = rep.Halted || a.halted
		rep.TimeLimit = rep.TimeLimit || a.timeLimit
		att.Nodes = distinct(a.layout)
		if a.newest != "" {
			rep.Checkpoint = a.newest
		} else if rep.Checkpoint == "" && att.Checkpoint != "" {
			rep.Checkpoint = att.Checkpoint
		}
		var v Verdict
		if att.Failure != "" {
			v = Classify(Seen{Exits: a.exits, Injected: a.injected, Symptom: att.Failure,
				Stopped: err != nil || a.stopped(), Committed: att.Committed,
				Restored:     att.Restored != "" && att.Restored != "none",
				Checkpointed: checkpointed, PrevApplication: prevApp,
				Joined: a.joined(), JoinsKnown: true})
			att.Class, att.Cause = v.Class, v.Cause
			rep.Class, rep.Cause = v.Class, v.Cause
		}
		checkpointed = checkpointed || att.Committed > 0
		prevApp = v.Class == ClassApplication
		rep.Attempts = append(rep.Attempts, att)
		rep.Flush = rep.Flush.Add(att.Flush)
		if err != nil {
			return rep, err
		}
		if att.Failure == "" {
			rep.Result = a.result
			cfg.Event(Event{Kind: "finish", At: since(), Incarnation: inc})
			return rep, nil
		}
		ev := Event{Kind: "fail", At: since(), Incarnation: inc, Reason: att.Failure, Class: v.Class, Cause: v.Cause}
		switch {
		case !v.Relaunch && v.Class == ClassStopped:
			cfg.Event(ev)
			return rep, fmt.Errorf("launch: %w after the attempt failed: %s", ErrStopped, v.Cause)
		case !v.Relaunch:
			cfg.Event(ev)
			return rep, fmt.Errorf("launch: %w (%s): %s", ErrGaveUp, v.Why, v.Cause)
		case a.pastHalt():
			// Too near the end to start again: the next allocation
			// resumes from the checkpoints.
			cfg.Event(ev)
			rep.Halted, rep.TimeLimit = true, true
			cfg.Event(Event{Kind: "halt", At: since(), Incarnation: inc, Reason: "time limit: too near the end to launch again; the next run resumes"})
			return rep, nil
		case len(rep.Attempts)+rep.RanksRecoveredAlone > cfg.Retries:
			cfg.Event(ev)
			failed := fmt.Sprintf("%d times", len(rep.Attempts))
			if rep.RanksRecoveredAlone > 0 {
				failed = fmt.Sprintf("%d times (%d of them a rank recovered alone)", len(rep.Attempts)+rep.RanksRecoveredAlone, rep.RanksRecoveredAlone)
			}
			return rep, fmt.Errorf("launch: the job failed %s (%w; tried: %s)", failed, ErrRetriesExhausted, Summary(rep.Attempts, pool.Excluded()))
		}
		if cfg.Backoff >= 0 && a.injected == "" {
			// Injected failures are the experiment, not a fault to wait
			// out: relaunch at once, as the models assume.
			ev.Backoff = backoff.Next(att.Committed > 0)
		}
		cfg.Event(ev)
		var failed []string
		for _, node := range a.lost {
			ch := pool.Fail(node, "lost in launch "+fmt.Sprint(inc), inc)
			if ch.Excluded() {
				failed = append(failed, node)
			}
			cfg.Event(Event{Kind: "exclude", At: since(), Incarnation: inc, Change: ch})
		}
		hosts.add(a.layout, a.procHosts, failed)
		select {
		case <-time.After(ev.Backoff):
		case <-ctx.Done():
			return rep, ctx.Err()
		case <-cfg.Stop:
			rep.Class, rep.Cause = ClassStopped, "stopped before the relaunch"
			return rep, fmt.Errorf("launch: %w before the relaunch; the attempt failed: %s", ErrStopped, v.Cause)
		}
		// Counted once it is certain to happen: a stop during the
		// back-off relaunches nothing.
		rep.WholeJobRestarts++
	}
}

// attempt is one launch of the job.
type attempt struct {
	cfg *Config
	inc uint64
	// since is the wall time since the job's first launch: the injector's
	// job time (see Failures).
	since  func() time.Duration
	job    jobenv.Env // the job's environment for this attempt
	env    []string   // added to every rank's environment after job's
	coord  Coordinator
	ranks  Ranks
	result string
	halted bool
	// injected describes the failure injected into this attempt, if any,
	// and injectedAt is when it struck.
	injected   string
	injectedAt time.Duration
	// killed[r]: the launcher sent rank r a fatal signal; killedAll: it
	// killed every rank.
	killed    []bool
	killedAll bool
	// pending are injected failures of ranks not yet found (ErrNotJoined),
	// struck as soon as they are; fatal is an injection that cannot be
	// done at all.
	pending []pendingHit
	fatal   error
	// outs[r] is rank r's output, which remembers its last line; launcher
	// the launcher's own.
	outs     []*prefixWriter
	launcher *prefixWriter
	// exits are the ranks' ends in the order seen.
	exits []RankExit
	// newest is the newest checkpoint the attempt committed.
	newest string
	// layout[r] is rank r's node in this attempt (Pool); hosts the hosts
	// its launcher is to use and to leave out.
	layout []string
	hosts  hostPlan
	// lost are the nodes whose failure was detected in the attempt;
	// procHosts[r] the host rank r said it runs on, by its launcher's
	// name for it (jobenv.Proc.Where), "" if unknown.
	lost      []string
	procHosts []string
	// joinedRanks[r]: rank r joined the attempt.
	joinedRanks []bool
	// timeLimit: the attempt was asked to halt for the deadline.
	timeLimit bool
	// alone is how many ranks may still be restarted alone
	// (Config.Uncoordinated): the retries left.
	alone int
	// wholeJob, if set, is why a failure injected into the attempt must
	// relaunch the whole job rather than restart ranks alone
	// (nodeLoss).
	wholeJob string
}

// pastHalt reports that the job's deadline is less than its halt margin
// away: time to halt, and not to launch again.
func (a *attempt) pastHalt() bool {
	return !a.cfg.Deadline.IsZero() && !time.Now().Before(a.cfg.Deadline.Add(-a.cfg.HaltMargin))
}

// joined counts the ranks that joined the attempt.
func (a *attempt) joined() int {
	n := 0
	for _, j := range a.joinedRanks {
		if j {
			n++
		}
	}
	return n
}

// missing names the ranks of the attempt that never joined, with their
// nodes and hosts: this one under Local, which starts every rank here;
// the launcher's choice, unknown, under another.
func (a *attempt) missing() string {
	host := ""
	if _, ok := a.cfg.Launcher.(Local); ok {
		host, _ = os.Hostname()
	}
	var parts []string
	for r, j := range a.joinedRanks {
		if j {
			continue
		}
		where := "host " + host
		if host == "" {
			where = "host unknown: placed by " + a.cfg.Launcher.Name() + ", it never reported"
		}
		parts = append(parts, fmt.Sprintf("rank %d (node %s, %s)", r, a.layout[r], where))
	}
	return strings.Join(parts, "; ")
}

// nodes are the attempt's distinct nodes: the injector's targets of node
// failures.
func (a *attempt) nodes() []string { return distinct(a.layout) }

// nodeNumber is i of a simulated node's name node<i> (a spare's too), or
// def for a name of another form.
func nodeNumber(name string, def int) int {
	if n, err := strconv.Atoi(strings.TrimPrefix(name, "node")); err == nil && strings.HasPrefix(name, "node") {
		return n
	}
	return def
}

// pendingHit is an injected failure of a rank not found yet.
type pendingHit struct {
	rank int
	hang bool
}

// stopped reports that the launcher was asked to stop.
func (a *attempt) stopped() bool {
	select {
	case <-a.cfg.Stop:
		return true
	default:
		return false
	}
}

// rankExit is how process e ended, for Classify: a rank, or the launcher
// that ran them all.
func (a *attempt) rankExit(e Ended) RankExit {
	if e.Rank < 0 {
		return RankExit{Rank: -1, Launcher: a.cfg.Launcher.Name(), Killed: a.killedAll,
			Last: a.launcher.last(), Status: e.Status, Signal: e.Signal}
	}
	return RankExit{Rank: e.Rank, Node: a.layout[e.Rank],
		Killed: a.killed[e.Rank], Last: a.outs[e.Rank].last(), Status: e.Status, Signal: e.Signal}
}

func (a *attempt) run(ctx context.Context, nextFailure *time.Duration, target *int, injected *int) (Attempt, error) {
	cfg := a.cfg
	att := Attempt{Incarnation: a.inc, Start: a.since()}
	token := newToken()
	coord, err := cfg.NewCoordinator(a.inc, token)
	if err != nil {
		return att, fmt.Errorf("launch: coordinator: %w", err)
	}
	a.coord = coord
	defer coord.Close()
	cfg.Event(Event{Kind: "launch", At: a.since(), Incarnation: a.inc})

	a.killed = make([]bool, cfg.Ranks)
	ranks, err := cfg.Launcher.Start(ctx, a.spec(token))
	if err != nil {
		att.End = a.since()
		return att, err
	}
	a.ranks = ranks
	restarter, _ := ranks.(Restarter)
	if cfg.Uncoordinated && restarter == nil {
		cfg.Event(Event{Kind: "fallback", At: a.since(), Incarnation: a.inc,
			Reason: "launcher " + cfg.Launcher.Name() + " starts the ranks together and cannot restart one alone: a failure relaunches the whole job"})
	}
	exits := ranks.Ended()
	if a.stopped() {
		a.halt()
	}
	stopC := cfg.Stop
	ctxDone := ctx.Done()
	exited := 0
	failure := ""
	killedAll := false
	var graceC <-chan time.Time
	// fail records the first symptom; now: kill every rank at once, else
	// after the abort grace.
	fail := func(reason string, now bool) {
		if failure == "" {
			if a.injected != "" {
				// The cause first, then how the job saw it (which rank
				// noticed first is a race).
				reason = a.injected + " (seen as: " + reason + ")"
			}
			failure = reason
		}
		if killedAll {
			return
		}
		if now || a.injected != "" {
			killedAll = true
			a.killAll()
		} else if graceC == nil {
			grace := cfg.AbortGrace
			if grace == 0 {
				grace = 3 * time.Second
			}
			graceC = time.After(grace)
		}
	}
	// The poll for the halt file and for what rank 0 restored.
	halt := time.NewTicker(25 * time.Millisecond)
	defer halt.Stop()
	restoredSeen := false
	doneC := coord.Done()
	var haltAt, killAt <-chan time.Time
	if !cfg.Deadline.IsZero() {
		ht := time.NewTimer(time.Until(cfg.Deadline.Add(-cfg.HaltMargin)))
		kt := time.NewTimer(time.Until(cfg.Deadline))
		defer ht.Stop()
		defer kt.Stop()
		haltAt, killAt = ht.C, kt.C
	}
	for exited < ranks.Procs() {
		var injectC <-chan time.Time
		if *nextFailure >= 0 && failure == "" {
			injectC = time.After(max(*nextFailure-a.since(), 0))
		}
		select {
		case e := <-exits:
			exited++
			re := a.rankExit(e)
			if restarter != nil && e.Err != nil && failure == "" && a.recoverAlone(restarter, re, doneC, &att) {
				break
			}
			a.exits = append(a.exits, re)
			if e.Err != nil {
				// A rank that only saw the job fail (the cause may still
				// be exiting) leaves the others the abort grace.
				who := fmt.Sprintf("rank %d", e.Rank)
				if e.Rank < 0 {
					who = re.Launcher
				}
				fail(fmt.Sprintf("%s: %v", who, e.Err), re.Status != ExitJobFailed)
			}
		case <-doneC:
			doneC = nil // closed: it would fire on every turn
			if err := coord.Err(); err != nil {
				fail(err.Error(), false)
			}
		case <-graceC:
			graceC = nil
			fail("", true)
		case tgs := <-cfg.Inject:
			for _, tg := range tgs {
				a.inject(tg, injected)
			}
		case <-injectC:
			a.inject(*target, injected)
			live := cfg.Ranks
			if cfg.NodeFailures {
				live = len(a.nodes())
			}
			*nextFailure, *target = cfg.Failures.Next(live)
		case <-halt.C:
			if cfg.HaltFile != "" {
				if _, err := os.Stat(cfg.HaltFile); err == nil {
					a.halt()
					os.Remove(cfg.HaltFile)
				}
			}
		case <-stopC:
			stopC = nil // closed: it would fire on every turn
			a.halt()
		case <-haltAt:
			a.timeLimit = true
			a.haltFor("time limit")
		case <-killAt:
			a.timeLimit = true
			fail(fmt.Sprintf("the time limit (%s) came before the job checkpointed and halted", cfg.Deadline.Format(time.RFC3339)), true)
		case <-ctxDone:
			ctxDone = nil // closed: it would fire on every turn
			fail(ctx.Err().Error(), true)
		}
		if len(a.pending) > 0 && failure == "" {
			a.retryPending()
		}
		if a.fatal != nil && failure == "" {
			fail(a.fatal.Error(), true)
		}
		if a.wholeJob != "" && failure == "" {
			// Before any of the lost node's ranks is seen to end, so
			// that none is restarted alone.
			fail(a.wholeJob, true)
		}
		if !restoredSeen {
			if v, ok := coord.Value(jobenv.KeyRestored); ok {
				restoredSeen = true
				att.RestoredAt = a.since()
				att.Restored, att.Checkpoint = parseRestored(v)
				cfg.Event(Event{Kind: "restored", At: a.since(), Incarnation: a.inc, Source: att.Restored, Checkpoint: att.Checkpoint})
			}
		}
	}
	if !restoredSeen {
		if v, ok := coord.Value(jobenv.KeyRestored); ok {
			att.RestoredAt = a.since()
			att.Restored, att.Checkpoint = parseRestored(v)
		}
	}
	if failure == "" {
		// Every rank exited 0; the coordinator must agree that all left.
		select {
		case <-coord.Done():
			if err := coord.Err(); err != nil {
				failure = err.Error()
			}
		case <-time.After(5 * time.Second):
			failure = "every rank exited but the coordinator did not see them all leave"
		}
	}
	if v, ok := coord.Value(jobenv.KeyResult); ok {
		a.result = string(v)
	}
	a.procHosts = make([]string, cfg.Ranks)
	a.joinedRanks = make([]bool, cfg.Ranks)
	j, isJoiner := coord.(Joiner)
	for r := range a.procHosts {
		if v, ok := coord.Value(jobenv.KeyProc(r)); ok {
			if p, err := jobenv.DecodeProc(v); err == nil {
				// Slurm's node name is what srun's --exclude takes, and
				// what mpirun inside an allocation knows its hosts by
				// (its host file may name only the allocation's nodes);
				// any other launcher knows hosts by their host names.
				a.procHosts[r] = p.Host
				if e, ok := cfg.Launcher.(*External); ok && e.SlurmNames() {
					a.procHosts[r] = p.Where()
				}
			}
		}
		// A rank publishes its host once the whole job joined: the
		// coordinator knows the ranks that joined before.
		a.joinedRanks[r] = a.procHosts[r] != "" || isJoiner && j.Joined(r)
	}
	if v, ok := coord.Value(jobenv.KeyFlush); ok {
		att.Flush, _ = jobenv.DecodeFlushStats(v)
	}
	if cfg.Uncoordinated {
		for r := range cfg.Ranks {
			if v, ok := coord.Value(jobenv.KeyMsgLog(r)); ok {
				if s, err := jobenv.DecodeMsgLogStats(v); err == nil {
					att.MsgLog = att.MsgLog.Add(s)
				}
			}
		}
		att.Phi = measuredPhi(cfg.Ranks, func(r int) ([]byte, bool) { return coord.Value(jobenv.KeyPeers(r)) })
	}
	if c, ok := coord.(Committer); ok {
		att.Committed, a.newest = c.Committed()
	}
	if strings.Contains(failure, "did not join") {
		if m := a.missing(); m != "" {
			failure += "; not joined: " + m
		}
	}
	att.End = a.since()
	att.Failure = failure
	att.Injected, att.InjectedAt = a.injected != "", a.injectedAt
	if ctx.Err() != nil {
		return att, ctx.Err()
	}
	if a.fatal != nil {
		return att, fmt.Errorf("launch: %w", a.fatal)
	}
	return att, nil
}

// recoverAlone restarts rank re.Rank alone if Config.Uncoordinated allows
// (see there), and tells whether it did. done is the coordinator's Done
// channel, nil once it closed.
func (a *attempt) recoverAlone(rs Restarter, re RankExit, done <-chan struct{}, att *Attempt) bool {
	cfg := a.cfg
	if !cfg.Uncoordinated || re.Rank < 0 || re.Status != -1 || re.crash() || a.halted || done == nil {
		return false
	}
	select {
	case <-done:
		return false // the job ended or aborted: nothing to rejoin
	default:
	}
	if a.alone <= 0 {
		cfg.Event(Event{Kind: "fallback", At: a.since(), Incarnation: a.inc, Ranks: []int{re.Rank},
			Reason: fmt.Sprintf("%s: the retries are spent", re)})
		return false
	}
	if err := rs.Restart(re.Rank, []string{jobenv.VarRecoverAlone + "=1"}); err != nil {
		cfg.Event(Event{Kind: "fallback", At: a.since(), Incarnation: a.inc, Ranks: []int{re.Rank},
			Reason: fmt.Sprintf("%s: restarting it alone: %v", re, err)})
		return false
	}
	a.alone--
	a.killed[re.Rank] = false
	// The failure was served: a later one is not this injection's.
	a.injected = ""
	a.pending = slices.DeleteFunc(a.pending, func(h pendingHit) bool { return h.rank == re.Rank })
	att.RecoveredAlone = append(att.RecoveredAlone, re.Rank)
	cfg.Event(Event{Kind: "recover", At: a.since(), Incarnation: a.inc, Ranks: []int{re.Rank}, Reason: re.String()})
	return true
}

// halt asks the attempt's ranks to checkpoint and stop.
func (a *attempt) halt() { a.haltFor("") }

// haltFor is halt, for a reason the event carries ("time limit").
func (a *attempt) haltFor(reason string) {
	if a.halted {
		return
	}
	a.coord.Halt()
	a.halted = true
	a.cfg.Event(Event{Kind: "halt", At: a.since(), Incarnation: a.inc, Reason: reason})
}

// spec is the launch of the attempt's ranks, with the token of its
// coordinator.
func (a *attempt) spec(token string) Spec {
	cfg := a.cfg
	var out sync.Mutex // one line at a time
	a.outs = make([]*prefixWriter, cfg.Ranks)
	for r := range a.outs {
		a.outs[r] = &prefixWriter{mu: &out, w: cfg.Output, prefix: fmt.Sprintf("[rank %d] ", r)}
	}
	a.launcher = &prefixWriter{mu: &out, w: cfg.Output, prefix: "[" + cfg.Launcher.Name() + "] "}
	job := a.job
	job.Token, job.Incarnation = token, a.inc
	job.Coord = a.rankAddr(0)
	return Spec{Ranks: cfg.Ranks, Nodes: compactNodes(a.layout), Program: cfg.Program, Args: cfg.Args,
		Hosts: a.hosts.Use, ExcludeHosts: a.hosts.Exclude, Pin: a.hosts.Pin,
		Job: job, CoordFor: a.rankAddr, CacheRoot: cfg.CacheRoot, Env: a.env, Lookup: a.coord.Value,
		Output: func(r int) io.Writer {
			if r < 0 {
				return a.launcher
			}
			return a.outs[r]
		}}
}

// rankAddr is where rank r finds the coordinator.
func (a *attempt) rankAddr(r int) string {
	if ra, ok := a.coord.(interface{ RankAddr(int) string }); ok {
		return ra.RankAddr(r)
	}
	return a.coord.Addr()
}

// inject kills a target: one rank, or every rank of one node and its cache.
func (a *attempt) inject(target int, injected *int) {
	cfg := a.cfg
	*injected++
	ev := Event{Kind: "inject", At: a.since(), Incarnation: a.inc, Node: -1}
	nodes := a.nodes()
	node := ""
	if cfg.NodeFailures {
		// A job that shrank has fewer nodes than the schedule drew from.
		target %= len(nodes)
		node = nodes[target]
		ev.Node = nodeNumber(node, target)
		ev.Nodes = []string{node}
		for r, n := range a.layout {
			if n == node {
				ev.Ranks = append(ev.Ranks, r)
			}
		}
		if !slices.Contains(a.lost, node) {
			a.lost = append(a.lost, node)
		}
	} else {
		ev.Ranks = []int{target}
		ev.Hang = cfg.HangFailures
	}
	for _, r := range ev.Ranks {
		a.hit(pendingHit{rank: r, hang: cfg.HangFailures})
	}
	if cfg.NodeFailures {
		// The node's replacement starts with an empty cache.
		os.RemoveAll(filepath.Join(cfg.CacheRoot, node))
	}
	if a.injected == "" {
		a.injectedAt = ev.At
		switch {
		case cfg.NodeFailures:
			a.injected = fmt.Sprintf("injected failure: node %d lost with its cache", ev.Node)
		case cfg.HangFailures:
			a.injected = fmt.Sprintf("injected failure: rank %d hung", target)
		default:
			a.injected = fmt.Sprintf("injected failure: rank %d killed", target)
		}
	}
	cfg.Event(ev)
	if cfg.NodeFailures && cfg.Uncoordinated {
		a.nodeLoss()
	}
}

// nodeLoss decides, under Config.Uncoordinated, what the loss of the
// attempt's lost nodes does (uncoord.LoseNodes). Under a Restarter, each
// lost rank is restarted alone when its process's end is seen, on its
// node's replacement (an empty cache), from its checkpoint copy and log
// at its protector; the ranks the lost nodes protected re-protect by
// themselves (a checkpoint at once at their protector, re-formed over the
// placement: see the rank runtime), and Event "reform" says which. Beyond
// tolerance — a rank lost with its protector's node, or a job in one
// failure domain — nothing holds the lost ranks' checkpoints and logs:
// the whole job is relaunched, Event "fallback" saying why. A launcher
// that starts every rank together relaunches the whole job anyway (said
// at the launch).
func (a *attempt) nodeLoss() {
	before := make([]placement.Member, len(a.layout))
	for r, n := range a.layout {
		before[r] = placement.Member{Rank: r, Node: n, Domain: a.cfg.Job.Domain}
	}
	// The lost ranks restart on their node's replacement: the placement
	// stays as it was.
	l := uncoord.LoseNodes(before, a.lost, before)
	what := fmt.Sprintf("node %s lost under the uncoordinated strategy", strings.Join(a.lost, ","))
	if len(a.lost) > 1 {
		what = fmt.Sprintf("nodes %s lost under the uncoordinated strategy", strings.Join(a.lost, ","))
	}
	if len(l.Beyond) > 0 {
		reason := fmt.Sprintf("%s with ranks %s and every copy of the checkpoints and logs of ranks %s (their protector's node lost too, or no other failure domain to protect them): beyond what the protection tolerates, the whole job restarts from the beginning",
			what, intList(l.Lost), intList(l.Beyond))
		if a.wholeJob == "" {
			a.wholeJob = reason
			a.cfg.Event(Event{Kind: "fallback", At: a.since(), Incarnation: a.inc, Ranks: l.Lost, Nodes: slices.Clone(a.lost), Reason: reason})
		}
		return
	}
	if _, ok := a.ranks.(Restarter); !ok {
		return
	}
	var reformed []string
	for _, r := range l.Unprotected {
		if p, ok := l.Protectors[r]; ok {
			reformed = append(reformed, fmt.Sprintf("%d → %d on %s", r, p, a.layout[p]))
		}
	}
	reason := fmt.Sprintf("%s: ranks %s restart alone from their checkpoint copies and logs at their protectors", what, intList(l.Lost))
	if len(l.Unprotected) > 0 {
		reason += fmt.Sprintf("; ranks %s, whose logs and checkpoint copies it held, re-protect with a checkpoint at once (%s)",
			intList(l.Unprotected), strings.Join(reformed, ", "))
	}
	a.cfg.Event(Event{Kind: "reform", At: a.since(), Incarnation: a.inc, Ranks: l.Unprotected, Nodes: slices.Clone(a.lost), Reason: reason})
}

// intList is ranks as "0,1,2" ("none" for none).
func intList(rs []int) string {
	if len(rs) == 0 {
		return "none"
	}
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = strconv.Itoa(r)
	}
	return strings.Join(s, ",")
}

// hit kills or stops a rank now, or as soon as it can be found.
func (a *attempt) hit(h pendingHit) {
	var err error
	if h.hang {
		err = a.ranks.Stop(h.rank)
	} else {
		a.killed[h.rank] = true
		err = a.ranks.Kill(h.rank)
	}
	switch {
	case errors.Is(err, ErrNotJoined):
		a.pending = append(a.pending, h)
	case err != nil && a.fatal == nil:
		a.fatal = fmt.Errorf("injecting a failure of rank %d: %w", h.rank, err)
	}
}

// retryPending strikes the injected failures of ranks not found before.
func (a *attempt) retryPending() {
	p := a.pending
	a.pending = nil
	for _, h := range p {
		a.hit(h)
	}
}

// killAll kills every rank of the attempt.
func (a *attempt) killAll() {
	for r := range a.killed {
		a.killed[r] = true
	}
	a.killedAll = true
	a.ranks.KillAll()
}

func parseRestored(v []byte) (source, name string) {
	r := jobenv.DecodeRestored(v)
	return r.Source, r.Checkpoint
}

// NewToken returns a new job secret: 128 random bits in hex.
func NewToken() string { return newToken() }

func newToken() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// prefixWriter writes whole lines, each with a prefix, under a shared lock.
type prefixWriter struct {
	mu     *sync.Mutex
	w      io.Writer
	prefix string
	buf    []byte
	lastMu sync.Mutex
	lastLn string // the last non-empty line written
}

// last is the last non-empty line written, or the partial line after it.
func (p *prefixWriter) last() string {
	p.lastMu.Lock()
	defer p.lastMu.Unlock()
	t := strings.TrimSpace(string(p.buf))
	if t == "" {
		t = p.lastLn
	}
	if len(t) > 300 {
		t = t[:300] + "…"
	}
	return t
}

// saysNothing reports whether a line of output cannot be a failure's
// cause: empty, a rule of dashes (mpirun frames its messages in them), or
// a pointer to the help (srun ends its complaint about an option with
// `Try "srun --help" for more information`, after the line that names
// the option).
func saysNothing(line string) bool {
	if strings.Trim(line, "-") == "" {
		return true
	}
	return strings.HasPrefix(line, "Try ") && strings.Contains(line, "--help") && strings.HasSuffix(line, "for more information")
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.lastMu.Lock()
	defer p.lastMu.Unlock()
	p.buf = append(p.buf, b...)
	for {
		i := -1
		for j, c := range p.buf {
			if c == '\n' {
				i = j
				break
			}
		}
		if i < 0 {
			break
		}
		p.mu.Lock()
		io.WriteString(p.w, p.prefix)
		p.w.Write(p.buf[:i+1])
		p.mu.Unlock()
		if t := strings.TrimSpace(string(p.buf[:i])); !saysNothing(t) {
			p.lastLn = t
		}
		p.buf = p.buf[i+1:]
	}
	return len(b), nil
}

// measuredPhi is Fialho et al. 2011's dependency factor (eq. 12,
// model.DependencyGraph) of the ranks' published peers (jobenv.KeyPeers):
// a rank waits on each rank it exchanged messages with (a receive waits
// for its sender, a send to a recovering rank for its receiver), so P(n)
// is n itself and the ranks that exchanged messages with it. 0 when a
// rank published none (it ended before its first step).
func measuredPhi(ranks int, peers func(rank int) ([]byte, bool)) float64 {
	g := model.DependencyGraph{Waits: map[string][]string{}}
	for r := range ranks {
		v, ok := peers(r)
		if !ok {
			return 0
		}
		ps, err := jobenv.DecodePeers(v)
		if err != nil {
			return 0
		}
		name := strconv.Itoa(r)
		g.Processes = append(g.Processes, name)
		for _, p := range ps {
			if p < 0 || p >= ranks {
				return 0
			}
			// An exchange makes each wait on the other, whichever of
			// the two published it.
			g.Waits[name] = append(g.Waits[name], strconv.Itoa(p))
			g.Waits[strconv.Itoa(p)] = append(g.Waits[strconv.Itoa(p)], name)
		}
	}
	phi, err := g.Phi()
	if err != nil {
		return 0
	}
	return phi
}
