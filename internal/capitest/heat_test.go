package capitest

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var heatSummary = regexp.MustCompile(`heat: iteration (\d+) of (\d+), (\d+) checkpoints, .*total heat ([0-9.]+), state ([0-9a-f]{16})`)

// The C example examples/heat-c: a run whose last rank dies after
// iteration 37 restarts from heat.30 (SCR_CHECKPOINT_INTERVAL=10) and
// ends in the same state, to the bit, as a run that never failed, with
// its result at its path under the prefix; with a node's cache lost
// between the runs too (four simulated nodes).
func TestHeatExample(t *testing.T) {
	const src = "../../examples/heat-c/heat.c"
	args := []string{"48", "40", "60"}
	forRanks(t, func(t *testing.T, np int) {
		clean := newJob(t, np, src)
		clean.setenv("SCR_CHECKPOINT_INTERVAL=10")
		want := heatResult(t, clean.run(nil, args...))
		if want[1] != "60" || want[3] != "6" {
			t.Fatalf("a run of 60 iterations with a checkpoint every 10th: %q", want[0])
		}

		j := newJob(t, np, src)
		j.setenv("SCR_CHECKPOINT_INTERVAL=10")
		out := j.runFails(nil, append(args, "--fail-at", "37")...)
		if !strings.Contains(out, "fails after iteration 37") {
			t.Fatalf("the first run failed before iteration 37:\n%s", out)
		}
		if np == 4 {
			j.loseNode(2)
		}
		out = j.run(nil, args...)
		if !strings.Contains(out, "heat: restarted from heat.30\n") {
			t.Errorf("the second run did not restart from heat.30:\n%s", out)
		}
		got := heatResult(t, out)
		if got[1] != "60" || got[3] != "3" || got[4] != want[4] || got[5] != want[5] {
			t.Errorf("after the restart: %q\nwithout a failure: %q", got[0], want[0])
		}
		for r := 0; r < np; r++ {
			data, err := os.ReadFile(filepath.Join(j.prefix, fmt.Sprintf("result/rank_%d.txt", r)))
			if err != nil {
				t.Errorf("the output dataset is not at its path under the prefix: %v", err)
				continue
			}
			if !strings.HasPrefix(string(data), "# iteration 60,") || strings.Count(string(data), "\n") < 1+40/np {
				t.Errorf("result/rank_%d.txt: %.80q", r, data)
			}
		}
	})
}

func heatResult(t *testing.T, out string) []string {
	t.Helper()
	m := heatSummary.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no summary line in:\n%s", out)
	}
	return m
}
