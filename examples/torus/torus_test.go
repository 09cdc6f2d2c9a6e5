package torus

import (
	"strings"
	"testing"
)

// Validate refuses each bad size, naming it, and takes a good one.
func TestValidate(t *testing.T) {
	bad := map[string]Config{
		"torus 1×1: need at least 2 ranks":       {W: 1, H: 1, Steps: 1},
		"torus 0×4: need at least 2 ranks":       {W: 0, H: 4, Steps: 1},
		"torus: 0 steps":                         {W: 3, H: 2},
		"torus: matrix order -1: want 0 to 2048": {W: 3, H: 2, Steps: 1, N: -1},
		"torus: matrix order 4096":               {W: 3, H: 2, Steps: 1, N: 4096},
	}
	for want, cfg := range bad {
		if err := cfg.Validate(); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%+v: %v, want %q", cfg, err, want)
		}
	}
	if err := (Config{W: 3, H: 2, Steps: 1, N: 8}).Validate(); err != nil {
		t.Errorf("a good config: %v", err)
	}
}

// On a 3×2 torus rank 4 = (1, 1): right (2, 1) = 5, down (1, 0) = 1,
// left (0, 1) = 3, up (1, 0) = 1; the corner wraps.
func TestNeighbours(t *testing.T) {
	c := Config{W: 3, H: 2}
	if r, d, l, u := c.Neighbours(4); r != 5 || d != 1 || l != 3 || u != 1 {
		t.Errorf("Neighbours(4) = %d %d %d %d, want 5 1 3 1", r, d, l, u)
	}
	if r, d, l, u := c.Neighbours(2); r != 0 || d != 5 || l != 1 || u != 5 {
		t.Errorf("Neighbours(2) = %d %d %d %d, want 0 5 1 5", r, d, l, u)
	}
	// Every rank is the left neighbour of its right one, and the upper
	// of its lower one.
	for _, c := range []Config{{W: 3, H: 2}, {W: 4, H: 4}, {W: 2, H: 5}} {
		for r := range c.W * c.H {
			right, down, _, _ := c.Neighbours(r)
			if _, _, l, _ := c.Neighbours(right); l != r {
				t.Errorf("%dx%d: rank %d's right %d has left %d", c.W, c.H, r, right, l)
			}
			if _, _, _, u := c.Neighbours(down); u != r {
				t.Errorf("%dx%d: rank %d's lower %d has upper %d", c.W, c.H, r, down, u)
			}
		}
	}
}

// The compute phase is a function of its inputs, changes with each, and
// is the identity without a matrix.
func TestCompute(t *testing.T) {
	c := Config{N: 8}
	a := c.Compute(7, 3)
	if a != c.Compute(7, 3) {
		t.Fatal("Compute is not deterministic")
	}
	if a == c.Compute(8, 3) || a == c.Compute(7, 4) || a == (Config{N: 9}).Compute(7, 3) {
		t.Error("Compute ignores its value, step or order")
	}
	if (Config{}).Compute(7, 3) != 7 {
		t.Error("N = 0 computes something")
	}
}

// The reference names its run and changes with the steps and the order
// (any step lost or repeated changes the result).
func TestReference(t *testing.T) {
	c := Config{W: 3, H: 2, Steps: 5, N: 4}
	ref := c.Reference()
	if !strings.HasPrefix(ref, "torus 3x2 steps=5 n=4 ") || len(strings.Fields(ref)) != 4+6 {
		t.Errorf("reference %q", ref)
	}
	if ref != c.Reference() {
		t.Error("the reference is not deterministic")
	}
	more, other := c, c
	more.Steps, other.N = 6, 5
	if strings.Fields(more.Reference())[4] == strings.Fields(ref)[4] || strings.Fields(other.Reference())[4] == strings.Fields(ref)[4] {
		t.Error("the values do not change with the steps or the order")
	}
}
