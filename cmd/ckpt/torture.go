package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ckpt/ckpt/internal/torture"
)

const tortureLong = `Runs real jobs — the examples Himeno and matmul under 'ckpt run', as
subprocesses of this binary — for --duration, hits them with faults drawn
from a seeded schedule at random points, and checks after every recovery
that the state the job restored is bit-identical to a failure-free run's
state at the same step (the examples' checksum, through their --trace).
Every checkpoint the job commits and its final result are checked too.

Faults (--kinds, default all):
  kill-rank               SIGKILL one rank; the job restarts from the node caches
  kill-node               SIGKILL a node's ranks and delete its cache: a rebuild
                          from redundancy (xor, partner, rs) or the shared tier
  kill-launcher           SIGKILL 'ckpt run' itself (its ranks die with it); a
                          new 'ckpt run' of the same job resumes it
  kill-stage              SIGKILL a staging server; the launcher restarts it
  hang-rank               SIGSTOP one rank: the heartbeat timeout must catch it
  hang-stage              SIGSTOP a staging server for a while, then SIGCONT
  corrupt-cache-data      flip bytes of a rank's data, then kill a rank: the
                          restart must detect it (every byte is hashed) and rebuild
  corrupt-parity          flip bytes of a rank's parity, then kill a rank
  corrupt-cache-manifest  flip bytes of a node's manifest, then kill a rank
  corrupt-shared-object   flip bytes of the newest shared checkpoint's data and
  corrupt-shared-manifest (or manifest), delete every cache, kill a rank: the
                          restart must fall back to an older checkpoint
  shared-down             the shared tier's directory is replaced by a file for
                          a while (root ignores permissions): its writes fail
  hostile                 a hostile client attacks every listener of the job
                          (coordinator, relays, peers, staging servers) at once:
                          wrong token, replayed Hellos, oversized, malformed and
                          truncated frames, garbage, silent and slowloris
                          connections; each must drop the attacker in time and
                          keep none of its connections, and the job ride it out
  cut-node                destroy every TCP connection of one node's ranks (ss -K)
  partition-node          drop every packet to or from one node's ranks for 2 to
                          6 s (tc on the job's loopback): ridden out, or caught
                          by the heartbeat timeout and restarted
  disk-full               fill one node's cache disk (a small tmpfs) for a while:
                          its checkpoints fail with ENOSPC, none committed is lost
  shared-full             fill the shared tier's disk (a small tmpfs) for a while

The last four run each job in a sandbox of its own: network and mount
namespaces (root, util-linux's unshare and nsenter, iproute2's ip, tc and
ss). Where there is none, --kinds all leaves them out (said on stderr, and
under "unavailable" in the JSON) and naming one is an error.

A fault comes after 1 to 3 checkpoints committed since the job last started
or recovered, plus a random delay; the next waits for the recovery. After
--faults-per-run faults a job runs to its end (its result is checked too)
and the next workload's job starts; each workload's failure-free reference
run comes first.

The account: faults by kind; recoveries by source (cache, rebuild, shared,
scratch); wrong_results (restored, committed or final states whose checksum
differs from the failure-free run's: must be 0); committed_lost_within_tolerance
(a restore from an older checkpoint than the newest committed although the
damage was within the redundancy's tolerance, such as one node lost under
xor: must be 0); lost_beyond_tolerance (count, and why: all caches lost, a
set lost more members than its scheme rebuilds, ...); recover_seconds by
kind (median and p99 from the fault to the restored state, or for a fault
the job rides out to its next checkpoint after the fault ended, or to its
end if it finishes first);
attacks_held by kind of listener, attacks_cut (cut short by the end of the
job) and hostile_failures (attacks a listener
did not hold, connections it kept, restarts during a hostile fault: must
be 0). The exit status is 1 when wrong_results,
committed_lost_within_tolerance or hostile_failures is not 0.

Replaying: the schedule is a pure function of --seed, --kinds and the job's
shape (-n, --nodes, --staging-servers): the same command injects the same
faults of the same kinds on the same targets in the same order. When they
land depends on the machine's speed, so a replay hits the same kinds at
nearby points, not bit-identical ones; --faults N stops after the N-th.
docs/RELIABILITY.md says more.

  ckpt torture --duration 1m --seed 1
  ckpt torture --duration 10m --seed 7 --workload himeno --kinds kill-node,corrupt-cache-data --json`

