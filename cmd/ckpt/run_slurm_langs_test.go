package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/capitest/mpitest"
	"github.com/ckpt/ckpt/internal/jobenv"
	"github.com/ckpt/ckpt/internal/launch"
	"github.com/ckpt/ckpt/internal/policy"
)

// The C and Python applications of ckpt's SCR-compatible library under
// `ckpt run --launcher srun` on the real Slurm cluster (the Go ones are
// in run_slurm_test.go). Their ranks are one MPI job: srun starts them
// through Slurm's PMIx plugin (--launcher-args --mpi=pmix; without it
// Debian's Open MPI refuses to start under srun), and Open MPI's TCP
// transport (OMPI_MCA_btl=self,tcp) carries their messages: the test
// cluster's nodes share one machine, where Open MPI's shared-memory
// transport would name its segments after the host alone and collide.

// srunMPI is the srun launcher of an MPI application.
func srunMPI(t *testing.T) *launch.External {
	t.Helper()
	l, err := launch.NewExternal(launch.LauncherSrun, []string{"--mpi=pmix"})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("OMPI_MCA_btl", "self,tcp")
	t.Setenv("OMPI_MCA_mpi_yield_when_idle", "1")
	return l
}

// heatSummary is examples/heat-c's last line: iteration, iterations,
// checkpoints, total heat, state.
var heatSummary = regexp.MustCompile(`heat: iteration (\d+) of (\d+), (\d+) checkpoints, .*total heat ([0-9.]+), state ([0-9a-f]{16})`)

// The SCR C example examples/heat-c, 4 ranks on 2 nodes and a spare,
// XOR across the 2, through the real srun: its first launch runs on
// Slurm nodes n1 n1 n2 n2. After its second checkpoint node1 is lost
// (its two ranks killed by their pids, its cache deleted): the job's
// srun step ends, node1's ranks go to the spare node2, Slurm node n2 is
// left out, and the relaunch runs on n1 n1 n3 n3, where heat restarts
// from its newest checkpoint (node1's part rebuilt from the parity onto
// the spare) and ends in the same state, to the bit, as a run without
// failures, its result written as an output dataset under SCR_PREFIX.
func TestRunCUnderSlurmExcludesLostNode(t *testing.T) {
	c := slurmCluster(t)
	prefix := mpitest.Install(t)
	root, err := mpitest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	heat := mpitest.Build(t, prefix, filepath.Join(root, "examples", "heat-c", "heat.c"))
	args := []string{"48", "40", "60"}
	l := srunMPI(t)

	// The failure-free state: the same 4 ranks without ckpt or SCR.
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := c.Command(ctx, "srun", append([]string{"-n", "4", "--mpi=pmix", heat}, args...)...)
	cmd.Env = append(cmd.Env, "SCR_ENABLE=0", "SCR_PREFIX="+t.TempDir())
	out, err := cmd.CombinedOutput()
	want := heatSummary.FindStringSubmatch(string(out))
	if err != nil || want == nil || want[1] != "60" {
		t.Fatalf("the run without failures: %v\n%s", err, out)
	}

	spec, log := jobSpec(t)
	spec.nodes, spec.redundancy, spec.keepCache, spec.spares = 2, "xor:2", true, 1
	spec.launcher = l
	scrPrefix := t.TempDir()
	t.Setenv("SCR_PREFIX", scrPrefix)
	// An SCR application names its files relative to its directory,
	// which must be under SCR_PREFIX: the ranks' is ckpt run's.
	t.Chdir(scrPrefix)
	spec.program = "/bin/sh"
	spec.args = append([]string{"-c", `echo "slurm-task inc=$CKPT_INCARNATION rank=$SLURM_PROCID node=$SLURMD_NODENAME"; exec "$0" "$@"`, heat}, args...)
	// SCR's datasets are committed by the library's own collectives,
	// not the coordinator's commit (launch.Coordinators.OnCommit). But
	// every SCR_Need_checkpoint at a decision step (every 5th) is a round
	// of the coordinator's, which happens only once every rank has made
	// the call: the first round after step 10 comes after every rank
	// completed heat's second checkpoint (heat.10; SCR_Complete_checkpoint
	// is collective). Node1 is lost from that round itself, not from a
	// poll of its cache that a busy machine could delay past heat's end:
	// the rest of heat, 45 steps and 9 rounds and checkpoints, is the time
	// the kill has.
	var lostAfter atomic.Bool // node1's cache held heat.10 when it was lost
	res := launchScripted(t, spec, log, func(cfg *launch.Config, coords *launch.Coordinators) {
		inject := make(chan []int, 1)
		cfg.Inject, cfg.NodeFailures = inject, true
		var once sync.Once
		prev := coords.OnDecision
		coords.OnDecision = func(step int64, d policy.Decision) {
			if prev != nil {
				prev(step, d)
			}
			if step > 10 {
				once.Do(func() {
					lostAfter.Store(secondCheckpoint(filepath.Join(spec.cacheRoot, "node1")))
					inject <- []int{1}
				})
			}
		}
	}, 4*time.Minute)
	if t.Failed() {
		t.Logf("slurmctld.log:\n%s", c.Log("slurmctld.log"))
	}
	if res.Injected != 1 || len(res.Attempts) != 2 {
		t.Fatalf("injected %d, %d attempts: want node1 lost and one relaunch\n%s", res.Injected, len(res.Attempts), log)
	}
	if !lostAfter.Load() {
		t.Errorf("node1 was lost before its cache held heat's second checkpoint\n%s", log)
	}
	checkSpareRelaunch(t, res, log)
	if !regexp.MustCompile(`heat: restarted from heat\.\d+\n`).MatchString(log.String()) {
		t.Errorf("the relaunch did not restart heat from a checkpoint:\n%s", log)
	}
	got := heatSummary.FindAllStringSubmatch(log.String(), -1)
	if len(got) != 1 || got[0][1] != "60" || got[0][4] != want[4] || got[0][5] != want[5] {
		t.Errorf("the job's summaries %q, want one, of iteration 60 and as without failures: %q\n%s", got, want[0], log)
	}
	for r := range 4 {
		data, err := os.ReadFile(filepath.Join(scrPrefix, "result", "rank_"+strconv.Itoa(r)+".txt"))
		if err != nil || !strings.HasPrefix(string(data), "# iteration 60,") {
			t.Errorf("rank %d's result under SCR_PREFIX: %.60q, %v", r, data, err)
		}
	}
}

