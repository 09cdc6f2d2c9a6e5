package bench

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/netns/netnstest"
)

// benchWorker makes the test binary bench coord's worker process.
const benchWorker = "BENCH_TEST_COORD_WORKER"

func TestMain(m *testing.M) {
	if os.Getenv(benchWorker) == "1" {
		if err := CoordWorker(context.Background(), os.Args[1:], os.Stdout); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func testWorker(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), benchWorker+"=1")
	return cmd
}

// The coordinator benchmark over hosts: the coordinator on one, the
// clients and sub-coordinators on four others. The coordinator's address
// is reachable only across the bridge, so every measurement that
// completes had its clients dial from their hosts.
func TestRunCoordOverHosts(t *testing.T) {
	hosts := netnstest.New(t, "coord", "h0", "h1", "h2", "h3")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	r, err := RunCoord(ctx, CoordConfig{Clients: 64, PerNode: 16, Worker: testWorker, Hosts: hosts})
	if err != nil {
		t.Fatal(err)
	}
	if r.Spread != 4 {
		t.Errorf("spread over %d hosts, want 4", r.Spread)
	}
	for name, v := range map[string]float64{"raw": r.Raw, "flat": r.Flat, "tree": r.Tree,
		"raw over hosts": r.SpreadRaw, "flat over hosts": r.SpreadFlat, "tree over hosts": r.SpreadTree} {
		if !(v > 0) {
			t.Errorf("%s: %v seconds", name, v)
		}
	}
	t.Logf("loopback raw %.3fs flat %.3fs tree %.3fs; over 4 hosts raw %.3fs flat %.3fs tree %.3fs",
		r.Raw, r.Flat, r.Tree, r.SpreadRaw, r.SpreadFlat, r.SpreadTree)
}
