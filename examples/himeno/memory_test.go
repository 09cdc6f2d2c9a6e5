package himeno

import (
	"math"
	"testing"
)

// held is the bytes of the solver's arrays and buffers.
func held(s *Solver) int64 {
	n := cap(s.p) + cap(s.wrk1) + cap(s.wrk2) + cap(s.bnd)
	for i := range s.a {
		n += cap(s.a[i])
	}
	for i := range s.b {
		n += cap(s.b[i]) + cap(s.c[i])
	}
	return int64(4*n + 8*cap(s.sums) + cap(s.msg) + cap(s.rbuf))
}

// The estimate is what the solver holds plus one copy of its checkpoint
// state.
func TestMemoryNeedCoversNew(t *testing.T) {
	for _, rs := range [][2]int{{0, 1}, {0, 3}, {2, 3}} {
		s, err := New(S, rs[0], rs[1])
		if err != nil {
			t.Fatal(err)
		}
		got, state := held(s), s.StateSize()
		if need := S.MemoryNeed(rs[0], rs[1]); need < got+state-1024 || need > got+state+1024 {
			t.Errorf("rank %d of %d: MemoryNeed %d, the solver holds %d and its state is %d", rs[0], rs[1], need, got, state)
		}
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
