package ckpt

import (
	"os"
	"os/exec"
	"testing"
)

// The module examples/external implements Comm and a storage backend of
// its own, outside this module, with nothing but the public API. The go
// command does not enter a nested module from here, so this test runs its
// tests: offline, against this checkout (its go.mod replaces ckpt with
// ../..) and with the requirements its go.mod and go.sum name. It fails,
// never skips, when they cannot run: a public API that an outside program
// cannot implement is a broken build.
func TestExternalModule(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to test examples/external: %v", err)
	}
	cmd := exec.Command(goCmd, "test", "-count=1", "./...")
	cmd.Dir = "examples/external"
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=readonly -buildvcs=false", "GOPROXY=off", "GOWORK=off", "GOTOOLCHAIN=local")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go test ./... in examples/external: %v\n%s", err, out)
	}
	t.Logf("examples/external:\n%s", out)
}
