// Package mpitest runs real MPI programs against ckpt's SCR-compatible C
// API from Go tests: it installs the library once per test binary
// (Install), compiles a C, C++ or Fortran source against it (Build) and
// runs the result under mpirun (Run).
//
// A machine without the MPI compiler wrappers or mpirun skips these tests
// loudly ("SKIPPED: ..."); with CKPT_REQUIRE_MPI=1 or CI=true the tests
// fail instead, so that CI (which installs MPI) cannot lose them silently.
//
// A test binary that calls Install should call Cleanup from its TestMain,
// after m.Run, to remove the installation.
package mpitest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/jobenv"
)

// EnvRequire names the variable that, set to 1, makes missing MPI tools a
// test failure instead of a reason to skip. CI=true does the same.
const EnvRequire = jobenv.VarRequireMPI

// Timeout bounds one command: the installation (a cgo build of ckpt's
// engine on a busy machine), one compilation, one mpirun. It is generous
// because the machine the tests run on may be shared with a CPU hog; it
// only has to end a hung job before go test's own timeout would.
const Timeout = 4 * time.Minute

var install struct {
	once   sync.Once
	prefix string // the installation; "" until made
	dir    string // the temporary directory holding it
	err    error
}

// Install builds and installs ckpt's C API (scripts/install-capi.sh) into
// a temporary prefix, once per test binary, and returns that prefix: its
// include/ holds scr.h (and the Fortran files), its lib/ libscr.so and
// the rest. Every later call returns the same prefix, or fails the test
// with the first call's error. It skips the test (or fails it, see
// EnvRequire) when mpicc, mpicxx, mpif90 or mpirun is not on PATH.
func Install(t testing.TB) string {
	t.Helper()
	RequireTools(t, "mpicc", "mpirun", "go")
	install.once.Do(func() {
		install.prefix, install.dir, install.err = doInstall()
	})
	if install.err != nil {
		t.Fatalf("installing the C API: %v", install.err)
	}
	return install.prefix
}

// Cleanup removes what Install made. Call it from TestMain after m.Run.
func Cleanup() {
	if install.dir != "" {
		os.RemoveAll(install.dir)
	}
}

func doInstall() (prefix, dir string, err error) {
	root, err := RepoRoot()
	if err != nil {
		return "", "", err
	}
	script := filepath.Join(root, "scripts", "install-capi.sh")
	if _, err := os.Stat(script); err != nil {
		return "", "", fmt.Errorf("%s is missing (it builds libscr.so; it comes from the scrcore work): %v", script, err)
	}
	dir, err = os.MkdirTemp("", "ckpt-capi-")
	if err != nil {
		return "", "", err
	}
	prefix = filepath.Join(dir, "prefix")
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", script, prefix)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		os.RemoveAll(dir)
		return "", "", fmt.Errorf("%s %s: %v\n%s", script, prefix, err, out)
	}
	for _, f := range []string{"include/scr.h", "lib/libscr.so"} {
		if _, err := os.Stat(filepath.Join(prefix, f)); err != nil {
			os.RemoveAll(dir)
			return "", "", fmt.Errorf("%s succeeded but did not install %s: %v\n%s", script, f, err, out)
		}
	}
	return prefix, dir, nil
}

// RepoRoot returns the module's root directory: the nearest directory
// above the current one that holds go.mod.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the current directory")
		}
		dir = parent
	}
}

// Build compiles one source file against the installation at prefix and
// returns the path of the program, in a temporary directory of the test.
// The compiler is chosen by the file's extension: .c mpicc; .cpp, .cc,
// .cxx mpicxx; .f, .F, .f90, .F90 mpif90 (which also links libscrf).
func Build(t testing.TB, prefix, src string) string {
	t.Helper()
	var compiler string
	var libs []string
	switch ext := filepath.Ext(src); ext {
	case ".c":
		compiler = "mpicc"
	case ".cpp", ".cc", ".cxx":
		compiler = "mpicxx"
	case ".f", ".F", ".f90", ".F90":
		compiler = "mpif90"
		libs = append(libs, "-lscrf")
	default:
		t.Fatalf("mpitest.Build: no compiler for %q files (%s)", ext, src)
	}
	libs = append(libs, "-lscr")
	RequireTools(t, compiler)
	abs, err := filepath.Abs(src)
	if err != nil {
		t.Fatal(err)
	}
	base := strings.TrimSuffix(filepath.Base(src), filepath.Ext(src))
	out := filepath.Join(t.TempDir(), base)
	args := []string{"-g", "-o", out, abs,
		"-I", filepath.Join(prefix, "include"),
		"-L", filepath.Join(prefix, "lib"),
		"-Wl,-rpath," + filepath.Join(prefix, "lib")}
	args = append(args, libs...)
	// Fortran's module files (scr.mod) are written where the compiler
	// runs: keep them out of the source tree.
	output, err := command(t, filepath.Dir(out), nil, compiler, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", compiler, strings.Join(args, " "), err, output)
	}
	return out
}

// Run starts argv under mpirun with np ranks, in directory dir, with env
// (KEY=VALUE entries) added to the environment, and returns the job's
// output (stdout and stderr, interleaved) and mpirun's error: nil when
// every rank exited 0. A job still running after Timeout is killed and
// reported as an error. Variables of the test's own environment whose
// names begin with SCR_ or CKPT_ are not passed on, so that a developer's
// shell cannot change what a test sees.
func Run(t testing.TB, np int, dir string, env []string, argv ...string) (string, error) {
	t.Helper()
	RequireTools(t, "mpirun")
	args := append([]string{"--allow-run-as-root", "--oversubscribe",
		"-np", strconv.Itoa(np)}, argv...)
	return command(t, dir, env, "mpirun", args...)
}

// command runs name in its own process group, so that a timeout kills
// the whole job (mpirun and its ranks), not mpirun alone.
func command(t testing.TB, dir string, env []string, name string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(cleanEnv(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	err := cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("%s killed after %v: %w", name, Timeout, err)
	}
	return out.String(), err
}

// cleanEnv is the test's environment without SCR_* and CKPT_* variables,
// with Open MPI told to yield when idle: ranks that spin in a barrier
// would starve each other on a machine with fewer cores than ranks.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "SCR_") || strings.HasPrefix(kv, "CKPT_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "OMPI_MCA_mpi_yield_when_idle=1")
}

// required reports whether missing MPI tools must fail the test.
func required() bool {
	return os.Getenv(EnvRequire) == "1" || os.Getenv("CI") == "true"
}

// RequireTools skips the test loudly, or fails it when required, unless
// every tool is on PATH.
func RequireTools(t testing.TB, tools ...string) {
	t.Helper()
	var missing []string
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if len(missing) == 0 {
		return
	}
	msg := fmt.Sprintf("%s not on PATH: the C API's tests need MPI (Debian: apt-get install openmpi-bin libopenmpi-dev gfortran)", strings.Join(missing, ", "))
	if required() {
		t.Fatalf("%s (%s=1 or CI=true: these tests must run)", msg, EnvRequire)
		return
	}
	t.Skip("SKIPPED: " + msg)
}
