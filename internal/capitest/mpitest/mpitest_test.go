package mpitest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRepoRootHoldsGoMod(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(data), "module github.com/ckpt/ckpt\n") {
		t.Fatalf("%s/go.mod is not ckpt's: %.40q", root, data)
	}
}

// Run passes the test's variables to every rank, hides the caller's own
// SCR_ variables, and reports a rank's non-zero exit as an error.
func TestRunEnvironmentAndExitStatus(t *testing.T) {
	t.Setenv("SCR_PREFIX", "/from/the/developer/shell")
	dir := t.TempDir()
	out, err := Run(t, 2, dir, []string{"MPITEST_WORD=hello"},
		"sh", "-c", `echo "rank=$OMPI_COMM_WORLD_RANK word=$MPITEST_WORD prefix=${SCR_PREFIX:-unset} pwd=$(pwd)"`)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"rank=0 ", "rank=1 "} {
		if !strings.Contains(out, want+"word=hello prefix=unset pwd="+dir+"\n") {
			t.Errorf("output lacks %q with the word, no prefix and the directory:\n%s", want, out)
		}
	}

	out, err = Run(t, 2, dir, nil, "sh", "-c", `[ "$OMPI_COMM_WORLD_RANK" = 0 ] || { echo rank 1 fails; exit 3; }`)
	if err == nil {
		t.Fatalf("a rank exited 3 and Run reported no error:\n%s", out)
	}
	if !strings.Contains(out, "rank 1 fails") {
		t.Errorf("the failing rank's output is not kept:\n%s", out)
	}
}

// Build compiles a plain MPI program (one that does not call the SCR
// API: libscr is linked but unused) against an installation prefix.
func TestBuildCompilesByExtension(t *testing.T) {
	RequireTools(t, "mpicc")
	prefix := t.TempDir()
	// An empty libscr.so is enough to link a program that calls nothing in it.
	lib := filepath.Join(prefix, "lib")
	if err := os.MkdirAll(lib, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := command(t, lib, nil, "mpicc", "-shared", "-fPIC", "-o", "libscr.so", "-x", "c", "/dev/null"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	src := filepath.Join(t.TempDir(), "hello.c")
	prog := `#include <mpi.h>
#include <stdio.h>
int main(int argc, char** argv) {
	int rank, size;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	printf("hello %d of %d\n", rank, size);
	MPI_Finalize();
	return 0;
}
`
	if err := os.WriteFile(src, []byte(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := Build(t, prefix, src)
	out, err := Run(t, 3, t.TempDir(), nil, bin)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"hello 0 of 3", "hello 1 of 3", "hello 2 of 3"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// recorder is a testing.TB that records Skip and Fatalf instead of
// ending the test, so that RequireTools' two outcomes can be seen. It
// has only the methods RequireTools calls: any other would panic on the
// nil embedded TB.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Helper()                           {}
func (r *recorder) Skip(args ...any)                  { r.skipped = fmt.Sprint(args...) }
func (r *recorder) Fatalf(format string, args ...any) { r.failed = fmt.Sprintf(format, args...) }

// Without the MPI tools a test skips, loudly; where they are required
// (CKPT_REQUIRE_MPI=1 or CI=true) it fails instead.
func TestMissingToolsSkipOrFail(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv("CI", "")
	t.Setenv(EnvRequire, "")
	var r recorder
	RequireTools(&r, "mpicc", "mpirun")
	if !strings.HasPrefix(r.skipped, "SKIPPED: mpicc, mpirun not on PATH") || r.failed != "" {
		t.Errorf("without MPI and not required: skipped %q, failed %q", r.skipped, r.failed)
	}
	for _, env := range [][2]string{{EnvRequire, "1"}, {"CI", "true"}} {
		t.Setenv(env[0], env[1])
		r = recorder{}
		RequireTools(&r, "mpirun")
		if !strings.Contains(r.failed, "mpirun not on PATH") || r.skipped != "" {
			t.Errorf("without MPI and %s=%s: skipped %q, failed %q", env[0], env[1], r.skipped, r.failed)
		}
		t.Setenv(env[0], "")
	}
}
