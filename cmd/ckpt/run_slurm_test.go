package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/launch"
	"github.com/ckpt/ckpt/internal/slurmtest"
)

// slurmCluster is the real Slurm cluster of the tests below
// (internal/slurmtest): three nodes, n1 to n3, of two CPUs each, its
// clients on PATH and pointed at it (SLURM_CONF) for the rest of t.
func slurmCluster(t *testing.T) *slurmtest.Cluster {
	t.Helper()
	return slurmClusterOf(t, 3)
}

// slurmClusterOf is slurmCluster with nodes nodes.
func slurmClusterOf(t *testing.T, nodes int) *slurmtest.Cluster {
	t.Helper()
	c := slurmtest.Start(t, slurmtest.Options{Nodes: nodes, CPUs: 2})
	for _, kv := range c.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	// Outside an allocation, whatever the test runs in.
	for _, k := range []string{"SLURM_JOB_ID", "SLURM_JOBID", "SLURM_NNODES", "SLURM_JOB_NUM_NODES", "SLURM_JOB_END_TIME"} {
		if _, ok := os.LookupEnv(k); ok {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
	}
	return c
}

// slurmTask is what each task of the job printed before it ran the
// rank: the launch (CKPT_INCARNATION), its rank (SLURM_PROCID) and its
// Slurm node (SLURMD_NODENAME).
var slurmTask = regexp.MustCompile(`slurm-task inc=(\d+) rank=(\d+) node=(\S+)`)

// srunSpareSpec is a job under srun with one spare node whose caches
// outlive a launch, each task printing its slurmTask line before it runs
// the rank.
func srunSpareSpec(t *testing.T) (runSpec, *bytes.Buffer) {
	spec, log := jobSpec(t)
	spec.keepCache, spec.spares = true, 1
	underLauncher(t, &spec, launch.LauncherSrun)
	printTasks(&spec)
	return spec, log
}

// printTasks makes each task of spec's job print its slurmTask line
// before it runs the rank.
func printTasks(spec *runSpec) {
	exe := spec.program
	spec.program = "/bin/sh"
	spec.args = append([]string{"-c", `echo "slurm-task inc=$CKPT_INCARNATION rank=$SLURM_PROCID node=$SLURMD_NODENAME"; exec "$0" "$@"`, exe}, spec.args...)
}

// slurmNodes are the Slurm nodes of each launch's ranks, as the tasks
// printed them: nodes[inc][rank].
func slurmNodes(t *testing.T, log string, ranks int) map[int][]string {
	t.Helper()
	out := map[int][]string{}
	for _, m := range slurmTask.FindAllStringSubmatch(log, -1) {
		inc, _ := strconv.Atoi(m[1])
		r, _ := strconv.Atoi(m[2])
		if r >= ranks {
			t.Fatalf("task of rank %d in a job of %d:\n%s", r, ranks, log)
		}
		if out[inc] == nil {
			out[inc] = make([]string, ranks)
		}
		out[inc][r] = m[3]
	}
	return out
}

// The job runs through a real srun, on Slurm nodes n1 and n2, its two
// nodes one Slurm node each (--nodes, --ntasks-per-node). Node1 is lost
// (its ranks, on n2, killed by their pids, and its cache deleted): its
// ranks go to the spare node2, n2 is left out of the relaunch
// (--exclude=n2), and Slurm runs the relaunch on n1 and n3, where the
// spare rebuilds node1's part from the XOR parity. Once outside an
// allocation (ckpt holds one of its own for the job, every launch a step
// of it), once inside one allocation of the three nodes, as in a batch
// script.
func TestRunUnderSlurmExcludesLostNode(t *testing.T) {
	c := slurmCluster(t)
	t.Run("allocation held by ckpt", func(t *testing.T) { slurmNodeLoss(t, c) })
	t.Run("in an allocation", func(t *testing.T) {
		inAllocation(t, c)
		slurmNodeLoss(t, c)
	})
}

// Each node of the job stays on its Slurm node across launches: node0 is
// lost (on n1), its ranks go to the spare node2, and the relaunch puts
// node1 back on n2, where its cache is, and the spare on the free n3 —
// not, as srun's block distribution over the nodes left would, node2 on
// n2 and node1 on n3 (ckpt's pin: SLURM_HOSTFILE and
// --distribution=arbitrary). Once outside an allocation (ckpt holds
// one), once inside one.
func TestRunUnderSlurmPinsNodes(t *testing.T) {
	c := slurmCluster(t)
	t.Run("allocation held by ckpt", func(t *testing.T) { slurmPinned(t, c) })
	t.Run("in an allocation", func(t *testing.T) {
		inAllocation(t, c)
		slurmPinned(t, c)
	})
}

func slurmPinned(t *testing.T, c *slurmtest.Cluster) {
	spec, log := srunSpareSpec(t)
	res := runScripted(t, spec, log, func(cfg *launch.Config, coords *launch.Coordinators) {
		injectAfter(cfg, coords, 0)
		cfg.NodeFailures = true
	})
	if t.Failed() {
		t.Logf("slurmctld.log:\n%s", c.Log("slurmctld.log"))
	}
	if len(res.Attempts) != 2 || res.Restarts["rebuild"] != 1 {
		t.Fatalf("attempts %d, restarts %v: want one relaunch rebuilding node0's part\n%s", len(res.Attempts), res.Restarts, log)
	}
	if got := res.Attempts[1].Nodes; !slices.Equal(got, []string{"node2", "node1"}) {
		t.Errorf("the relaunch ran on %v, want the spare node2 (node0's ranks) and node1", got)
	}
	nodes := slurmNodes(t, log.String(), 4)
	if got := nodes[0]; !slices.Equal(got, []string{"n1", "n1", "n2", "n2"}) {
		t.Errorf("the first launch's ranks ran on Slurm nodes %v, want n1 n1 n2 n2\n%s", got, log)
	}
	if got := nodes[1]; !slices.Equal(got, []string{"n3", "n3", "n2", "n2"}) {
		t.Errorf("the relaunch's ranks ran on Slurm nodes %v, want n3 n3 n2 n2 (node1 kept on n2, the spare on n3)\n%s", got, log)
	}
	if !strings.Contains(log.String(), "pinned: node2 on n3, node1 on n2") {
		t.Errorf("no progress line says where the relaunch pinned the nodes:\n%s", log)
	}
}

// inAllocation makes an allocation of the cluster's three nodes (salloc
// --no-shell), cancelled when t ends, and puts t where a batch script of
// it would be: srun then runs steps in it (SLURM_JOB_ID), and would ask
// for all three nodes (SLURM_NNODES) without ckpt's --nodes.
func inAllocation(t *testing.T, c *slurmtest.Cluster) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	out, err := c.Command(ctx, "salloc", "--no-shell", "-N", "3", "--exclusive", "-t", "10", "-J", "ckpt-test").CombinedOutput()
	m := regexp.MustCompile(`Granted job allocation (\d+)`).FindSubmatch(out)
	if err != nil || m == nil {
		t.Fatalf("salloc: %v\n%s", err, out)
	}
	id := string(m[1])
	t.Cleanup(func() {
		if out, err := c.Command(context.Background(), "scancel", id).CombinedOutput(); err != nil {
			t.Errorf("scancel %s: %v\n%s", id, err, out)
		}
	})
	t.Setenv("SLURM_JOB_ID", id)
	t.Setenv("SLURM_NNODES", "3")
}

