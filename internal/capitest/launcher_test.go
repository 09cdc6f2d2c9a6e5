package capitest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/internal/capitest/mpitest"
	"github.com/ckpt/ckpt/internal/jobenv"
)

// An SCR application under `ckpt run --launcher mpirun`: one MPI job of
// two ranks (not two singletons, as under ckpt run's own launcher), whose
// C layer takes MPI's rank and size and joins the launcher's coordinator.
// It checkpoints, then a second run through mpirun restarts from the
// newest checkpoint and goes on. Its simulated nodes are the SCR API's
// (CKPT_SCR_NODES, which newJob sets, wins over the launcher's node
// mapping, CKPT_NODES: see TestCkptRunLauncherMPIRunNodeMapping).
func TestCkptRunLauncherMPIRun(t *testing.T) {
	mpitest.RequireTools(t, "mpirun")
	ckpt := ckptBinary(t)
	j := newJob(t, 2, "scrapi.c")
	run := func(args ...string) (map[string]any, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), mpitest.Timeout)
		defer cancel()
		argv := append([]string{"run", "--launcher", "mpirun", "-n", "2", "--nodes", "2",
			"--cache-root", filepath.Join(t.TempDir(), "job"), "--json", "--", j.bin}, args...)
		cmd := exec.CommandContext(ctx, ckpt, argv...)
		cmd.Dir = j.prefix
		cmd.Env = append(append(os.Environ(), j.env...), "OMPI_MCA_mpi_yield_when_idle=1")
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("ckpt %s: %v\n%s", strings.Join(argv, " "), err, stderr.String())
		}
		var obj map[string]any
		if err := json.Unmarshal([]byte(stdout.String()), &obj); err != nil {
			t.Fatalf("ckpt run --json: %v\n%s", err, stdout.String())
		}
		return obj, stderr.String()
	}
	obj, out := run("version", "restart", "none", "write", "1", "3", "1")
	// One MPI job: its rank 0 alone says OK. Two singletons would both.
	if strings.Count(out, "scrapi: OK") != 1 || obj["launcher"] != "mpirun" || obj["attempts"] != 1.0 || obj["error"] != nil {
		t.Fatalf("the job under mpirun: launcher %v, attempts %v, error %v:\n%s", obj["launcher"], obj["attempts"], obj["error"], out)
	}
	_, out = run("restart", "ckpt.3", "write", "4", "5", "1")
	if !strings.Contains(out, "restarted from ckpt.3\n") || strings.Count(out, "scrapi: OK") != 1 {
		t.Fatalf("the restart under mpirun:\n%s", out)
	}
}

// Without CKPT_SCR_NODES, an SCR application under `ckpt run --launcher
// mpirun --nodes 2` takes each rank's node and cache from the launcher's
// node mapping (CKPT_NODES, CKPT_CACHE_ROOT), which every rank gets alike:
// rank 0 on node0 and rank 1 on node1, their caches in the job's
// directory, none under SCR_CACHE_BASE (where the host's name would have
// put both).
func TestCkptRunLauncherMPIRunNodeMapping(t *testing.T) {
	mpitest.RequireTools(t, "mpirun")
	ckpt := ckptBinary(t)
	j := newJob(t, 2, "scrapi.c")
	var env []string
	for _, kv := range j.env {
		if !strings.HasPrefix(kv, jobenv.VarSCRNodes+"=") {
			env = append(env, kv)
		}
	}
	root := filepath.Join(t.TempDir(), "job")
	ctx, cancel := context.WithTimeout(context.Background(), mpitest.Timeout)
	defer cancel()
	argv := []string{"run", "--launcher", "mpirun", "-n", "2", "--nodes", "2", "--keep-cache",
		"--cache-root", root, "--json", "--", j.bin, "restart", "none", "write", "1", "3", "1"}
	cmd := exec.CommandContext(ctx, ckpt, argv...)
	cmd.Dir = j.prefix
	cmd.Env = append(append(os.Environ(), env...), "OMPI_MCA_mpi_yield_when_idle=1")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("ckpt %s: %v\n%s", strings.Join(argv, " "), err, stderr.String())
	}
	if strings.Count(stderr.String(), "scrapi: OK") != 1 {
		t.Fatalf("not one MPI job:\n%s", stderr.String())
	}
	for _, node := range []string{"node0", "node1"} {
		ents, err := os.ReadDir(filepath.Join(root, node))
		if err != nil || len(ents) == 0 {
			t.Errorf("%s's cache in the job's directory: %d entries, %v (job directory: %s)", node, len(ents), err, listing(root))
		}
	}
	if _, err := os.Stat(filepath.Join(j.cache, "ckpt."+jobID)); err == nil {
		t.Errorf("caches under SCR_CACHE_BASE: %s", listing(j.cache))
	}
}

// A Python SCR application (mpi4py) under `ckpt run --launcher mpirun`:
// one MPI job of two ranks writes its checkpoints and its OUTPUT dataset,
// then a second `ckpt run` restarts it; the program checks every byte it
// reads back and aborts on a difference (testdata/scr_py.py).
func TestCkptRunLauncherMPIRunPython(t *testing.T) {
	mpitest.RequireTools(t, "mpirun")
	ckpt := ckptBinary(t)
	prefix := mpitest.Install(t)
	var p bindingProgram
	for _, b := range bindingPrograms {
		if b.name == "python" {
			p = b
		}
	}
	argv, env := p.argv(t, prefix)
	dir := t.TempDir()
	env = append(append(env, p.env...), "SCR_PREFIX="+dir, "SCR_CACHE_BASE="+t.TempDir(), "SCR_JOB_ID=pylauncher",
		jobenv.VarSCRNodes+"=2", "OMPI_MCA_mpi_yield_when_idle=1")
	for _, step := range []struct{ mode, line string }{{"start", p.wrote}, {"restart", p.restarted}} {
		ctx, cancel := context.WithTimeout(context.Background(), mpitest.Timeout)
		args := append([]string{"run", "--launcher", "mpirun", "-n", "2", "--nodes", "2",
			"--cache-root", filepath.Join(t.TempDir(), "job"), "--json", "--"}, append(argv, step.mode)...)
		cmd := exec.CommandContext(ctx, ckpt, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), env...)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		cancel()
		if err != nil {
			t.Fatalf("ckpt %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
		}
		var obj map[string]any
		if err := json.Unmarshal([]byte(stdout.String()), &obj); err != nil || obj["launcher"] != "mpirun" || obj["attempts"] != 1.0 {
			t.Fatalf("%s run: report %v (%v), want one launch by mpirun\n%s", step.mode, obj, err, stdout.String())
		}
		everyRank(t, step.mode+" run under ckpt run --launcher mpirun", stderr.String(), 2, step.line)
	}
	for r := range 2 {
		path := filepath.Join(dir, p.outDir, "rank_"+strconv.Itoa(r)+".txt")
		if data, err := os.ReadFile(path); err != nil || string(data) != fmt.Sprintf(p.outLine, r, 2) {
			t.Errorf("the OUTPUT dataset's %s: %q, %v", path, data, err)
		}
	}
}
