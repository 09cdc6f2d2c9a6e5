package capitest

import (
	"fmt"
	"os"
	"testing"

	"github.com/ckpt/ckpt/internal/capitest/mpitest"
)

// TestMain removes the C API's installation, made once for all the tests
// of this binary by mpitest.Install, and the programs built against it,
// when they are done.
//
// With CKPT_CAPITEST_GO_RANK set, the binary is instead a rank of
// BenchmarkCAPICheckpoint's Go program, started by ckpt run.
func TestMain(m *testing.M) {
	if spec, ok := os.LookupEnv(goRankEnv); ok {
		if err := goCheckpointRank(spec); err != nil {
			fmt.Fprintln(os.Stderr, "go rank:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	code := m.Run()
	cleanupPrograms()
	mpitest.Cleanup()
	os.Exit(code)
}
