package matmul

import "testing"

// held is the bytes of the solver's arrays and buffers.
func held(s *Solver) int64 {
	return int64(8*(cap(s.a)+cap(s.c)+cap(s.bt)) + cap(s.send) + cap(s.recv))
}

// The estimate is what the solver holds plus one copy of its checkpoint
// state.
func TestMemoryNeedCoversNew(t *testing.T) {
	cfg := Config{N: 384, Seed: 1, Panels: 4}
	for _, rs := range [][2]int{{0, 1}, {0, 3}, {2, 3}} {
		s, err := New(cfg, rs[0], rs[1])
		if err != nil {
			t.Fatal(err)
		}
		got, state := held(s), s.StateSize()
		if need := cfg.MemoryNeed(rs[0], rs[1]); need < got+state-1024 || need > got+state+1024 {
			t.Errorf("rank %d of %d: MemoryNeed %d, the solver holds %d and its state is %d", rs[0], rs[1], need, got, state)
		}
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
