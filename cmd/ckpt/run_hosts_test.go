package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/capitest/mpitest"
	"github.com/ckpt/ckpt/internal/launch"
)

// The time limit: --time-limit, else Slurm's end from the environment,
// else from squeue; the earlier wins; bad values are usage errors.
func TestRunTimeLimitSources(t *testing.T) {
	now := time.Unix(2_000_000_000, 0)
	env := func(kv ...string) func(string) (string, bool) {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	q := func(v float64) *quantity { return &quantity{v: v, set: true} }
	none := &quantity{}
	squeueCalls := 0
	squeue := func(id string) (time.Time, error) {
		squeueCalls++
		if id != "42" {
			return time.Time{}, fmt.Errorf("no job %s", id)
		}
		return now.Add(2 * time.Hour), nil
	}
	tl, err := runTimeLimit(none, none, now, env(), squeue)
	if err != nil || !tl.Deadline.IsZero() || squeueCalls != 0 {
		t.Fatalf("no limit anywhere: %+v, %v, squeue asked %d times", tl, err, squeueCalls)
	}
	tl, err = runTimeLimit(none, none, now, env("SLURM_JOB_END_TIME", fmt.Sprint(now.Add(time.Hour).Unix()), "SLURM_JOB_ID", "42"), squeue)
	if err != nil || !tl.Deadline.Equal(now.Add(time.Hour)) || tl.From != "SLURM_JOB_END_TIME" || squeueCalls != 0 {
		t.Fatalf("SLURM_JOB_END_TIME: %+v, %v (squeue asked %d times)", tl, err, squeueCalls)
	}
	tl, err = runTimeLimit(none, q(30), now, env("SLURM_JOB_ID", "42"), squeue)
	if err != nil || !tl.Deadline.Equal(now.Add(2*time.Hour)) || tl.From != "squeue" || tl.Margin != 30*time.Second {
		t.Fatalf("squeue: %+v, %v", tl, err)
	}
	// squeue failing leaves the job without an end.
	if tl, err = runTimeLimit(none, none, now, env("SLURM_JOB_ID", "7"), squeue); err != nil || !tl.Deadline.IsZero() {
		t.Fatalf("a failing squeue: %+v, %v", tl, err)
	}
	tl, err = runTimeLimit(q(600), none, now, env("SLURM_JOB_ID", "42"), squeue)
	if err != nil || !tl.Deadline.Equal(now.Add(10*time.Minute)) || tl.From != "--time-limit" {
		t.Fatalf("--time-limit before the allocation's end: %+v, %v", tl, err)
	}
	for _, tc := range []struct {
		limit, before *quantity
		env           func(string) (string, bool)
		mention       string
	}{
		{q(-1), none, env(), "--time-limit"},
		{none, q(0), env(), "--halt-before"},
		{none, q(5), env(), "needs a time limit"},
		{none, none, env("SLURM_JOB_END_TIME", "tomorrow"), "SLURM_JOB_END_TIME"},
		{q(10), q(20), env(), "halt margin"},
	} {
		_, err := runTimeLimit(tc.limit, tc.before, now, tc.env, nil)
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.mention) {
			t.Errorf("want a usage error naming %q, got %v", tc.mention, err)
		}
	}
}

// nodeLossExcluded runs spec's job with node 1 lost (with its cache)
// after its second checkpoint, and checks that the relaunch left node 1
// out, ran on the nodes want names and rebuilt the lost node's part.
func nodeLossExcluded(t *testing.T, spec runSpec, log *bytes.Buffer, want []string) runResult {
	t.Helper()
	spec.keepCache = true
	res := runNodeLoss(t, spec, log)
	if len(res.Excluded) != 1 || res.Excluded[0].Node != "node1" || res.Excluded[0].Launch != 1 || !strings.Contains(res.Excluded[0].Reason, "lost in launch 0") {
		t.Fatalf("excluded %+v, want node1 from launch 1\n%s", res.Excluded, log)
	}
	if got := res.Attempts[1].Nodes; !slices.Equal(got, want) {
		t.Errorf("the relaunch ran on %v, want %v", got, want)
	}
	if _, err := os.Stat(filepath.Join(spec.cacheRoot, "node1")); err == nil {
		t.Errorf("node1's cache came back: a rank ran on the excluded node")
	}
	if !strings.Contains(log.String(), "node node1 excluded (lost in launch 0)") {
		t.Errorf("no progress line says node1 was excluded:\n%s", log)
	}
	return res
}