// tortureFlags are ckpt torture's flags.
type tortureFlags struct {
	duration, heartbeat, recoverTimeout *quantity
	seed                                *uint64
	asJSON, keep, tree                  *bool
	workload, kinds, redundancy, dir    *string
	faults, ranks, nodes, staging       *int
	flushEvery, perRun                  *int
}

func newTortureCmd() *cobra.Command {
	c := leaf("torture [--duration D] [--seed S] [--json]", "Randomized fault campaigns on real jobs: kill, hang and corrupt, then check every restored state bit for bit",
		tortureLong, "")
	fs := c.Flags()
	f := &tortureFlags{
		duration:       durationFlag(fs, "duration", "how long to inject faults (default 1m)"),
		seed:           fs.Uint64("seed", 1, "seed of the fault schedule: the same seed replays the same faults"),
		asJSON:         jsonFlag(c),
		workload:       fs.String("workload", "both", "the job: himeno, matmul, or both (in turn, one run each)"),
		kinds:          fs.String("kinds", "all", "fault kinds, comma-separated (see above), or all"),
		faults:         fs.Int("faults", 0, "stop after this many faults (0: only --duration stops)"),
		perRun:         fs.Int("faults-per-run", 6, "faults that hit one job; it then runs to its end (its result checked) and the next job starts (0: no limit)"),
		ranks:          fs.IntP("ranks", "n", 4, "ranks of each job"),
		nodes:          fs.Int("nodes", 2, "simulated nodes of each job"),
		redundancy:     fs.String("redundancy", "xor:2", "the jobs' redundancy (single, partner, xor:S, rs:K+M)"),
		staging:        fs.Int("staging-servers", 1, "staging servers of each job (0: the ranks flush, blocking; no staging faults then)"),
		tree:           fs.Bool("tree", false, "give each node of a job a relay (ckpt run --tree), which hostile faults attack too"),
		flushEvery:     fs.Int("flush-every", 2, "flush every K-th checkpoint to the shared tier"),
		heartbeat:      durationFlag(fs, "heartbeat-timeout", "the jobs' heartbeat timeout: how soon a hung rank is caught (default 5s)"),
		recoverTimeout: durationFlag(fs, "recover-timeout", "a job that neither recovers nor checkpoints this long after a fault is stuck (default 2m)"),
		dir:            fs.String("dir", "", "where the jobs' directories go (default: a new temporary directory, removed at the end)"),
		keep:           fs.Bool("keep", false, "keep the jobs' directories and logs"),
	}
	c.RunE = func(c *cobra.Command, _ []string) error { return f.run(c) }
	c.AddCommand(newTortureNodeLossCmd())
	return c
}

// workloads are the jobs of --workload: small, so that a run of a minute
// on two cores sees several faults, each job long enough for several.
func (f *tortureFlags) workloads() ([]torture.Workload, error) {
	base := torture.Workload{Ranks: *f.ranks, Nodes: *f.nodes, Redundancy: *f.redundancy, Staging: *f.staging, Tree: *f.tree}
	himeno := base
	himeno.Name, himeno.Interval = "himeno", "10steps"
	himeno.Args = []string{"example", "himeno", "--size", "xs", "--iterations", "500"}
	matmul := base
	matmul.Name, matmul.Interval = "matmul", "4steps"
	matmul.Args = []string{"example", "matmul", "--n", "192", "--panels", "24"}
	switch *f.workload {
	case "himeno":
		return []torture.Workload{himeno}, nil
	case "matmul":
		return []torture.Workload{matmul}, nil
	case "both":
		return []torture.Workload{himeno, matmul}, nil
	}
	return nil, usagef("--workload %q: use himeno, matmul or both", *f.workload)
}

