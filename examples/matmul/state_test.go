package matmul

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestCheckpointRestore stops at every step in turn, saves every rank,
// restores into fresh solvers (and into solvers that have run on), finishes,
// and compares with an uninterrupted run.
func TestCheckpointRestore(t *testing.T) {
	cfg := Config{N: 23, Seed: 9, Panels: 3}
	for _, size := range []int{1, 3, 4} {
		whole := newLocalJob(size, 0)
		ref := newSolvers(t, cfg, size)
		steps(t, whole, ref, -1)
		want := checksum(t, whole, ref)

		for k := 0; k <= size*cfg.Panels; k++ {
			advanced := k%2 == 1
			job := newLocalJob(size, 0)
			first := newSolvers(t, cfg, size)
			steps(t, job, first, k)
			states := make([][]byte, size)
			for r, s := range first {
				var err error
				if r%2 == 0 {
					states[r], err = s.MarshalBinary()
				} else {
					var b bytes.Buffer
					var n int64
					n, err = s.WriteTo(&b)
					if n != int64(b.Len()) || n != s.StateSize() {
						t.Fatalf("WriteTo wrote %d bytes, reported %d, StateSize %d", b.Len(), n, s.StateSize())
					}
					states[r] = b.Bytes()
				}
				if err != nil {
					t.Fatal(err)
				}
			}

			job = newLocalJob(size, 0)
			second := newSolvers(t, cfg, size)
			if advanced {
				steps(t, job, second, 2)
			}
			for r, s := range second {
				var err error
				if r%2 == 0 {
					err = s.UnmarshalBinary(states[r])
				} else {
					_, err = s.ReadFrom(bytes.NewReader(states[r]))
				}
				if err != nil {
					t.Fatal(err)
				}
				if s.Completed() != k {
					t.Fatalf("restored Completed() = %d, want %d", s.Completed(), k)
				}
			}
			steps(t, job, second, -1)
			if got := checksum(t, job, second); got != want {
				t.Errorf("%d ranks, restored at step %d (advanced %v): checksum %x, uninterrupted %x", size, k, advanced, got, want)
			}
		}
	}
}

func TestBadState(t *testing.T) {
	cfg := Config{N: 10, Seed: 1, Panels: 2}
	job := newLocalJob(3, 0)
	solvers := newSolvers(t, cfg, 3)
	steps(t, job, solvers, 3)
	s := solvers[1]
	good, err := s.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	other := func(cfg Config, rank, size int) []byte {
		o, err := New(cfg, rank, size)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := o.MarshalBinary()
		return b
	}
	edit := func(f func(b []byte)) []byte {
		b := bytes.Clone(good)
		f(b)
		return b
	}
	for _, tc := range []struct {
		name  string
		state []byte
		is    error
		want  string
	}{
		{"empty", nil, ErrCorrupt, "truncated in the header"},
		{"short header", good[:headerLen-1], ErrCorrupt, "truncated in the header"},
		{"no matrices", good[:headerLen], ErrCorrupt, "truncated in the matrices"},
		{"short matrices", good[:len(good)/2], ErrCorrupt, "truncated in the matrices"},
		{"no checksum", good[:len(good)-4], ErrCorrupt, "truncated in the checksum"},
		{"trailing", append(bytes.Clone(good), 0), ErrCorrupt, "1 trailing bytes"},
		{"magic", edit(func(b []byte) { b[0] = 'M' }), ErrCorrupt, "not a matmul state"},
		{"version", edit(func(b []byte) { b[7] = 0 }), ErrCorrupt, "format version 0"},
		{"flipped bit", edit(func(b []byte) { b[headerLen+100] ^= 1 }), ErrCorrupt, "CRC-32C"},
		{"step", edit(func(b []byte) { b[36] = 7 }), ErrCorrupt, "step 7 of 6"},
		{"huge n", edit(func(b []byte) { b[15] = 0xff }), ErrMismatch, "n=1048577"},
		{"rank", other(cfg, 2, 3), ErrMismatch, "state of rank 2, solver of rank 1"},
		{"size", other(cfg, 1, 2), ErrMismatch, "state of a 2-rank run, solver of a 3-rank run"},
		{"seed", other(Config{N: 10, Seed: 2, Panels: 2}, 1, 3), ErrMismatch, "seed=2"},
		{"panels", other(Config{N: 10, Seed: 1}, 1, 3), ErrMismatch, "panels=1"},
	} {
		before, _ := s.MarshalBinary()
		err := s.UnmarshalBinary(tc.state)
		if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: UnmarshalBinary = %v, want %v naming %q", tc.name, err, tc.is, tc.want)
		}
		if after, _ := s.MarshalBinary(); !slices.Equal(before, after) {
			t.Fatalf("%s: a rejected state changed the solver", tc.name)
		}
	}
	// Panels 0 and 1 are the same configuration.
	one := newSolvers(t, Config{N: 10, Seed: 1, Panels: 1}, 1)[0]
	if err := one.UnmarshalBinary(other(Config{N: 10, Seed: 1}, 0, 1)); err != nil {
		t.Errorf("Panels 0 state into a Panels 1 solver: %v", err)
	}
}
