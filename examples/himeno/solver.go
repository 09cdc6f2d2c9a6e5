package himeno

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/zeebo/xxh3"
)

// Solver is one rank's part of a distributed Himeno run: a slab of i-planes
// with a halo plane on each side. It is not safe for concurrent use.
type Solver struct {
	cfg        Config
	rank, size int
	lo, hi     int // the inner global i-planes this rank updates: [lo, hi)
	n          int // hi - lo
	imax       int // the original's imax, jmax, kmax
	jmax, kmax int
	ps, rs     int // plane and row strides of the local arrays

	// Local arrays hold global planes lo-1 .. hi (local plane li is global
	// plane lo-1+li), with the original's padded strides. p and wrk2 swap
	// roles every iteration; the points the Jacobi sweep never writes (the
	// grid's faces and the padding) are equal in both.
	p, wrk2 []float32
	a       [4][]float32
	b, c    [3][]float32
	bnd     []float32
	wrk1    []float32

	iter    int
	pending int // the iteration of a state read but not yet committed

	sums []float64 // per-plane partial gosa of the last sweep
	msg  []byte    // a packed plane
	rbuf []byte    // receive buffer
}

// New returns the solver of rank rank of size ranks for grid cfg, set up
// as the original's initialisation does. Rank r updates a contiguous share
// of the I-3 inner i-planes, so size may be at most I-3.
func New(cfg Config, rank, size int) (*Solver, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if size < 1 {
		return nil, fmt.Errorf("himeno: size=%d ranks, need at least 1", size)
	}
	if rank < 0 || rank >= size {
		return nil, fmt.Errorf("himeno: rank=%d is outside [0, %d)", rank, size)
	}
	imax, jmax, kmax := cfg.I-1, cfg.J-1, cfg.K-1
	if inner := imax - 2; size > inner {
		return nil, fmt.Errorf("himeno: size %v has %d inner i-planes (I-3), too few for %d ranks", cfg, inner, size)
	}
	lo, hi := split(imax-2, size, rank)
	lo, hi = lo+1, hi+1
	s := &Solver{
		cfg: cfg, rank: rank, size: size,
		lo: lo, hi: hi, n: hi - lo,
		imax: imax, jmax: jmax, kmax: kmax,
		ps: cfg.J * cfg.K, rs: cfg.K,
	}
	length := (s.n + 2) * s.ps
	arrays := []*[]float32{&s.p, &s.wrk2, &s.bnd, &s.wrk1}
	for i := range s.a {
		arrays = append(arrays, &s.a[i])
	}
	for i := range s.b {
		arrays = append(arrays, &s.b[i], &s.c[i])
	}
	for _, arr := range arrays {
		*arr = make([]float32, length)
	}
	// The original's initmt, over this rank's planes; the padding stays 0.
	den := float32((kmax - 1) * (kmax - 1))
	for li := 0; li < s.n+2; li++ {
		for j := 0; j < jmax; j++ {
			for k := 0; k < kmax; k++ {
				x := li*s.ps + j*s.rs + k
				s.a[0][x], s.a[1][x], s.a[2][x], s.a[3][x] = 1, 1, 1, 1.0/6.0
				s.b[0][x], s.b[1][x], s.b[2][x] = 0, 0, 0
				s.c[0][x], s.c[1][x], s.c[2][x] = 1, 1, 1
				s.p[x] = float32(k*k) / den
				s.wrk1[x] = 0
				s.bnd[x] = 1
			}
		}
	}
	copy(s.wrk2, s.p)
	s.sums = make([]float64, s.n)
	s.msg = make([]byte, 4*(jmax-2)*(kmax-2))
	s.rbuf = make([]byte, len(s.msg))
	return s, nil
}

// Config returns the grid size.
func (s *Solver) Config() Config { return s.cfg }

// Rank returns the rank the solver was built for.
func (s *Solver) Rank() int { return s.rank }

// Size returns the number of ranks the solver was built for.
func (s *Solver) Size() int { return s.size }

// Planes returns the global i-planes this rank updates: [lo, hi).
func (s *Solver) Planes() (lo, hi int) { return s.lo, s.hi }

// Iteration returns the number of iterations completed.
func (s *Solver) Iteration() int { return s.iter }

// Flops returns the floating-point operations of one iteration on this
// rank, counted as the original does.
func (s *Solver) Flops() float64 {
	return float64(s.n) * float64((s.jmax-2)*(s.kmax-2)) * FlopsPerPoint
}

func (s *Solver) checkComm(c Comm) error {
	if c.Rank() != s.rank || c.Size() != s.size {
		return fmt.Errorf("himeno: solver of rank %d of %d driven by comm of rank %d of %d", s.rank, s.size, c.Rank(), c.Size())
	}
	return nil
}

