package himeno

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestCheckpointRestore stops a run at iteration k, saves every rank,
// restores into fresh solvers (and into solvers that have run on, whose
// scratch array is not fresh), continues, and compares with an
// uninterrupted run.
func TestCheckpointRestore(t *testing.T) {
	const k, total = 5, 11
	for _, size := range []int{1, 3, 4} {
		whole := newLocalJob(size, 0)
		ref := newSolvers(t, small, size)
		want := result{gosa: steps(t, whole, ref, total)}
		want.sum = checksum(t, whole, ref)

		for _, advanced := range []bool{false, true} {
			job := newLocalJob(size, 0)
			first := newSolvers(t, small, size)
			got := result{gosa: steps(t, job, first, k)}
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
			second := newSolvers(t, small, size)
			if advanced {
				steps(t, job, second, 2)
			}
			for r, s := range second {
				var err error
				if r%2 == 0 {
					err = s.UnmarshalBinary(states[r])
				} else {
					var n int64
					n, err = s.ReadFrom(bytes.NewReader(states[r]))
					if n != int64(len(states[r])) {
						t.Errorf("ReadFrom read %d bytes of %d", n, len(states[r]))
					}
				}
				if err != nil {
					t.Fatal(err)
				}
				if s.Iteration() != k {
					t.Fatalf("restored Iteration() = %d, want %d", s.Iteration(), k)
				}
			}
			got.gosa = append(got.gosa, steps(t, job, second, total-k)...)
			got.sum = checksum(t, job, second)
			if !got.equal(want) {
				t.Errorf("%d ranks, restored at %d (advanced %v): gosa %v sum %x, uninterrupted %v %x",
					size, k, advanced, got.gosa, got.sum, want.gosa, want.sum)
			}
		}
	}
}

// TestStream reads two states back to back from one stream.
func TestStream(t *testing.T) {
	job := newLocalJob(1, 0)
	s := newSolvers(t, small, 1)
	var b bytes.Buffer
	steps(t, job, s, 2)
	s[0].WriteTo(&b)
	steps(t, job, s, 3)
	s[0].WriteTo(&b)
	for _, want := range []int{2, 5} {
		if _, err := s[0].ReadFrom(&b); err != nil || s[0].Iteration() != want {
			t.Fatalf("ReadFrom: %v, iteration %d, want %d", err, s[0].Iteration(), want)
		}
	}
	if b.Len() != 0 {
		t.Errorf("%d bytes left", b.Len())
	}
}

func TestBadState(t *testing.T) {
	job := newLocalJob(3, 0)
	solvers := newSolvers(t, small, 3)
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
	edit := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(good)) }
	for _, tc := range []struct {
		name  string
		state []byte
		is    error
		want  string
	}{
		{"empty", nil, ErrCorrupt, "truncated in the header"},
		{"short header", good[:headerLen-1], ErrCorrupt, "truncated in the header"},
		{"no planes", good[:headerLen], ErrCorrupt, "truncated in the planes"},
		{"short planes", good[:len(good)/2], ErrCorrupt, "truncated in the planes"},
		{"no checksum", good[:len(good)-4], ErrCorrupt, "truncated in the checksum"},
		{"short checksum", good[:len(good)-1], ErrCorrupt, "truncated in the checksum"},
		{"trailing", append(bytes.Clone(good), 0), ErrCorrupt, "1 trailing bytes"},
		{"magic", edit(func(b []byte) []byte { b[0] = 'H'; return b }), ErrCorrupt, "not a himeno state"},
		{"version", edit(func(b []byte) []byte { b[7] = 9; return b }), ErrCorrupt, "format version 9"},
		{"flipped bit", edit(func(b []byte) []byte { b[headerLen+17] ^= 4; return b }), ErrCorrupt, "CRC-32C"},
		{"iteration", edit(func(b []byte) []byte { b[headerLen-1] = 0x7f; return b }), ErrCorrupt, "iteration"},
		{"rank", other(small, 2, 3), ErrMismatch, "state of rank 2, solver of rank 1"},
		{"size", other(small, 1, 2), ErrMismatch, "state of a 2-rank run, solver of a 3-rank run"},
		{"grid", other(Config{12, 10, 15}, 1, 3), ErrMismatch, "state of size 12x10x15, solver of size 12x10x14"},
		{"slab", edit(func(b []byte) []byte { b[8+5*4]++; return b }), ErrMismatch, "state of planes [5, 7)"},
	} {
		before, _ := s.MarshalBinary()
		err := s.UnmarshalBinary(tc.state)
		if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: UnmarshalBinary = %v, want %v naming %q", tc.name, err, tc.is, tc.want)
		}
		if _, err := s.ReadFrom(bytes.NewReader(tc.state)); !errors.Is(err, tc.is) && tc.name != "trailing" {
			t.Errorf("%s: ReadFrom = %v, want %v", tc.name, err, tc.is)
		}
		if after, _ := s.MarshalBinary(); !slices.Equal(before, after) {
			t.Fatalf("%s: a rejected state changed the solver", tc.name)
		}
	}
}