// config checks the flags and builds the campaign.
func (f *tortureFlags) config() (torture.Config, error) {
	var cfg torture.Config
	kinds, err := torture.ParseKinds(*f.kinds)
	if err != nil {
		return cfg, usagef("--kinds: %v", err)
	}
	named := strings.TrimSpace(*f.kinds) != "all" && *f.kinds != ""
	kinds, unavailable, err := withSandbox(kinds, named, torture.SandboxUnavailable)
	if err != nil {
		return cfg, err
	}
	if *f.staging == 0 {
		kinds = withoutStaging(kinds)
		if len(kinds) == 0 {
			return cfg, usagef("--kinds: staging faults need --staging-servers")
		}
	}
	if *f.ranks < 2 || *f.nodes < 1 || *f.nodes > *f.ranks {
		return cfg, usagef("-n %d --nodes %d: need at least 2 ranks and 1 to n nodes", *f.ranks, *f.nodes)
	}
	if _, err := torture.NewRedundancy(*f.redundancy, *f.ranks, *f.nodes); err != nil {
		return cfg, usagef("--redundancy: %v", err)
	}
	if *f.faults < 0 || *f.perRun < 0 || *f.flushEvery < 1 || *f.staging < 0 {
		return cfg, usagef("need --faults ≥ 0, --faults-per-run ≥ 0, --flush-every ≥ 1, --staging-servers ≥ 0")
	}
	w, err := f.workloads()
	if err != nil {
		return cfg, err
	}
	return torture.Config{Seed: *f.seed, Duration: orDefault(f.duration, time.Minute), MaxFaults: *f.faults, FaultsPerRun: *f.perRun,
		Kinds: kinds, Workloads: w, RecoverTimeout: orDefault(f.recoverTimeout, 2*time.Minute), Unavailable: unavailable}, nil
}

// withSandbox leaves out the kinds that need a sandbox when why (asked
// only if one is selected) says this machine cannot make one; when they
// were named in --kinds, that is an error.
func withSandbox(kinds []torture.Kind, named bool, why func() string) ([]torture.Kind, map[torture.Kind]string, error) {
	var need []torture.Kind
	for _, k := range kinds {
		if k.NeedsSandbox() {
			need = append(need, k)
		}
	}
	if len(need) == 0 {
		return kinds, nil, nil
	}
	reason := why()
	if reason == "" {
		return kinds, nil, nil
	}
	if named {
		return nil, nil, usagef("--kinds %s: these faults run each job in a sandbox (network and mount namespaces), which this machine cannot make: %s", kindNames(need), reason)
	}
	var out []torture.Kind
	unavailable := map[torture.Kind]string{}
	for _, k := range kinds {
		if k.NeedsSandbox() {
			unavailable[k] = reason
		} else {
			out = append(out, k)
		}
	}
	return out, unavailable, nil
}