// Step runs one Jacobi iteration: it exchanges halo planes with the
// neighbouring ranks, sweeps its slab, and returns the iteration's gosa
// over the whole grid (the sum of ss*ss of the original), which is the same
// on every rank and for every number of ranks. Every rank must call Step
// the same number of times.
//
// On error the solver still holds the state of the iteration before the
// call (Iteration is unchanged), but the job is out of step: peers may have
// completed the iteration, so the job restarts from a checkpoint.
func (s *Solver) Step(ctx context.Context, c Comm) (gosa float64, err error) {
	if err := s.checkComm(c); err != nil {
		return 0, err
	}
	if err := s.exchange(ctx, c); err != nil {
		return 0, fmt.Errorf("himeno: iteration %d: %w", s.iter, err)
	}
	s.sweep()
	gosa, err = s.reduce(ctx, c)
	if err != nil {
		return 0, fmt.Errorf("himeno: iteration %d: %w", s.iter, err)
	}
	s.p, s.wrk2 = s.wrk2, s.p
	s.iter++
	return gosa, nil
}

// exchange refreshes both halo planes of p. Ranks pair up (0,1), (2,3), …
// and then (1,2), (3,4), …; in each pair the left rank sends first and the
// right one receives first, so the exchange cannot deadlock even if Send
// waits for the matching Recv.
func (s *Solver) exchange(ctx context.Context, c Comm) error {
	for phase := range 2 {
		if s.rank%2 == phase {
			if s.rank+1 < s.size {
				if err := s.swapHalo(ctx, c, s.rank+1, true); err != nil {
					return err
				}
			}
		} else if s.rank > 0 {
			if err := s.swapHalo(ctx, c, s.rank-1, false); err != nil {
				return err
			}
		}
	}
	return nil
}

// swapHalo sends the owned plane next to peer and receives peer's plane
// into the halo on its side. Only the plane's inner rows are sent: its faces
// never change.
func (s *Solver) swapHalo(ctx context.Context, c Comm, peer int, sendFirst bool) error {
	send, recv := 1, 0
	if peer > s.rank {
		send, recv = s.n, s.n+1
	}
	tag := uint64(s.iter)
	doSend := func() error {
		s.packInner(s.p, send, s.msg)
		if err := c.Send(ctx, peer, tag, s.msg); err != nil {
			return fmt.Errorf("halo to rank %d: %w", peer, err)
		}
		return nil
	}
	doRecv := func() error {
		m, err := c.Recv(ctx, peer, tag, s.rbuf)
		if err != nil {
			return fmt.Errorf("halo from rank %d: %w", peer, err)
		}
		if len(m) != len(s.msg) {
			return fmt.Errorf("halo from rank %d: %d bytes, want %d", peer, len(m), len(s.msg))
		}
		s.unpackInner(s.p, recv, m)
		return nil
	}
	if sendFirst {
		if err := doSend(); err != nil {
			return err
		}
		return doRecv()
	}
	if err := doRecv(); err != nil {
		return err
	}
	return doSend()
}

// packInner writes the inner rows (j in [1, jmax-1), k in [1, kmax-1)) of
// local plane li of arr to buf as little-endian float32s.
func (s *Solver) packInner(arr []float32, li int, buf []byte) {
	w := s.kmax - 2
	for j := 1; j < s.jmax-1; j++ {
		row := arr[li*s.ps+j*s.rs+1:][:w]
		out := buf[(j-1)*4*w:][:4*w]
		for k, v := range row {
			binary.LittleEndian.PutUint32(out[4*k:], math.Float32bits(v))
		}
	}
}

// unpackInner is the inverse of packInner.
func (s *Solver) unpackInner(arr []float32, li int, buf []byte) {
	w := s.kmax - 2
	for j := 1; j < s.jmax-1; j++ {
		row := arr[li*s.ps+j*s.rs+1:][:w]
		in := buf[(j-1)*4*w:][:4*w]
		for k := range row {
			row[k] = math.Float32frombits(binary.LittleEndian.Uint32(in[4*k:]))
		}
	}
}

