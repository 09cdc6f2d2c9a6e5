package capitest

import (
	"strings"
	"testing"
)

// The C++ program (testdata/ckpt_state.cpp, std::string names and
// fstream files) checkpoints every 4th step, dies by MPI_Abort after step
// 10, restarts from step 8 and must end with the state a run without
// failure computes; a run after the end restarts from its last step.
func TestCppRestartAfterCrash(t *testing.T) {
	forRanks(t, func(t *testing.T, np int) {
		j := newJob(t, np, "ckpt_state.cpp")
		j.setenv("SCR_CHECKPOINT_INTERVAL=4")
		out := j.runFails(nil, "--steps", "20", "--crash-at", "10")
		if !strings.Contains(out, "crashing after step 10") {
			t.Fatalf("the first run failed before its crash:\n%s", out)
		}
		out = j.run(nil, "--steps", "20", "--expect-restart", "8")
		if !strings.Contains(out, "ckpt_state: OK") {
			t.Fatalf("the restarted run did not end right:\n%s", out)
		}
		out = j.run(nil, "--steps", "20", "--expect-restart", "20")
		if !strings.Contains(out, "ckpt_state: OK") || !strings.Contains(out, "0 checkpoints") {
			t.Fatalf("a run after the end should restart at step 20 and have nothing to do:\n%s", out)
		}
	})
}
