// Package criutest gives tests the CRIU they run against.
package criutest

import (
	"os"
	"os/exec"
	"testing"

	"github.com/ckpt/ckpt/internal/criu"
)

// RequireVar set to 1 makes a test that finds no working CRIU fail
// instead of skipping (CI sets it, with CKPT_CRIU from scripts/criu.sh).
const RequireVar = "CKPT_REQUIRE_CRIU"

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
		t.Skipf("SKIPPED: no working CRIU (%v); export CKPT_CRIU=\"$(scripts/criu.sh)\"", err)
	}
	return path
}
