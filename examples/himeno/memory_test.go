package himeno

import (
	"math"
	"runtime"
	"testing"
)

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
	for _, rs := range [][2]int{{0, 1}, {0, 3}, {2, 3}} {
		var s *Solver
		got := allocated(func() {
			var err error
			if s, err = New(S, rs[0], rs[1]); err != nil {
				t.Fatal(err)
			}
		})
		need := S.MemoryNeed(rs[0], rs[1])
		if need < got || need > 2*got {
			t.Errorf("rank %d of %d: MemoryNeed %d, New allocated %d", rs[0], rs[1], need, got)
		}
		runtime.KeepAlive(s)
	}
}

func TestMemoryNeedAbsurd(t *testing.T) {
	if got := (Config{65536, 65536, 64}).MemoryNeed(0, 1); got < 14e12 {
		t.Errorf("65536x65536x64: %d bytes, want about 15 TB", got)
	}
	// The largest grid the parser accepts must not wrap around.
	if got := (Config{maxExtent, maxExtent, maxExtent}).MemoryNeed(0, 1); got < 1e16 || got == math.MaxInt64 {
		t.Errorf("largest grid: %d bytes", got)
	}
}