// checkSpareRelaunch checks a job of 4 ranks on node0 and node1 (Slurm
// nodes n1 and n2) with the spare node2 (n3) after node1 was lost: node1
// excluded, the relaunch on node0 and the spare, n2 left out.
func checkSpareRelaunch(t *testing.T, res runResult, log fmt.Stringer) {
	t.Helper()
	if len(res.Excluded) != 1 || res.Excluded[0].Node != "node1" {
		t.Fatalf("excluded %+v, want node1\n%s", res.Excluded, log)
	}
	if got := res.Attempts[1].Nodes; !slices.Equal(got, []string{"node0", "node2"}) {
		t.Errorf("the relaunch ran on %v, want node0 and the spare node2", got)
	}
	nodes := slurmNodes(t, log.String(), 4)
	if got := nodes[0]; !slices.Equal(got, []string{"n1", "n1", "n2", "n2"}) {
		t.Errorf("the first launch's ranks ran on Slurm nodes %v, want n1 n1 n2 n2 (one Slurm node per node of the job)\n%s", got, log)
	}
	if got := nodes[1]; !slices.Equal(got, []string{"n1", "n1", "n3", "n3"}) {
		t.Errorf("the relaunch's ranks ran on Slurm nodes %v, want n1 n1 n3 n3 (the spare on the free n3, n2 left out)\n%s", got, log)
	}
}