// secondCheckpoint says whether a node's cache holds heat's checkpoint
// heat.10 or a later one (the cache keeps the newest).
func secondCheckpoint(cache string) bool {
	ents, _ := os.ReadDir(cache)
	for _, e := range ents {
		k, err := strconv.Atoi(strings.TrimPrefix(e.Name(), "heat."))
		if err != nil || !strings.HasPrefix(e.Name(), "heat.") || k < 10 {
			continue
		}
		if _, err := os.Stat(filepath.Join(cache, e.Name(), "manifest")); err == nil {
			return true
		}
	}
	return false
}

// pythonMPI is a Python 3 with mpi4py, which the Python bindings need:
// Debian's (python3-mpi4py), the one .ci/run installs. Without it the
// test skips loudly, or fails under CKPT_REQUIRE_MPI=1 or CI=true.
func pythonMPI(t *testing.T) string {
	t.Helper()
	py := "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import mpi4py").Run(); err != nil {
		msg := "python3 with mpi4py: " + py + " -c 'import mpi4py': " + err.Error() + " (Debian: apt-get install python3-mpi4py)"
		if os.Getenv(mpitest.EnvRequire) == "1" || os.Getenv("CI") == "true" {
			t.Fatalf("%s (%s=1 or CI=true: this test must run)", msg, mpitest.EnvRequire)
		}
		t.Skip("SKIPPED: " + msg)
	}
	return py
}

// A Python SCR application (mpi4py and the scr module) under `ckpt run
// --launcher srun`: one MPI job of 4 ranks on two Slurm nodes writes its
// checkpoints and an OUTPUT dataset; a second `ckpt run` through srun
// restarts it, each rank reading its file back and checking every byte
// (internal/capitest/testdata/scr_py.py aborts on a difference), the
// newest checkpoint voted invalid and the one before restored.
func TestRunPythonUnderSlurm(t *testing.T) {
	c := slurmCluster(t)
	py := pythonMPI(t)
	prefix := mpitest.Install(t)
	root, err := mpitest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(root, "internal", "capitest", "testdata", "scr_py.py")
	srunMPI(t)
	dir := t.TempDir()
	for _, kv := range []string{"PYTHONPATH=" + filepath.Join(prefix, "lib", "python"), "SCR_PREFIX=" + dir,
		"SCR_CACHE_BASE=" + t.TempDir(), "SCR_JOB_ID=pysrun", "SCR_FLUSH=1", jobenv.VarSCRNodes + "=2"} {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct{ mode, line string }{
		{"start", "rank %d wrote 3 checkpoints"}, {"restart", "rank %d restarted from pyckpt.2"},
	} {
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
		cmd := c.Command(ctx, exe, "run", "--launcher", "srun", "--launcher-args", "--mpi=pmix", "-n", "4", "--nodes", "2",
			"--cache-root", filepath.Join(t.TempDir(), "job"), "--json", "--",
			"/bin/sh", "-c", `echo "slurm-task inc=$CKPT_INCARNATION rank=$SLURM_PROCID node=$SLURMD_NODENAME"; exec "$0" "$@"`,
			py, script, step.mode)
		cmd.Dir = dir
		cmd.Env = append(cmd.Env, asCkpt+"=1")
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		cancel()
		if err != nil {
			t.Fatalf("%s run: %v\n%s\nslurmctld.log:\n%s", step.mode, err, stderr.String(), c.Log("slurmctld.log"))
		}
		obj := decodeOne(t, stdout.String())
		if obj["launcher"] != "srun" || fmt.Sprint(obj["attempts"]) != "1" {
			t.Fatalf("%s run: launcher %v, attempts %v: want one launch by srun\n%s", step.mode, obj["launcher"], obj["attempts"], stderr.String())
		}
		for r := range 4 {
			if want := strings.Replace(step.line, "%d", strconv.Itoa(r), 1); !strings.Contains(stderr.String(), want) {
				t.Errorf("%s run: no line %q:\n%s", step.mode, want, stderr.String())
			}
		}
		if got := slurmNodes(t, stderr.String(), 4)[0]; !slices.Equal(got, []string{"n1", "n1", "n2", "n2"}) {
			t.Errorf("%s run: the ranks ran on Slurm nodes %v, want n1 n1 n2 n2\n%s", step.mode, got, stderr.String())
		}
	}
	for r := range 4 {
		path := filepath.Join(dir, "pyout", "rank_"+strconv.Itoa(r)+".txt")
		if data, err := os.ReadFile(path); err != nil || string(data) != "py rank "+strconv.Itoa(r)+" of 4\n" {
			t.Errorf("the OUTPUT dataset's %s: %q, %v", path, data, err)
		}
	}
}