// sweep is the original's Jacobi loop over this rank's planes: it writes
// the new values to wrk2 and each plane's sum of ss*ss to sums. Every
// product is converted to float32 explicitly: the conversion forbids the
// compiler to fuse it with the following addition into a multiply-add
// (which the Go spec allows, and the compiler does on arm64 for one), so
// results are the same bits on every platform.
func (s *Solver) sweep() {
	kmax, ps, rs := s.kmax, s.ps, s.rs
	p, w2 := s.p, s.wrk2
	a0, a1, a2, a3 := s.a[0], s.a[1], s.a[2], s.a[3]
	b0, b1, b2 := s.b[0], s.b[1], s.b[2]
	c0, c1, c2 := s.c[0], s.c[1], s.c[2]
	bnd, wrk1 := s.bnd, s.wrk1
	for li := 1; li <= s.n; li++ {
		var plane float64
		for j := 1; j < s.jmax-1; j++ {
			o := li*ps + j*rs
			// Rows of p around (i, j), named by their offsets in i and j.
			pc := p[o:][:kmax]
			pip, pim := p[o+ps:][:kmax], p[o-ps:][:kmax]
			pjp, pjm := p[o+rs:][:kmax], p[o-rs:][:kmax]
			pipjp, pipjm := p[o+ps+rs:][:kmax], p[o+ps-rs:][:kmax]
			pimjp, pimjm := p[o-ps+rs:][:kmax], p[o-ps-rs:][:kmax]
			ra0, ra1, ra2, ra3 := a0[o:][:kmax], a1[o:][:kmax], a2[o:][:kmax], a3[o:][:kmax]
			rb0, rb1, rb2 := b0[o:][:kmax], b1[o:][:kmax], b2[o:][:kmax]
			rc0, rc1, rc2 := c0[o:][:kmax], c1[o:][:kmax], c2[o:][:kmax]
			rbnd, rwrk1, rw2 := bnd[o:][:kmax], wrk1[o:][:kmax], w2[o:][:kmax]
			for k := 1; k < kmax-1; k++ {
				s0 := float32(ra0[k]*pip[k]) +
					float32(ra1[k]*pjp[k]) +
					float32(ra2[k]*pc[k+1]) +
					float32(rb0[k]*(pipjp[k]-pipjm[k]-pimjp[k]+pimjm[k])) +
					float32(rb1[k]*(pjp[k+1]-pjm[k+1]-pjp[k-1]+pjm[k-1])) +
					float32(rb2[k]*(pip[k+1]-pim[k+1]-pip[k-1]+pim[k-1])) +
					float32(rc0[k]*pim[k]) +
					float32(rc1[k]*pjm[k]) +
					float32(rc2[k]*pc[k-1]) +
					rwrk1[k]
				ss := (float32(s0*ra3[k]) - pc[k]) * rbnd[k]
				plane += float64(ss) * float64(ss) // exact: 24+24 bits fit in 53
				rw2[k] = pc[k] + float32(Omega*ss)
			}
		}
		s.sums[li-1] = plane
	}
}

// reduce all-gathers every rank's per-plane sums and adds them in global
// plane order, so the total does not depend on the number of ranks.
func (s *Solver) reduce(ctx context.Context, c Comm) (float64, error) {
	buf := make([]byte, 8*len(s.sums))
	for i, v := range s.sums {
		binary.LittleEndian.PutUint64(buf[8*i:], math.Float64bits(v))
	}
	all, err := c.AllGather(ctx, buf)
	if err != nil {
		return 0, fmt.Errorf("gosa all-gather: %w", err)
	}
	if len(all) != s.size {
		return 0, fmt.Errorf("gosa all-gather: %d contributions, want %d", len(all), s.size)
	}
	var gosa float64
	for r, d := range all {
		lo, hi := split(s.imax-2, s.size, r)
		if len(d) != 8*(hi-lo) {
			return 0, fmt.Errorf("gosa all-gather: rank %d sent %d bytes, want %d", r, len(d), 8*(hi-lo))
		}
		for i := 0; i < len(d); i += 8 {
			gosa += math.Float64frombits(binary.LittleEndian.Uint64(d[i:]))
		}
	}
	return gosa, nil
}

// Checksum returns a checksum of p over the whole grid (imax × jmax × kmax
// points, the faces included, the padding not) that does not depend on the
// number of ranks: XXH3-64 of every i-plane's XXH3-64 (as 8 little-endian
// bytes, in global plane order), where a plane is its jmax × kmax values as
// little-endian float32s, row by row. It is collective.
func (s *Solver) Checksum(ctx context.Context, c Comm) (uint64, error) {
	if err := s.checkComm(c); err != nil {
		return 0, err
	}
	first, last := s.planeRange(s.rank)
	plane := make([]byte, 4*s.jmax*s.kmax)
	sums := make([]byte, 0, 8*(last-first))
	for gi := first; gi < last; gi++ {
		o := (gi - s.lo + 1) * s.ps
		for j := range s.jmax {
			row := s.p[o+j*s.rs:][:s.kmax]
			for k, v := range row {
				binary.LittleEndian.PutUint32(plane[4*(j*s.kmax+k):], math.Float32bits(v))
			}
		}
		sums = binary.LittleEndian.AppendUint64(sums, xxh3.Hash(plane))
	}
	all, err := c.AllGather(ctx, sums)
	if err != nil {
		return 0, fmt.Errorf("himeno: checksum all-gather: %w", err)
	}
	if len(all) != s.size {
		return 0, fmt.Errorf("himeno: checksum all-gather: %d contributions, want %d", len(all), s.size)
	}
	var cat []byte
	for r, d := range all {
		f, l := s.planeRange(r)
		if len(d) != 8*(l-f) {
			return 0, fmt.Errorf("himeno: checksum all-gather: rank %d sent %d bytes, want %d", r, len(d), 8*(l-f))
		}
		cat = append(cat, d...)
	}
	return xxh3.Hash(cat), nil
}

// planeRange returns the global planes rank r contributes to the checksum:
// the planes it updates, and the grid's first and last plane on the first
// and last rank.
func (s *Solver) planeRange(r int) (first, last int) {
	lo, hi := split(s.imax-2, s.size, r)
	first, last = lo+1, hi+1
	if r == 0 {
		first = 0
	}
	if r == s.size-1 {
		last = s.imax
	}
	return first, last
}