// A node lost with a spare: its rank goes to the spare, node4, which
// rebuilds its part from the XOR parity of the others.
func TestRunNodeLossUsesSpare(t *testing.T) {
	spec, log := jobSpec(t)
	spec.spares = 1
	nodeLossExcluded(t, spec, log, []string{"node0", "node4", "node2", "node3"})
	ents, err := os.ReadDir(filepath.Join(spec.cacheRoot, "node4"))
	if err != nil || len(ents) == 0 {
		t.Errorf("the spare's cache: %d entries, %v", len(ents), err)
	}
	if !strings.Contains(log.String(), "its ranks go to spare node node4") {
		t.Errorf("no progress line names the spare:\n%s", log)
	}
}

// Without a spare, sets of 2 still fit on 3 nodes: the job shrinks, and
// node1's rank goes to the first of the others.
func TestRunNodeLossShrinks(t *testing.T) {
	spec, log := jobSpec(t)
	spec.redundancy = "xor:2"
	nodeLossExcluded(t, spec, log, []string{"node0", "node2", "node3"})
	if !strings.Contains(log.String(), "no spare left, its ranks go to the other nodes (3 now)") {
		t.Errorf("no progress line says the job shrank:\n%s", log)
	}
}

// The same under a real mpirun: 2 nodes and a spare.
func TestRunUnderMPIRunNodeLossUsesSpare(t *testing.T) {
	mpitest.RequireTools(t, "mpirun")
	spec, log := jobSpec(t)
	underLauncher(t, &spec, launch.LauncherMPIRun)
	spec.spares = 1
	nodeLossExcluded(t, spec, log, []string{"node0", "node2"})
	// The relaunch is pinned, every node on this host (where each rank
	// ran, and the failed node1's, which the spare takes): mpirun took
	// the host file of its sequential mapper (--map-by seq).
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("pinned: node0 on %s, node2 on %s", host, host); !strings.Contains(log.String(), want) {
		t.Errorf("no progress line says %q:\n%s", want, log)
	}
}

// The same under the fake srun: the relaunch's CKPT_NODES names the spare
// instead of node1. Every rank ran on this host, which the relaunch cannot
// leave out: srun gets no --exclude, and every task is pinned to it.
func TestRunUnderFakeSrunNodeLossUsesSpare(t *testing.T) {
	dir := fakeSrun(t)
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	spec, log := jobSpec(t)
	underLauncher(t, &spec, launch.LauncherSrun)
	spec.spares = 1
	nodeLossExcluded(t, spec, log, []string{"node0", "node2"})
	calls, err := os.ReadFile(filepath.Join(dir, "srun.log"))
	if err != nil {
		t.Fatal(err)
	}
	// The relaunch is pinned: a host per task, this one, where every
	// rank ran (the fake srun sets no SLURMD_NODENAME).
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	pinned := strings.Repeat(host+",", 3) + host
	lines := strings.Split(strings.TrimSpace(string(calls)), "\n")
	if len(lines) != 2 || !strings.HasSuffix(lines[0], "nodes=node0,node1 exclude= pinned= jobid=4242") || !strings.HasSuffix(lines[1], "nodes=node0,node2 exclude= pinned="+pinned+" jobid=4242") {
		t.Errorf("srun's calls (want the relaunch pinned=%s):\n%s", pinned, calls)
	}
}

