package capitest

import (
	"os"
	"testing"

	"github.com/ckpt/ckpt/internal/capitest/mpitest"
)

// TestMain removes the C API's installation, made once for all the tests
// of this binary by mpitest.Install, and the programs built against it,
// when they are done.
func TestMain(m *testing.M) {
	code := m.Run()
	cleanupPrograms()
	mpitest.Cleanup()
	os.Exit(code)
}
