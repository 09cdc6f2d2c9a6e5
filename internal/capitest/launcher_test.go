package capitest

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/internal/capitest/mpitest"
)

// An SCR application under `ckpt run --launcher mpirun`: one MPI job of
// two ranks (not two singletons, as under ckpt run's own launcher), whose
// C layer takes MPI's rank and size and joins the launcher's coordinator.
// It checkpoints, then a second run through mpirun restarts from the
// newest checkpoint and goes on. Its simulated nodes are the SCR API's
// (CKPT_SCR_NODES, which newJob sets): the C layer does not read the
// launcher's node mapping (CKPT_NODES).
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