// everyLaunchLosesANode is spec's launch configuration with the first
// node of every launch lost as soon as the launch starts.
func everyLaunchLosesANode(t *testing.T, spec runSpec) (launch.Config, *launch.Coordinators) {
	t.Helper()
	cfg, coords, err := spec.config()
	if err != nil {
		t.Fatal(err)
	}
	inject := make(chan []int, 8)
	cfg.Inject, cfg.NodeFailures = inject, true
	event := cfg.Event
	cfg.Event = func(e launch.Event) {
		if e.Kind == "launch" {
			inject <- []int{0} // the first node of this launch
		}
		event(e)
	}
	return cfg, coords
}

// Every launch loses a node at once. The job shrinks while its sets of 2
// fit (3 nodes, then 2), then keeps the last nodes; the retries run out
// and the error says what each launch ran on and how it ended, and which
// nodes were excluded.
func TestRunEveryNodeFails(t *testing.T) {
	spec, log := jobSpec(t)
	spec.redundancy, spec.retries = "xor:2", 3
	cfg, coords := everyLaunchLosesANode(t, spec)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	res, err := spec.launch(ctx, cfg, coords)
	if !errors.Is(err, launch.ErrRetriesExhausted) {
		t.Fatalf("error %v, want the retries exhausted\n%s", err, log)
	}
	if len(res.Attempts) != 4 {
		t.Fatalf("%d attempts, want 4", len(res.Attempts))
	}
	for _, want := range []string{
		"launch 0 on node0,node1,node2,node3: injected failure: node 0 lost",
		"launch 1 on node1,node2,node3: injected failure: node 1 lost",
		"launch 2 on node2,node3: injected failure: node 2 lost",
		"launch 3 on node2,node3: injected failure: node 2 lost",
		"excluded: node0 (lost in launch 0, from launch 1), node1 (lost in launch 1, from launch 2)",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error lacks %q:\n%v", want, err)
		}
	}
	if !strings.Contains(log.String(), "node node2 kept (lost in launch 2) as a replacement with an empty cache: no spare, and 1 node cannot hold") {
		t.Errorf("no progress line says why node2 was kept:\n%s", log)
	}
}

// A launcher that fails on its own arguments, before any rank joined, is
// not launched again: one attempt, and the error quotes it.
func TestRunLauncherBadArguments(t *testing.T) {
	dir := fakeSrun(t)
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	for _, tc := range []struct{ kind, arg, says string }{
		{launch.LauncherSrun, "--bogus", "unknown option --bogus"},
		{launch.LauncherMPIRun, "--no-such-option-of-ckpt", "mpirun (all ranks) exited with status"},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			if tc.kind == launch.LauncherMPIRun {
				mpitest.RequireTools(t, "mpirun")
			}
			launchGivesUpOnItsArguments(t, tc.kind, tc.arg, "failed before any rank joined", tc.says)
		})
	}
}

// launchGivesUpOnItsArguments runs a job whose launcher (kind) is given
// arg, which it refuses: one attempt, given up as a configuration error
// whose message holds each of says.
func launchGivesUpOnItsArguments(t *testing.T, kind, arg string, says ...string) {
	t.Helper()
	spec, log := jobSpec(t)
	spec.nodes, spec.redundancy = 2, "xor:2"
	l, err := launch.NewExternal(kind, []string{arg})
	if err != nil {
		t.Fatal(err)
	}
	spec.launcher = l
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	res, err := spec.run(ctx)
	if !errors.Is(err, launch.ErrGaveUp) || len(res.Attempts) != 1 || res.Class != launch.ClassConfig {
		t.Fatalf("error %v, %d attempts, class %q: want one attempt, given up as a configuration error\n%s", err, len(res.Attempts), res.Class, log)
	}
	for _, s := range says {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("the error does not say what failed (%q): %v", s, err)
		}
	}
}

