package scr

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/capitest/mpitest"
)

// The C API end to end under mpirun: install it (scripts/install-capi.sh),
// build testdata/smoke.c with mpicc, and run it at 1 and 4 ranks: three
// checkpoints, then a restart that reads every byte back, after a lost
// node's cache at 4 ranks; and a misuse that aborts the job with the
// call's message. internal/capitest has the full suite; this one checks
// the library's own path. Without MPI it skips, loudly, or fails where MPI
// is required (mpitest.RequireTools; CI installs MPI).
func TestSmokeMPI(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIPPED: -short: the MPI smoke test builds the C API (a minute)")
	}
	mpitest.RequireTools(t, "mpicc", "mpirun")
	prefix := installCAPI(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "smoke")
	build := exec.Command("mpicc", "-Wall", "-I", filepath.Join(prefix, "include"), "testdata/smoke.c",
		"-L", filepath.Join(prefix, "lib"), "-Wl,-rpath,"+filepath.Join(prefix, "lib"), "-lscr", "-o", bin)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("mpicc: %v\n%s", err, out)
	}
	for _, np := range []int{1, 4} {
		t.Run(fmt.Sprintf("np%d", np), func(t *testing.T) {
			work := t.TempDir()
			cache := filepath.Join(work, "cache")
			env := []string{"SCR_CACHE_BASE=" + cache, "CKPT_SCR_NODES=" + fmt.Sprint(np), "SCR_JOB_ID=smoke"}
			out, err := mpirun(t, np, work, env, bin, "3")
			if err != nil || !strings.Contains(out, "wrote 3 checkpoints") {
				t.Fatalf("first run: %v\n%s", err, out)
			}
			for r := range np {
				if _, err := os.Stat(filepath.Join(work, "ckpt.3", fmt.Sprintf("rank_%d.ckpt", r))); err != nil {
					t.Errorf("Finalize flushed the newest checkpoint to its path under the prefix: %v", err)
				}
			}
			if np > 1 {
				os.RemoveAll(filepath.Join(cache, "ckpt.smoke", "node1"))
			}
			out, err = mpirun(t, np, work, env, bin, "3")
			if err != nil || !strings.Contains(out, "restarted from scr.dataset.3") {
				t.Fatalf("restart run: %v\n%s", err, out)
			}
			out, err = mpirun(t, np, work, env, bin, "misuse")
			if err == nil || !strings.Contains(out, "SCR_Start_checkpoint: Must call SCR_Complete_checkpoint() before SCR_Start_checkpoint()") ||
				strings.Contains(out, "returned") {
				t.Fatalf("misuse: want the job aborted with the call's message, got %v\n%s", err, out)
			}
		})
	}
}

// Without MPI's compiler wrapper, scripts/install-capi.sh fails with one
// line saying so, and builds nothing.
func TestInstallWithoutMPI(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatalf("bash: %v", err)
	}
	// A PATH with the tools the script needs before it looks for mpicc,
	// and no mpicc.
	bin := t.TempDir()
	for _, tool := range []string{"dirname", "mkdir"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		os.Symlink(p, filepath.Join(bin, tool))
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go: %v", err)
	}
	os.Symlink(goCmd, filepath.Join(bin, "go"))
	prefix := t.TempDir()
	root, _ := filepath.Abs("../..")
	cmd := exec.Command(bash, filepath.Join(root, "scripts", "install-capi.sh"), prefix)
	cmd.Env = []string{"PATH=" + bin, "HOME=" + t.TempDir()}
	out, err := cmd.CombinedOutput()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err == nil || len(lines) != 1 || !strings.Contains(lines[0], "mpicc not found") {
		t.Fatalf("install without mpicc: %v, output %q; want one line saying mpicc is missing", err, out)
	}
	if entries, _ := os.ReadDir(filepath.Join(prefix, "lib")); len(entries) > 0 {
		t.Errorf("install without mpicc left %d files in PREFIX/lib", len(entries))
	}
}

// Under ckpt run, whose ranks are MPI singletons, the library takes the
// rank and size from ckpt run and does its collectives through ckpt's
// coordinator: the smoke program's checkpoints and restart work as under
// mpirun.
func TestSmokeUnderCkptRun(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIPPED: -short: the test builds the C API and ckpt (a minute)")
	}
	mpitest.RequireTools(t, "mpicc")
	prefix := installCAPI(t)
	dir := t.TempDir()
	bin, ckptBin := filepath.Join(dir, "smoke"), filepath.Join(dir, "ckpt")
	if out, err := exec.Command("mpicc", "-I", filepath.Join(prefix, "include"), "testdata/smoke.c",
		"-L", filepath.Join(prefix, "lib"), "-Wl,-rpath,"+filepath.Join(prefix, "lib"), "-lscr", "-o", bin).CombinedOutput(); err != nil {
		t.Fatalf("mpicc: %v\n%s", err, out)
	}
	if out, err := exec.Command("go", "build", "-o", ckptBin, "../../cmd/ckpt").CombinedOutput(); err != nil {
		t.Fatalf("go build ckpt: %v\n%s", err, out)
	}
	work := t.TempDir()
	run := func(jobDir string) string {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, ckptBin, "run", "-n", "2", "--cache-root", filepath.Join(work, jobDir), "--", bin, "3")
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "SCR_CACHE_BASE="+filepath.Join(work, "cache"), "SCR_JOB_ID=run")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("ckpt run: %v\n%s", err, out)
		}
		return string(out)
	}
	if out := run("job1"); strings.Count(out, "wrote 3 checkpoints") != 2 {
		t.Fatalf("first run: want both ranks to write 3 checkpoints\n%s", out)
	}
	if out := run("job2"); strings.Count(out, "restarted from scr.dataset.3") != 2 {
		t.Fatalf("second run: want both ranks to restart from scr.dataset.3\n%s", out)
	}
}

var install struct {
	once   sync.Once
	prefix string
	err    error
	out    []byte
}

// installCAPI runs scripts/install-capi.sh once per test binary.
func installCAPI(t *testing.T) string {
	install.once.Do(func() {
		dir, err := os.MkdirTemp("", "ckpt-capi-")
		if err != nil {
			install.err = err
			return
		}
		root, _ := filepath.Abs("../..")
		cmd := exec.Command("bash", filepath.Join(root, "scripts", "install-capi.sh"), dir)
		install.out, install.err = cmd.CombinedOutput()
		install.prefix = dir
	})
	if install.err != nil {
		t.Fatalf("scripts/install-capi.sh: %v\n%s", install.err, install.out)
	}
	return install.prefix
}

func mpirun(t *testing.T, np int, dir string, env []string, argv ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	args := append([]string{"--allow-run-as-root", "--oversubscribe", "-np", fmt.Sprint(np)}, argv...)
	cmd := exec.CommandContext(ctx, "mpirun", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("mpirun %v: no end within 3 minutes\n%s", argv, out)
	}
	return string(out), err
}

func TestMain(m *testing.M) {
	code := m.Run()
	if install.prefix != "" {
		os.RemoveAll(install.prefix)
	}
	os.Exit(code)
}
