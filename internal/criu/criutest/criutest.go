// Package criutest gives tests the CRIU they run against.
package criutest

import (
	"os"
	"os/exec"
	"testing"

	"github.com/ckpt/ckpt/internal/criu"
	"github.com/ckpt/ckpt/internal/jobenv"
)

// RequireVar set to 1 makes a test that finds no working CRIU fail
// instead of skipping (CI sets it, with CKPT_CRIU from scripts/criu.sh).
const RequireVar = jobenv.VarRequireCRIU

// Path returns a working CRIU (CKPT_CRIU, else criu in PATH, checked with
// criu.Check). Without one the test is skipped, loudly, or fails under
// CKPT_REQUIRE_CRIU=1.
func Path(t testing.TB) string {
	t.Helper()
	path, err := criu.Find(os.LookupEnv, exec.LookPath)
	if err == nil {
		_, err = criu.Check(t.Context(), path, criu.Exec)
	}
	if err != nil {
		if os.Getenv(RequireVar) == "1" {
			t.Fatalf("%s=1 and no working CRIU: %v", RequireVar, err)
		}
		t.Skipf("SKIPPED: no working CRIU (%v); export %s=\"$(scripts/criu.sh)\"", err, criu.EnvVar)
	}
	return path
}

// Root skips the test, loudly, unless it runs as root (what a program's
// PID namespace needs), or fails it under CKPT_REQUIRE_CRIU=1: the
// transparent mode's tests must not vanish in CI for want of root.
func Root(t testing.TB, why string) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv(RequireVar) == "1" {
		t.Fatalf("%s=1 and not root: %s", RequireVar, why)
	}
	t.Skipf("SKIPPED: not root: %s", why)
}

// ForkingProgram is a shell program (for /bin/sh -c PROGRAM sh GATE) that
// forks children at every step (a command substitution, a background job
// it waits for) and keeps its state in the shell's memory; after step 20
// of its 30 it waits for the file GATE, so that a test can checkpoint it, or fail its
// node, at a known point whatever the machine's speed. What it prints, on
// stdout and stderr, does not depend on when it was checkpointed.
const ForkingProgram = `i=0; s=7
while [ $i -lt 30 ]; do
  i=$((i+1))
  s=$(( (s * 31 + i) % 1000003 ))
  v=$(echo $s)
  ( exit 0 ) & wait $!
  echo "step $i sum $v"
  echo "err $i" >&2
  if [ $i -eq 20 ]; then while [ ! -e "$1" ]; do sleep 0.01; done; fi
done
echo "final $s"`