func slurmNodeLoss(t *testing.T, c *slurmtest.Cluster) {
	spec, log := srunSpareSpec(t)
	res := runNodeLoss(t, spec, log)
	if t.Failed() {
		t.Logf("slurmctld.log:\n%s", c.Log("slurmctld.log"))
	}
	checkSpareRelaunch(t, res, log)
	if !strings.Contains(log.String(), "node node1 excluded (lost in launch 0): its ranks go to spare node node2") {
		t.Errorf("no progress line says node1 went to the spare:\n%s", log)
	}
}

// Inside an allocation with a time limit, ckpt run takes the
// allocation's end (SLURM_JOB_END_TIME where Slurm sets it, which
// Debian 12's Slurm 22.05 does not; else squeue's), checkpoints and
// halts --halt-before it, and exits with status 3.
func TestRunInSlurmAllocationHaltsBeforeItsEnd(t *testing.T) {
	c := slurmCluster(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// Five minutes (salloc -t 5), the halt asked for 240 s before
	// their end: about a minute into the job (time enough to start on a
	// busy machine: an end nearer than the margin is refused), far from
	// its end (ten million iterations), whatever the machine's load.
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	cmd := c.Command(ctx, "salloc", "-N", "2", "-t", "5", "-J", "ckpt-test", "--",
		exe, "run", "--launcher", "srun", "-n", "2", "--nodes", "2", "--redundancy", "xor:2", "--interval", "5steps",
		"--halt-before", "240s", "--json", "--cache-root", filepath.Join(t.TempDir(), "job"),
		"--", exe, "example", "himeno", "--size", "xs", "--iterations", "10000000")
	cmd.Env = append(cmd.Env, asCkpt+"=1")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitTimeLimit {
		t.Fatalf("salloc ckpt run: %v, want exit status %d\n%s", err, exitTimeLimit, stderr.String())
	}
	obj := decodeOne(t, stdout.String())
	msg := fmt.Sprint(obj["error"])
	if obj["halted"] != true || obj["time_limit"] != true || !strings.Contains(msg, "halted for the time limit") {
		t.Errorf("halted %v, time_limit %v, error %v", obj["halted"], obj["time_limit"], msg)
	}
	if !strings.Contains(msg, "(squeue:") && !strings.Contains(msg, "(SLURM_JOB_END_TIME:") {
		t.Errorf("the time limit came from neither squeue nor SLURM_JOB_END_TIME: %s", msg)
	}
	t.Logf("the allocation's end came from: %s", msg)
}

// slurmAllocations are the node lists slurmctld gave the jobs it ran, in
// the order of their ids, as its log says (the first "JobId=N
// NodeList=n1,n[3-5]" of each job), each expanded by scontrol.
func slurmAllocations(t *testing.T, c *slurmtest.Cluster) [][]string {
	t.Helper()
	var out [][]string
	seen := map[string]bool{}
	for _, m := range regexp.MustCompile(`JobId=(\d+) NodeList=(n[^\s]*)`).FindAllStringSubmatch(c.Log("slurmctld.log"), -1) {
		if seen[m[1]] {
			continue
		}
		seen[m[1]] = true
		b, err := c.Command(t.Context(), "scontrol", "show", "hostnames", m[2]).Output()
		if err != nil {
			t.Fatalf("scontrol show hostnames %s: %v", m[2], err)
		}
		out = append(out, strings.Fields(string(b)))
	}
	return out
}

// ckpt demo --launcher srun on a real Slurm cluster of five nodes, the
// demo's four and a spare: every run of the demo goes through srun, each
// of its nodes one Slurm node, each job in an allocation of the five that
// ckpt holds. The node lost at the start of the run with failures
// (TestDemoJSON's schedule) goes to the spare, its Slurm node is left out
// of the relaunch, which puts the spare on the spare Slurm node n5, and
// the result matches the failure-free reference.
func TestDemoUnderSlurm(t *testing.T) {
	c := slurmClusterOf(t, 5)
	t.Setenv(asCkpt, "1")
	code, stdout, stderr := runCLI(t, "demo", "--launcher", "srun", "--spares", "1", "--size", "xs", "--iterations", "150",
		"--mtti", "20s", "--seed", "474644", "--json")
	if code != exitOK {
		t.Fatalf("exit %d\n%s\nslurmctld.log:\n%s", code, stderr, c.Log("slurmctld.log"))
	}
	var obj struct {
		Match    bool               `json:"result_matches_reference"`
		Injected int                `json:"failures_injected"`
		Launcher string             `json:"launcher"`
		Excluded []launch.Exclusion `json:"excluded_nodes"`
	}
	if err := json.Unmarshal([]byte(stdout), &obj); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	if !obj.Match || obj.Launcher != "srun" || obj.Injected < 1 || len(obj.Excluded) < 1 {
		t.Errorf("%+v\n%s", obj, stderr)
	}
	if !strings.Contains(stderr, "its ranks go to spare node node4") {
		t.Errorf("no spare used:\n%s", stderr)
	}
	// Each of the demo's jobs held one allocation of the five nodes
	// (ckpt run outside one holds its own), every launch a step of it.
	// The relaunch after the loss was pinned with the spare node4 on the
	// free n5, and no node on the lost node's Slurm node (the first
	// launch put node K on n(K+1)).
	allocs := slurmAllocations(t, c)
	for _, a := range allocs {
		if !slices.Equal(a, []string{"n1", "n2", "n3", "n4", "n5"}) {
			t.Errorf("an allocation of Slurm nodes %v, want the five", a)
		}
	}
	if n := strings.Count(stderr, "holding allocation "); len(allocs) == 0 || n != len(allocs) || n != strings.Count(stderr, "s  launch\n") {
		t.Errorf("%d allocations, %d said held, want one per job:\n%s", len(allocs), n, stderr)
	}
	var lost string
	if len(obj.Excluded) > 0 {
		k, err := strconv.Atoi(strings.TrimPrefix(obj.Excluded[0].Node, "node"))
		if err != nil {
			t.Fatalf("excluded node %q", obj.Excluded[0].Node)
		}
		lost = slurmtest.NodeName(k)
	}
	pin := regexp.MustCompile(`pinned: .*node4 on n5.*`).FindString(stderr)
	if pin == "" || lost == "" || regexp.MustCompile(`on `+lost+`\b`).MatchString(pin) {
		t.Errorf("the relaunch's pin %q: want the spare node4 on n5 and nothing on %s, the lost node's\n%s", pin, lost, stderr)
	}
	noJobsLeft(t, c)
	t.Logf("Slurm's allocations: %v; %s", allocs, pin)
}

// Issue 15's relaunch goal under the real srun (measureRelaunch), once
// outside an allocation (ckpt holds one for each job, every launch a step
// of it) and once inside one (a step per launch, as SCR's scr_srun loop
// runs in a batch script): the relaunch after a node loss runs on the
// spare's Slurm node with the lost one excluded, the restart alone on the
// first two; both rebuild the lost node's part and end with the
// failure-free result.
func TestSlurmRelaunchAgainstRestart(t *testing.T) {
	c := slurmCluster(t)
	t.Run("allocation held by ckpt", func(t *testing.T) {
		spec, log := jobSpec(t)
		underLauncher(t, &spec, launch.LauncherSrun)
		before := len(slurmAllocations(t, c))
		measureRelaunch(t, spec, log)
		if t.Failed() {
			t.Logf("slurmctld.log:\n%s", c.Log("slurmctld.log"))
		}
		// Three jobs (the one with the node loss, the one halted, its
		// restart alone), each one allocation of its 2 nodes and spare,
		// held from its first launch to its end: no allocation per
		// launch.
		want := [][]string{{"n1", "n2", "n3"}, {"n1", "n2", "n3"}, {"n1", "n2", "n3"}}
		if got := slurmAllocations(t, c)[before:]; !slices.EqualFunc(got, want, slices.Equal) {
			t.Errorf("Slurm's allocations %v, want %v", got, want)
		}
		if n := strings.Count(log.String(), "holding allocation "); n != 3 {
			t.Errorf("%d jobs said they held an allocation, want 3:\n%s", n, log)
		}
		noJobsLeft(t, c)
	})
	t.Run("in an allocation", func(t *testing.T) {
		inAllocation(t, c)
		spec, log := jobSpec(t)
		underLauncher(t, &spec, launch.LauncherSrun)
		measureRelaunch(t, spec, log)
		if t.Failed() {
			t.Logf("slurmctld.log:\n%s", c.Log("slurmctld.log"))
		}
	})
}

// noJobsLeft waits (at most two minutes: completing jobs end in seconds)
// for the cluster to have no job, and fails t with squeue's list if it
// still has one.
func noJobsLeft(t *testing.T, c *slurmtest.Cluster) {
	t.Helper()
	var out []byte
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var err error
		out, err = c.Command(t.Context(), "squeue", "-h", "-o", "%i %j %T").CombinedOutput()
		if err != nil {
			t.Fatalf("squeue: %v\n%s", err, out)
		}
		if len(bytes.TrimSpace(out)) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond) // polling squeue, not waiting for luck
	}
	if len(bytes.TrimSpace(out)) != 0 {
		t.Errorf("jobs left behind (squeue):\n%s", out)
	}
}

