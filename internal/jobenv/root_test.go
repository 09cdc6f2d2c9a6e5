package jobenv_test

import (
	"encoding/json"
	"testing"

	"github.com/ckpt/ckpt"
	"github.com/ckpt/ckpt/internal/jobenv"
)

// The store reads what the launcher writes: the same durabilities with
// the same message, and the same flush statistics.
func TestAgreesWithStore(t *testing.T) {
	for _, s := range []string{"", "node", "process", "disk", "Node"} {
		_, want := ckpt.ParseDurability(s)
		got := jobenv.CheckDurability(s)
		if (got == nil) != (want == nil) || got != nil && got.Error() != want.Error() {
			t.Errorf("durability %q: jobenv says %v, the store %v", s, got, want)
		}
	}
	f := ckpt.FlushStats{Mode: "nonblocking", K: 3, Due: 4, Latency: 1.5, KError: "x", IdleSteps: 2}
	if jobenv.FlushStats(f) != (jobenv.FlushStats{Mode: "nonblocking", K: 3, Due: 4, Latency: 1.5, KError: "x", IdleSteps: 2}) {
		t.Error("ckpt.FlushStats does not convert field by field")
	}
	// The wire form stays what ranks published before it was jobenv's
	// (ckpt status --json shows it as is).
	want, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := jobenv.FlushStats(f).Encode(); err != nil || string(got) != string(want) {
		t.Errorf("flush stats encode as %s (%v), the store's as %s", got, err, want)
	}
	if ckpt.ExitConfig != jobenv.ExitConfig || ckpt.ExitJobFailed != jobenv.ExitJobFailed {
		t.Error("exit statuses differ")
	}
}
