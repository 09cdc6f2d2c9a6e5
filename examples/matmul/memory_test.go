package matmul

import (
	"runtime"
	"testing"
)

// allocated returns the bytes f allocates.
func allocated(f func()) int64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return int64(after.TotalAlloc - before.TotalAlloc)
}

// The estimate covers what the solver allocates, without inflating it
// beyond the checkpoint copy it adds.
func TestMemoryNeedCoversNew(t *testing.T) {
	cfg := Config{N: 384, Seed: 1, Panels: 4}
	for _, rs := range [][2]int{{0, 1}, {0, 3}, {2, 3}} {
		var s *Solver
		got := allocated(func() {
			var err error
			if s, err = New(cfg, rs[0], rs[1]); err != nil {
				t.Fatal(err)
			}
		})
		need := cfg.MemoryNeed(rs[0], rs[1])
		if need < got || need > 2*got {
			t.Errorf("rank %d of %d: MemoryNeed %d, New allocated %d", rs[0], rs[1], need, got)
		}
		runtime.KeepAlive(s)
	}
}

func TestMemoryNeedAbsurd(t *testing.T) {
	if got := (Config{N: maxN}).MemoryNeed(0, 1); got < 7*8<<40 {
		t.Errorf("n=%d: %d bytes, want about 56 TiB", maxN, got)
	}
	if got := (Config{N: 1000000}).MemoryNeed(0, 1); got < 5e13 {
		t.Errorf("n=1000000: %d bytes, want about 56 TB", got)
	}
}
