package himeno

import (
	"fmt"
	"strings"
	"time"

	"github.com/ckpt/ckpt/internal/resource"
)

// Config is a grid size. I, J and K are the array extents of the original
// benchmark (its MIMAX, MJMAX, MKMAX); as in the original the solver works
// on the first I-1 × J-1 × K-1 points (imax = MIMAX-1, and so on), updates
// the inner I-3 × J-3 × K-3 of them, and the last index of each dimension is
// padding that keeps the row and plane strides away from powers of two.
type Config struct {
	I, J, K int
}

// The original's grid sizes.
var (
	XS = Config{33, 33, 65}
	S  = Config{65, 65, 129}
	M  = Config{129, 129, 257}
	L  = Config{257, 257, 513}
	XL = Config{513, 513, 1025}
)

// Omega is the relaxation factor of the original.
const Omega float32 = 0.8

// FlopsPerPoint is the original's count of floating-point operations per
// updated point per iteration.
const FlopsPerPoint = 34

// maxExtent bounds each extent so that sizes and offsets cannot overflow.
const maxExtent = 1 << 16

// ParseSize returns the Config of one of the original's size names (xs, s,
// m, l, xl; any case) or of a custom size written I×J×K or IxJxK.
func ParseSize(name string) (Config, error) {
	switch strings.ToLower(name) {
	case "xs":
		return XS, nil
	case "s":
		return S, nil
	case "m":
		return M, nil
	case "l":
		return L, nil
	case "xl":
		return XL, nil
	}
	var c Config
	spec := strings.ReplaceAll(strings.ToLower(name), "×", "x")
	if n, err := fmt.Sscanf(spec, "%dx%dx%d", &c.I, &c.J, &c.K); err != nil || n != 3 || c.String() != spec {
		return Config{}, fmt.Errorf("himeno: size %q is not xs, s, m, l, xl or IxJxK", name)
	}
	return c, c.Validate()
}

// String returns the size as IxJxK.
func (c Config) String() string { return fmt.Sprintf("%dx%dx%d", c.I, c.J, c.K) }

// Validate reports whether the solver can run on c: every extent must be at
// least 4 (one inner point) and at most 65536.
func (c Config) Validate() error {
	for _, e := range []struct {
		name string
		v    int
	}{{"I", c.I}, {"J", c.J}, {"K", c.K}} {
		if e.v < 4 || e.v > maxExtent {
			return fmt.Errorf("himeno: size %v: %s=%d is outside [4, %d]", c, e.name, e.v, maxExtent)
		}
	}
	return nil
}

// Points returns the number of points updated per iteration.
func (c Config) Points() int { return (c.I - 3) * (c.J - 3) * (c.K - 3) }

// Flops returns the floating-point operations of one iteration over the
// whole grid, counted as the original does (34 per updated point).
func (c Config) Flops() float64 { return float64(c.Points()) * FlopsPerPoint }

// MFLOPS returns the original's figure of merit for iterations iterations
// that took elapsed: Flops per iteration times iterations, per microsecond.
func (c Config) MFLOPS(iterations int, elapsed time.Duration) float64 {
	if elapsed <= 0 {
		return 0
	}
	return c.Flops() * float64(iterations) / elapsed.Seconds() * 1e-6
}

// split returns the half-open range of n items that part r of p gets: the
// first n%p parts get one more than the rest.
func split(n, p, r int) (lo, hi int) {
	base, rem := n/p, n%p
	lo = r*base + min(r, rem)
	hi = lo + base
	if r < rem {
		hi++
	}
	return lo, hi
}

// MemoryNeed estimates the bytes rank rank of size ranks needs for grid c:
// the solver's 14 float32 arrays over its planes and their two halos, the
// halo message buffers and the residual sums, plus one copy of its
// checkpoint state (its planes' inner points). The arithmetic saturates:
// an absurd grid gives an absurd need, never a small one that wrapped
// around. It assumes New would accept the arguments.
func (c Config) MemoryNeed(rank, size int) int64 {
	if size < 1 || rank < 0 || rank >= size || c.I < 4 || c.J < 4 || c.K < 4 {
		return 0
	}
	lo, hi := split(c.I-3, size, rank)
	n := int64(hi - lo)
	plane := resource.Mul(int64(c.J), int64(c.K))
	inner := resource.Mul(int64(c.J-3), int64(c.K-3))
	return resource.Add(
		resource.Mul(14*4, n+2, plane), // the arrays
		resource.Mul(2*4, inner),       // msg and rbuf
		resource.Mul(8, n),             // sums
		resource.Mul(4, n, inner),      // the state's copy
	)
}
