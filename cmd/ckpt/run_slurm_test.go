package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
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
	c := slurmtest.Start(t, slurmtest.Options{Nodes: 3, CPUs: 2})
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
// spare rebuilds node1's part from the XOR parity. Once with each srun
// its own allocation (a job per launch), once inside one allocation of
// the three nodes (a step per launch), as in a batch script.
func TestRunUnderSlurmExcludesLostNode(t *testing.T) {
	c := slurmCluster(t)
	t.Run("own allocation", func(t *testing.T) { slurmNodeLoss(t, c) })
	t.Run("in an allocation", func(t *testing.T) {
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
		// What a batch script of the allocation has: srun then runs
		// steps in it, and would ask for all three nodes
		// (SLURM_NNODES) without ckpt's --nodes.
		t.Setenv("SLURM_JOB_ID", id)
		t.Setenv("SLURM_NNODES", "3")
		slurmNodeLoss(t, c)
	})
}

func slurmNodeLoss(t *testing.T, c *slurmtest.Cluster) {
	spec, log := jobSpec(t)
	spec.keepCache, spec.spares = true, 1
	underLauncher(t, &spec, launch.LauncherSrun)
	exe := spec.program
	spec.program = "/bin/sh"
	spec.args = append([]string{"-c", `echo "slurm-task inc=$CKPT_INCARNATION rank=$SLURM_PROCID node=$SLURMD_NODENAME"; exec "$0" "$@"`, exe}, spec.args...)
	res := runNodeLoss(t, spec, log)
	if t.Failed() {
		t.Logf("slurmctld.log:\n%s", c.Log("slurmctld.log"))
	}
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
		t.Errorf("the relaunch's ranks ran on Slurm nodes %v, want n1 n1 n3 n3 (n2 excluded)\n%s", got, log)
	}
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
