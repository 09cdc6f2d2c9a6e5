package matmul

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/zeebo/xxh3"

	"github.com/ckpt/ckpt/internal/resource"
)

// Config describes a multiplication.
type Config struct {
	// N is the order of the matrices.
	N int
	// Seed selects A and B.
	Seed uint64
	// Panels is the number of Steps a block of B takes on each rank (its
	// columns are split into this many panels); 0 means 1. More panels
	// mean more points at which the job can checkpoint.
	Panels int
}

// maxN bounds N so that sizes and offsets cannot overflow.
const maxN = 1 << 20

// Validate reports whether c describes a multiplication.
func (c Config) Validate() error {
	if c.N < 1 || c.N > maxN {
		return fmt.Errorf("matmul: n=%d is outside [1, %d]", c.N, maxN)
	}
	if c.Panels < 0 || c.Panels > maxN {
		return fmt.Errorf("matmul: panels=%d is outside [0, %d]", c.Panels, maxN)
	}
	return nil
}

func (c Config) panels() int { return max(c.Panels, 1) }

// Flops returns the floating-point operations of the whole product: a
// multiply and an add per term, 2n³.
func (c Config) Flops() float64 { return 2 * float64(c.N) * float64(c.N) * float64(c.N) }

// A returns element (i, k) of A: a value in [-1, 1) that depends only on
// the seed and the position, so any rank generates any part of A alone.
func (c Config) A(i, k int) float64 { return c.element(0, i, k) }

// B returns element (k, j) of B, generated as A's.
func (c Config) B(k, j int) float64 { return c.element(1, k, j) }