func kindNames(kinds []torture.Kind) string {
	s := make([]string, len(kinds))
	for i, k := range kinds {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}

// sandboxed tells whether a kind of kinds needs the jobs in sandboxes.
func sandboxed(kinds []torture.Kind) bool {
	for _, k := range kinds {
		if k.NeedsSandbox() {
			return true
		}
	}
	return false
}

func withoutStaging(kinds []torture.Kind) []torture.Kind {
	var out []torture.Kind
	for _, k := range kinds {
		if !k.NeedsStaging() {
			out = append(out, k)
		}
	}
	return out
}

func orDefault(q *quantity, d time.Duration) time.Duration {
	if q.set {
		return time.Duration(q.v * float64(time.Second))
	}
	return d
}

func (f *tortureFlags) run(c *cobra.Command) error {
	cfg, err := f.config()
	if err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	dir := *f.dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "ckpt-torture-"); err != nil {
			return err
		}
		if !*f.keep {
			defer os.RemoveAll(dir)
		}
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return err
	}
	procs := &torture.Procs{Exe: exe, Dir: dir, Heartbeat: orDefault(f.heartbeat, 5*time.Second),
		FlushEvery: *f.flushEvery, Keep: *f.keep, Sandbox: sandboxed(cfg.Kinds)}
	cfg.Progress = c.ErrOrStderr()
	if len(cfg.Unavailable) > 0 {
		var left []torture.Kind
		for _, k := range torture.Kinds {
			if _, ok := cfg.Unavailable[k]; ok {
				left = append(left, k)
			}
		}
		fmt.Fprintf(cfg.Progress, "ckpt torture: WARNING: the faults %s are left out: %s\n", kindNames(left), cfg.Unavailable[left[0]])
	}
	fmt.Fprintf(cfg.Progress, "ckpt torture: seed %d for %s, jobs in %s\n", cfg.Seed, cfg.Duration, dir)
	res, err := torture.Run(c.Context(), cfg, procs)
	if err != nil {
		return err
	}
	return reportTorture(c.OutOrStdout(), res, *f.asJSON)
}

// reportTorture prints the campaign's account and fails when it found a
// bug.
func reportTorture(w io.Writer, res torture.Result, asJSON bool) error {
	var err error
	if asJSON {
		err = writeJSON(w, res)
	} else {
		err = tortureTable(w, res)
	}
	if err != nil {
		return err
	}
	if res.Failed() {
		return statusError{err: fmt.Errorf("torture: %d wrong results, %d committed checkpoints lost within tolerance, %d hostile failures (seed %d)",
			res.WrongResults, res.CommittedLostWithinTolerance, res.HostileFailures, res.Seed), status: exitError}
	}
	return nil
}

func tortureTable(w io.Writer, res torture.Result) error {
	t := newTable(w)
	t.row("seed", fmt.Sprint(res.Seed), fmt.Sprintf("(%s, %s; %d runs, %d finished)", strings.Join(res.Workloads, ", "), res.Redundancy, res.Runs, res.RunsFinished))
	t.row("faults injected", fmt.Sprint(res.FaultsInjected), torture.Counts(res.Faults))
	if len(res.Skipped) > 0 {
		t.row("faults skipped", "", torture.Counts(res.Skipped)+" (nothing to hit)")
	}
	t.row("recoveries", "", torture.Counts(res.Recoveries))
	t.row("wrong results", fmt.Sprint(res.WrongResults))
	t.row("committed lost within tolerance", fmt.Sprint(res.CommittedLostWithinTolerance))
	t.row("lost beyond tolerance", fmt.Sprint(res.LostBeyondTolerance.Count), torture.Counts(res.LostBeyondTolerance.Why))
	t.row("unexpected restarts", fmt.Sprint(res.UnexpectedRestarts))
	t.row("stuck", fmt.Sprint(res.Stuck))
	t.row("job failures", fmt.Sprint(res.JobFailures))
	if len(res.AttacksHeld) > 0 || res.HostileFailures > 0 {
		t.row("hostile failures", fmt.Sprint(res.HostileFailures), fmt.Sprintf("attacks held: %s; %d cut short by the job's end", torture.Counts(res.AttacksHeld), res.AttacksCut))
	}
	kinds := make([]string, 0, len(res.RecoverSeconds))
	for k := range res.RecoverSeconds {
		kinds = append(kinds, string(k))
	}
	sort.Strings(kinds)
	for i, k := range kinds {
		s := res.RecoverSeconds[torture.Kind(k)]
		label := ""
		if i == 0 {
			label = "recover seconds"
		}
		t.row(label, k, fmt.Sprintf("median %s, p99 %s", sec(s.Median), sec(s.P99)))
	}
	for _, p := range res.Problems {
		t.row("problem", p)
	}
	return t.flush()
}