// ckpt run --launcher srun outside an allocation holds one (salloc) and
// releases it on every end: stopped mid-job by SIGTERM or SIGINT, it
// leaves no allocation behind once it exited (squeue lists no job).
func TestSlurmHeldAllocationReleasedOnSignal(t *testing.T) {
	c := slurmCluster(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(launch.SignalName(sig), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
			defer cancel()
			// Far more work than the test waits: mid-run when the signal
			// comes.
			cmd := c.Command(ctx, exe, "run", "--launcher", "srun", "-n", "2", "--nodes", "2", "--spares", "1",
				"--redundancy", "xor:2", "--interval", "5steps", "--cache-root", filepath.Join(t.TempDir(), "job"),
				"--", exe, "example", "himeno", "--size", "xs", "--iterations", "10000000")
			cmd.Env = append(cmd.Env, asCkpt+"=1")
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var text strings.Builder
			sc := bufio.NewScanner(stderr)
			for sc.Scan() {
				text.WriteString(sc.Text() + "\n")
				if strings.Contains(sc.Text(), "committed") {
					break // mid-job: a checkpoint taken, the allocation held
				}
			}
			out, err := c.Command(ctx, "squeue", "-h", "-o", "%i %j %T").CombinedOutput()
			if err != nil || !regexp.MustCompile(`(?m)^\d+ ckpt-\w+ RUNNING$`).Match(out) {
				t.Errorf("mid-job, squeue (%v) does not list the allocation ckpt holds:\n%s", err, out)
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			rest, _ := io.ReadAll(stderr)
			text.Write(rest)
			err = cmd.Wait()
			if err == nil || ctx.Err() != nil {
				t.Errorf("ckpt run after %s: %v, want it stopped by the signal\n%s", launch.SignalName(sig), err, text.String())
			}
			if !strings.Contains(text.String(), "holding allocation ") {
				t.Errorf("ckpt run did not say it held an allocation:\n%s", text.String())
			}
			noJobsLeft(t, c)
		})
	}
}

