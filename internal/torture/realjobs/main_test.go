// Package realjobs tests ckpt torture end to end on real jobs: the ckpt
// binary, built once for the package, runs `ckpt torture`, whose jobs are
// `ckpt run` processes with the examples as ranks. These tests take
// minutes, and live apart from cmd/ckpt's so that each package's tests
// stay well within go test's 10 minutes on a busy machine, and the two
// run side by side.
package realjobs

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// ckptBin is the ckpt binary TestMain built.
var ckptBin string

func TestMain(m *testing.M) {
	flag.Parse()
	code := func() int {
		if testing.Short() {
			return m.Run() // every test here skips in -short: no binary needed
		}
		dir, err := os.MkdirTemp("", "ckpt-realjobs-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		ckptBin = filepath.Join(dir, "ckpt")
		if err := build(ckptBin); err != nil {
			// Not a skip: without the binary nothing here is tested.
			fmt.Fprintf(os.Stderr, "FAIL: building the ckpt binary for the real-job tests: %v\n", err)
			return 1
		}
		return m.Run()
	}()
	os.Exit(code)
}

// build compiles cmd/ckpt into out with the go command that runs these
// tests (PATH, else the toolchain this test was built with).
func build(out string) error {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		goCmd = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	cmd := exec.Command(goCmd, "build", "-o", out, "github.com/ckpt/ckpt/cmd/ckpt")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s build: %v\n%s", goCmd, err, stderr.String())
	}
	return nil
}

// ckpt runs the ckpt binary with args and returns its exit status and
// output.
func ckpt(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := exec.Command(ckptBin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("ckpt %v: %v", args, err)
	}
	return code, out.String(), errb.String()
}

// keys is the top-level keys of the one JSON object in s.
func keys(t *testing.T, s string) map[string]json.RawMessage {
	t.Helper()
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &obj); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, s)
	}
	return obj
}
