package jobenv_test

import (
	"testing"

	"github.com/ckpt/ckpt"
	"github.com/ckpt/ckpt/internal/jobenv"
)

// The store reads what the launcher writes: the same durabilities with
// the same message, and the same flush statistics (one type: the
// assignment below compiles only while they are).
var _ *jobenv.FlushStats = (*ckpt.FlushStats)(nil)

// The same durabilities with the same message, the same exit statuses.
func TestAgreesWithStore(t *testing.T) {
	for _, s := range []string{"", "node", "process", "disk", "Node"} {
		_, want := ckpt.ParseDurability(s)
		got := jobenv.CheckDurability(s)
		if (got == nil) != (want == nil) || got != nil && got.Error() != want.Error() {
			t.Errorf("durability %q: jobenv says %v, the store %v", s, got, want)
		}
	}
	if ckpt.ExitConfig != jobenv.ExitConfig || ckpt.ExitJobFailed != jobenv.ExitJobFailed {
		t.Error("exit statuses differ")
	}
}