// The failures of issue 15 under the real srun: a launcher that fails on
// its own arguments is not launched again; ranks that never join time
// the launch out naming them; and a job whose every launch loses a node
// runs out of Slurm nodes, each lost one excluded, and says what it
// tried.
func TestSlurmLaunchFailures(t *testing.T) {
	c := slurmCluster(t)
	t.Run("bad arguments", func(t *testing.T) {
		launchGivesUpOnItsArguments(t, launch.LauncherSrun, "--no-such-option-of-ckpt", "srun failed before any rank joined", "no-such-option-of-ckpt")
	})
	t.Run("ranks never join", func(t *testing.T) {
		spec, log := jobSpec(t)
		spec.nodes, spec.redundancy, spec.retries = 2, "xor:2", 0
		spec.joinTimeout = 4 * time.Second
		spec.program = neverJoins(t)
		l, err := launch.NewExternal(launch.LauncherSrun, nil)
		if err != nil {
			t.Fatal(err)
		}
		spec.launcher = l
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		defer cancel()
		res, err := spec.run(ctx)
		if !errors.Is(err, launch.ErrRetriesExhausted) || len(res.Attempts) != 1 {
			t.Fatalf("error %v, %d attempts: want the one launch timed out\n%s", err, len(res.Attempts), log)
		}
		if f := res.Attempts[0].Failure; !strings.Contains(f, "did not join within the join timeout") ||
			!strings.Contains(f, "rank 1 (node node0, host unknown: placed by srun") {
			t.Errorf("the failure %q does not name rank 1, its node and that srun placed it", f)
		}
	})
	// 2 nodes and a spare, XOR across the 2, on three Slurm nodes: each
	// launch loses its first node. Node0 goes to the spare and its Slurm
	// node is excluded from every later launch; then no spare is left
	// and one node cannot hold the sets of 2, so the lost node is kept
	// (with an empty cache) until the retries run out, and the error
	// says what each launch ran on and how it ended.
	t.Run("every node fails", func(t *testing.T) {
		spec, log := jobSpec(t)
		underLauncher(t, &spec, launch.LauncherSrun)
		spec.retries, spec.spares = 3, 1
		printTasks(&spec)
		cfg, coords := everyLaunchLosesANode(t, spec)
		before := len(slurmAllocations(t, c))
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
		defer cancel()
		res, err := spec.launch(ctx, cfg, coords)
		if !errors.Is(err, launch.ErrRetriesExhausted) || len(res.Attempts) != 4 {
			t.Fatalf("error %v, %d attempts: want the retries exhausted after 4\n%s", err, len(res.Attempts), log)
		}
		for _, want := range []string{
			"launch 0 on node0,node1: injected failure: node 0 lost",
			"launch 1 on node2,node1: injected failure: node 2 lost",
			"launch 3 on node2,node1: injected failure: node 2 lost",
			"excluded: node0 (lost in launch 0, from launch 1)",
		} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("the error lacks %q:\n%v", want, err)
			}
		}
		// One allocation, ckpt's, of the 3 nodes; the first launch's
		// tasks on n1 and n2, every relaunch's off n1, where the lost
		// node0 ran.
		allocs := slurmAllocations(t, c)[before:]
		if len(allocs) != 1 || !slices.Equal(allocs[0], []string{"n1", "n2", "n3"}) {
			t.Fatalf("Slurm's allocations %v, want one, of n1 to n3\n%s", allocs, log)
		}
		nodes := slurmNodes(t, log.String(), 4)
		if got := nodes[0]; !slices.Equal(got, []string{"n1", "n1", "n2", "n2"}) {
			t.Errorf("the first launch's tasks ran on %v, want n1 n1 n2 n2\n%s", got, log)
		}
		if len(nodes[1]) != 4 || slices.Contains(nodes[1], "") {
			t.Errorf("the first relaunch's tasks on %v: not every task said where it ran\n%s", nodes[1], log)
		}
		for inc := 1; inc < 4; inc++ {
			if slices.Contains(nodes[inc], "n1") {
				t.Errorf("relaunch %d's tasks ran on Slurm nodes %v, with n1, where the lost node0 ran", inc, nodes[inc])
			}
		}
		noJobsLeft(t, c)
	})
}