// element is splitmix64 of the seed advanced to the position, mapped to
// [-1, 1) with 53 random bits.
func (c Config) element(m, i, j int) float64 {
	x := c.Seed + 0x9e3779b97f4a7c15*(2*(uint64(i)*uint64(c.N)+uint64(j))+uint64(m)+1)
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	x ^= x >> 31
	return float64(x>>11)*0x1p-52 - 1
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

// Solver is one rank's part of the multiplication. It is not safe for
// concurrent use.
type Solver struct {
	cfg        Config
	n, panels  int
	rank, size int
	rlo, rhi   int // rows of A and C on this rank

	a  []float64 // rows [rlo, rhi) of A, row-major
	c  []float64 // rows [rlo, rhi) of C, row-major
	bt []float64 // the held block of columns of B, transposed: row j is column blo+j

	step int // Steps completed

	send, recv []byte // message buffers, one block each
}

// New returns the solver of rank rank of size ranks for cfg. Every rank
// needs at least one row, so size may be at most N.
func New(cfg Config, rank, size int) (*Solver, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if size < 1 {
		return nil, fmt.Errorf("matmul: size=%d ranks, need at least 1", size)
	}
	if rank < 0 || rank >= size {
		return nil, fmt.Errorf("matmul: rank=%d is outside [0, %d)", rank, size)
	}
	if size > cfg.N {
		return nil, fmt.Errorf("matmul: n=%d rows are too few for %d ranks", cfg.N, size)
	}
	n := cfg.N
	s := &Solver{cfg: cfg, n: n, panels: cfg.panels(), rank: rank, size: size}
	s.rlo, s.rhi = split(n, size, rank)
	rows := s.rhi - s.rlo
	s.a = make([]float64, rows*n)
	for i := range rows {
		for k := range n {
			s.a[i*n+k] = cfg.A(s.rlo+i, k)
		}
	}
	s.c = make([]float64, rows*n)
	width := (n + size - 1) / size // the widest block
	blo, bhi := s.block(rank)
	s.bt = make([]float64, (bhi-blo)*n, width*n)
	for j := range bhi - blo {
		for k := range n {
			s.bt[j*n+k] = cfg.B(k, blo+j)
		}
	}
	s.send = make([]byte, 8*width*n)
	s.recv = make([]byte, 8*width*n)
	return s, nil
}

// Config returns the configuration.
func (s *Solver) Config() Config { return s.cfg }

// Rank returns the rank the solver was built for.
func (s *Solver) Rank() int { return s.rank }

// Size returns the number of ranks the solver was built for.
func (s *Solver) Size() int { return s.size }

// Rows returns the rows of A and C on this rank: [lo, hi).
func (s *Solver) Rows() (lo, hi int) { return s.rlo, s.rhi }

// Steps returns the number of Steps of the whole multiplication, on every
// rank: one per panel of each of the size blocks of B.
func (s *Solver) Steps() int { return s.size * s.panels }

// Completed returns the number of Steps completed.
func (s *Solver) Completed() int { return s.step }

// Done reports whether the multiplication is complete.
func (s *Solver) Done() bool { return s.step == s.Steps() }

// block returns the columns of block b of B.
func (s *Solver) block(b int) (lo, hi int) { return split(s.n, s.size, b) }

// held returns the block of B this rank holds after step Steps: at stage
// t (Steps t·panels … (t+1)·panels-1) rank r holds block (r+t) mod size.
func (s *Solver) held(step int) int {
	stage := min(step/s.panels, s.size-1)
	return (s.rank + stage) % s.size
}

func (s *Solver) checkComm(c Comm) error {
	if c.Rank() != s.rank || c.Size() != s.size {
		return fmt.Errorf("matmul: solver of rank %d of %d driven by comm of rank %d of %d", s.rank, s.size, c.Rank(), c.Size())
	}
	return nil
}

// Step runs one step: it computes the next panel of C's columns from the
// held block of B, and after the last panel of a block passes the block to
// the previous rank on the ring and receives the next from the following
// one. It returns done when the multiplication is complete; then further
// calls do nothing. Every rank must call Step the same number of times.
//
// On error the solver is still at the step before the call, but the job is
// out of step (peers may have completed it) and restarts from a checkpoint.
func (s *Solver) Step(ctx context.Context, c Comm) (done bool, err error) {
	if err := s.checkComm(c); err != nil {
		return false, err
	}
	if s.Done() {
		return true, nil
	}
	stage, q := s.step/s.panels, s.step%s.panels
	blo, bhi := s.block(s.held(s.step))
	plo, phi := split(bhi-blo, s.panels, q)
	s.multiply(plo, phi, blo)
	if q == s.panels-1 && stage < s.size-1 {
		if err := s.shift(ctx, c, stage); err != nil {
			return false, fmt.Errorf("matmul: step %d: %w", s.step, err)
		}
	}
	s.step++
	return s.Done(), nil
}

// shift passes the held block to rank-1 and receives the next from rank+1.
// Rank 0 receives first and the others send first, which is free of
// deadlock even if Send waits for the matching Recv.
func (s *Solver) shift(ctx context.Context, c Comm, stage int) error {
	left, right := (s.rank+s.size-1)%s.size, (s.rank+1)%s.size
	tag := uint64(stage)
	msg := s.send[:8*len(s.bt)]
	for i, v := range s.bt {
		binary.LittleEndian.PutUint64(msg[8*i:], math.Float64bits(v))
	}
	nlo, nhi := s.block((s.rank + stage + 1) % s.size)
	want := 8 * (nhi - nlo) * s.n
	var got []byte
	recv := func() (err error) {
		got, err = c.Recv(ctx, right, tag, s.recv)
		if err != nil {
			return fmt.Errorf("block from rank %d: %w", right, err)
		}
		if len(got) != want {
			return fmt.Errorf("block from rank %d: %d bytes, want %d", right, len(got), want)
		}
		return nil
	}
	send := func() error {
		if err := c.Send(ctx, left, tag, msg); err != nil {
			return fmt.Errorf("block to rank %d: %w", left, err)
		}
		return nil
	}
	first, second := send, recv
	if s.rank == 0 {
		first, second = recv, send
	}
	if err := first(); err != nil {
		return err
	}
	if err := second(); err != nil {
		return err
	}
	s.bt = s.bt[:want/8]
	for i := range s.bt {
		s.bt[i] = math.Float64frombits(binary.LittleEndian.Uint64(got[8*i:]))
	}
	return nil
}

// multiply computes C[i][blo+j] for this rank's rows and the held block's
// columns j in [jlo, jhi). Each element is one dot product of a row of A
// and a column of B, summed in k order from 0 to n-1 whatever the number
// of ranks. Rows and columns go in pairs for instruction-level
// parallelism, each element keeping its own sum. Every product is
// converted to float64 explicitly, which forbids the compiler to fuse it
// into a multiply-add: results are the same on every platform.
func (s *Solver) multiply(jlo, jhi, blo int) {
	n, rows := s.n, s.rhi-s.rlo
	i := 0
	for ; i+1 < rows; i += 2 {
		a0, a1 := s.a[i*n:][:n], s.a[(i+1)*n:][:n]
		c0, c1 := s.c[i*n:][:n], s.c[(i+1)*n:][:n]
		j := jlo
		for ; j+1 < jhi; j += 2 {
			b0, b1 := s.bt[j*n:][:n], s.bt[(j+1)*n:][:n]
			var s00, s01, s10, s11 float64
			for k := range n {
				x0, x1, y0, y1 := a0[k], a1[k], b0[k], b1[k]
				s00 += float64(x0 * y0)
				s01 += float64(x0 * y1)
				s10 += float64(x1 * y0)
				s11 += float64(x1 * y1)
			}
			c0[blo+j], c0[blo+j+1], c1[blo+j], c1[blo+j+1] = s00, s01, s10, s11
		}
		if j < jhi {
			b := s.bt[j*n:][:n]
			c0[blo+j], c1[blo+j] = dot(a0, b), dot(a1, b)
		}
	}
	if i < rows {
		a, c := s.a[i*n:][:n], s.c[i*n:][:n]
		for j := jlo; j < jhi; j++ {
			c[blo+j] = dot(a, s.bt[j*n:][:n])
		}
	}
}

func dot(a, b []float64) float64 {
	var sum float64
	b = b[:len(a)]
	for k, x := range a {
		sum += float64(x * b[k])
	}
	return sum
}

// Checksum returns a checksum of C that does not depend on the number of
// ranks: XXH3-64 of every row's XXH3-64 (as 8 little-endian bytes, in row
// order), where a row is its n values as little-endian float64s. It is
// collective.
func (s *Solver) Checksum(ctx context.Context, c Comm) (uint64, error) {
	if err := s.checkComm(c); err != nil {
		return 0, err
	}
	row := make([]byte, 8*s.n)
	sums := make([]byte, 0, 8*(s.rhi-s.rlo))
	for i := range s.rhi - s.rlo {
		for j, v := range s.c[i*s.n:][:s.n] {
			binary.LittleEndian.PutUint64(row[8*j:], math.Float64bits(v))
		}
		sums = binary.LittleEndian.AppendUint64(sums, xxh3.Hash(row))
	}
	all, err := c.AllGather(ctx, sums)
	if err != nil {
		return 0, fmt.Errorf("matmul: checksum all-gather: %w", err)
	}
	if len(all) != s.size {
		return 0, fmt.Errorf("matmul: checksum all-gather: %d contributions, want %d", len(all), s.size)
	}
	cat := make([]byte, 0, 8*s.n)
	for r, d := range all {
		lo, hi := split(s.n, s.size, r)
		if len(d) != 8*(hi-lo) {
			return 0, fmt.Errorf("matmul: checksum all-gather: rank %d sent %d bytes, want %d", r, len(d), 8*(hi-lo))
		}
		cat = append(cat, d...)
	}
	return xxh3.Hash(cat), nil
}

// MemoryNeed estimates the bytes rank rank of size ranks needs for cfg: its
// rows of A and C, the widest block of B and the two message buffers, plus
// one copy of its checkpoint state (rows of C and a block of B). The
// arithmetic saturates: an absurd N gives an absurd need, never a small
// one that wrapped around. It assumes New would accept the arguments.
func (c Config) MemoryNeed(rank, size int) int64 {
	if size < 1 || rank < 0 || rank >= size || c.N < 1 {
		return 0
	}
	lo, hi := split(c.N, size, rank)
	n, rows := int64(c.N), int64(hi-lo)
	width := (n + int64(size) - 1) / int64(size)
	// 8 bytes per float64: A, C and the state's C (3 rows); B, its
	// state copy and the send and receive buffers (4 widths).
	return resource.Mul(8, n, resource.Add(resource.Mul(3, rows), resource.Mul(4, width)))
}
