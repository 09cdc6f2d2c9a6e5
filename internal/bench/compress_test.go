package bench

import (
	"context"
	"math"
	"testing"

	"github.com/ckpt/ckpt/examples/himeno"
)

// TestRunCompress runs the compression benchmark small: every kind
// round-trips (compressRound checks every restored byte), random bytes
// are stored as written, the others shrink, and the figures are set.
func TestRunCompress(t *testing.T) {
	grid, err := himeno.ParseSize("65x65x129")
	if err != nil {
		t.Fatal(err)
	}
	r, err := RunCompress(context.Background(), CompressConfig{Dir: t.TempDir(), Himeno: grid, Iterations: 1, Rounds: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Kinds) != 4 {
		t.Fatalf("%d kinds, want 4", len(r.Kinds))
	}
	for _, k := range r.Kinds {
		if k.Logical != 4*k.RankBytes || k.Stored <= 0 || math.IsNaN(k.TimeRatio) || k.CheckpointOff <= 0 || k.RestartAuto <= 0 || k.RawWrite <= 0 {
			t.Errorf("%s: figures not set: %+v", k.State, k)
		}
		switch k.State {
		case "random", "noisy-floats":
			if k.Stored != k.Logical || k.Forms["stored"] != 4 {
				// Random bytes save nothing; noisy floats a fifth, which does not pay.
				t.Errorf("%s: stored %d of %d bytes in forms %v, want all as written", k.State, k.Stored, k.Logical, k.Forms)
			}
		default:
			if k.Ratio < 2 || k.Forms["stored"] != 0 {
				t.Errorf("%s: ratio %.2f, forms %v: want every file compressed, at least by half", k.State, k.Ratio, k.Forms)
			}
		}
	}
}

// TestHimenoSlabs: the slabs are the pressure array cut in whole floats,
// together exactly its bytes.
func TestHimenoSlabs(t *testing.T) {
	grid, err := himeno.ParseSize("xs")
	if err != nil {
		t.Fatal(err)
	}
	slabs, err := HimenoSlabs(context.Background(), grid, 0, 3)
	if err != nil {
		t.Fatal(err)
	}
	s, err := himeno.New(grid, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, b := range slabs {
		if len(b)%4 != 0 || len(b) == 0 {
			t.Errorf("a slab of %d bytes: not whole float32s", len(b))
		}
		total += int64(len(b))
	}
	if want := s.StateSize() - (8 + 7*4 + 8) - 4; total != want {
		t.Errorf("slabs hold %d bytes, the state's array %d", total, want)
	}
}