// neverJoins is a rank program: rank 1 sleeps without joining, every
// other rank runs the test binary's himeno.
func neverJoins(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "rank.sh")
	script := "#!/bin/sh\nr=${CKPT_RANK:-${SLURM_PROCID:-${OMPI_COMM_WORLD_RANK:-0}}}\n" +
		"[ \"$r\" = 1 ] && exec sleep 600\nexec \"" + exe + "\" \"$@\"\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// Rank 1 never joins: the launch times out, naming rank 1, its node and
// its host (this one under the local launcher, unknown under mpirun or
// srun, which place ranks themselves).
func TestRunRanksNeverJoin(t *testing.T) {
	dir := fakeSrun(t)
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	host, _ := os.Hostname()
	for _, kind := range []string{launch.LauncherLocal, launch.LauncherMPIRun, launch.LauncherSrun} {
		t.Run(kind, func(t *testing.T) {
			spec, log := jobSpec(t)
			spec.nodes, spec.redundancy, spec.retries = 2, "xor:2", 0
			spec.joinTimeout = 4 * time.Second
			spec.program = neverJoins(t)
			where := "host " + host
			if kind != launch.LauncherLocal {
				if kind == launch.LauncherMPIRun {
					mpitest.RequireTools(t, "mpirun")
				}
				l, err := launch.NewExternal(kind, nil)
				if err != nil {
					t.Fatal(err)
				}
				spec.launcher, where = l, "host unknown: placed by "+kind
			}
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			res, err := spec.run(ctx)
			if !errors.Is(err, launch.ErrRetriesExhausted) || len(res.Attempts) != 1 {
				t.Fatalf("error %v, %d attempts: want the one launch timed out\n%s", err, len(res.Attempts), log)
			}
			f := res.Attempts[0].Failure
			if !strings.Contains(f, "did not join within the join timeout") || !strings.Contains(f, "not joined: ") ||
				!strings.Contains(f, "rank 1 (node node0, "+where) {
				t.Errorf("the failure %q does not name rank 1, its node and its host (%s)", f, where)
			}
		})
	}
}

// A time limit reached mid-run: the job checkpoints and halts before it,
// ckpt run exits 3 saying so; the same command again resumes from that
// checkpoint, and halts again. Under the local launcher and the fake srun:
// the halt reaches the ranks through the coordinator, wherever they run.
func TestRunTimeLimitHaltsAndResumes(t *testing.T) {
	t.Setenv(asCkpt, "1")
	dir := fakeSrun(t)
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{launch.LauncherLocal, launch.LauncherSrun} {
		t.Run(kind, func(t *testing.T) {
			// Far more work than the limit: the job is always mid-run when
			// the halt comes (5 s in), and killed only if it has not
			// halted 15 s later.
			args := []string{"run", "--launcher", kind, "-n", "2", "--nodes", "2", "--redundancy", "xor:2", "--interval", "5steps",
				"--time-limit", "20s", "--halt-before", "15s", "--json",
				"--cache-root", filepath.Join(t.TempDir(), "job"), "--", exe, "example", "himeno", "--size", "xs", "--iterations", "10000000"}
			for i := range 2 {
				code, stdout, stderr := runCLI(t, args...)
				if code != exitTimeLimit {
					t.Fatalf("run %d: exit %d, want %d\n%s", i, code, exitTimeLimit, stderr)
				}
				obj := decodeOne(t, stdout)
				if obj["halted"] != true || obj["time_limit"] != true || !strings.Contains(fmt.Sprint(obj["error"]), "halted for the time limit (--time-limit") {
					t.Errorf("run %d: halted %v, time_limit %v, error %v", i, obj["halted"], obj["time_limit"], obj["error"])
				}
				if !strings.Contains(stderr, "time limit: halt requested") || !strings.Contains(stderr, "run the same command again") {
					t.Errorf("run %d: the progress does not say why it halted:\n%s", i, stderr)
				}
				if i > 0 && !strings.Contains(stderr, " from cache") {
					t.Errorf("run %d did not resume from the first one's checkpoint:\n%s", i, stderr)
				}
			}
		})
	}
}
