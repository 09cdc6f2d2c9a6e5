package matmul

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/ckpt/ckpt/examples/comm/commtest"
	"github.com/zeebo/xxh3"
)

// reference multiplies on one thread the plain way and returns C.
func reference(cfg Config) []float64 {
	n := cfg.N
	a, b, c := make([]float64, n*n), make([]float64, n*n), make([]float64, n*n)
	for i := range n {
		for j := range n {
			a[i*n+j], b[i*n+j] = cfg.A(i, j), cfg.B(i, j)
		}
	}
	for i := range n {
		for j := range n {
			var sum float64
			for k := range n {
				sum += float64(a[i*n+k] * b[k*n+j])
			}
			c[i*n+j] = sum
		}
	}
	return c
}

// referenceChecksum is Checksum's definition computed directly.
func referenceChecksum(n int, c []float64) uint64 {
	var cat []byte
	for i := range n {
		var row []byte
		for _, v := range c[i*n : (i+1)*n] {
			row = binary.LittleEndian.AppendUint64(row, math.Float64bits(v))
		}
		cat = binary.LittleEndian.AppendUint64(cat, xxh3.Hash(row))
	}
	return xxh3.Hash(cat)
}

func newSolvers(t testing.TB, cfg Config, size int) []*Solver {
	t.Helper()
	out := make([]*Solver, size)
	for r := range out {
		s, err := New(cfg, r, size)
		if err != nil {
			t.Fatal(err)
		}
		out[r] = s
	}
	return out
}

// steps runs count Steps (all remaining if count < 0) on every rank and
// reports whether they are done, checking that all ranks agree.
func steps(t testing.TB, job *localJob, solvers []*Solver, count int) bool {
	t.Helper()
	done := make([]bool, len(solvers))
	runOK(t, job, func(r int, c Comm) error {
		for i := 0; count < 0 || i < count; i++ {
			d, err := solvers[r].Step(context.Background(), c)
			if err != nil {
				return err
			}
			if done[r] = d; d && count < 0 {
				break
			}
		}
		return nil
	})
	for r := range done {
		if done[r] != done[0] {
			t.Fatalf("rank %d done %v, rank 0 %v", r, done[r], done[0])
		}
	}
	return done[0]
}

func checksum(t testing.TB, job *localJob, solvers []*Solver) uint64 {
	t.Helper()
	sums := make([]uint64, len(solvers))
	runOK(t, job, func(r int, c Comm) error {
		var err error
		sums[r], err = solvers[r].Checksum(context.Background(), c)
		return err
	})
	for r := range sums {
		if sums[r] != sums[0] {
			t.Fatalf("rank %d checksum %x, rank 0 %x", r, sums[r], sums[0])
		}
	}
	return sums[0]
}

// gather returns the whole C from the ranks' rows.
func gather(solvers []*Solver) []float64 {
	var c []float64
	for _, s := range solvers {
		c = append(c, s.c...)
	}
	return c
}

func TestDistributedEqualsSerial(t *testing.T) {
	for _, cfg := range []Config{{N: 37, Seed: 1}, {N: 37, Seed: 1, Panels: 3}, {N: 8, Seed: 7, Panels: 5}, {N: 1, Seed: 2}} {
		want := reference(cfg)
		wantSum := referenceChecksum(cfg.N, want)
		for _, size := range []int{1, 2, 3, 4, 5, 8} {
			if size > cfg.N {
				continue
			}
			for _, buffer := range []int{0, 2} {
				job := newLocalJob(size, buffer)
				solvers := newSolvers(t, cfg, size)
				if !steps(t, job, solvers, -1) {
					t.Fatal("not done")
				}
				if c := solvers[0].Completed(); c != solvers[0].Steps() || c != size*max(cfg.Panels, 1) {
					t.Errorf("Completed() = %d, Steps() = %d", c, solvers[0].Steps())
				}
				got := gather(solvers)
				for i := range want {
					if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
						t.Fatalf("%+v on %d ranks: C[%d][%d] = %v, serial %v", cfg, size, i/cfg.N, i%cfg.N, got[i], want[i])
					}
				}
				if sum := checksum(t, job, solvers); sum != wantSum {
					t.Errorf("%+v on %d ranks: checksum %x, serial %x", cfg, size, sum, wantSum)
				}
				// Steps after the end do nothing.
				if !steps(t, job, solvers, 2) || solvers[0].Completed() != solvers[0].Steps() {
					t.Errorf("Step after done")
				}
			}
		}
	}
}

// TestGolden pins the bits of a product, so that a change of platform,
// compiler or code that alters results is noticed.
func TestGolden(t *testing.T) {
	cfg := Config{N: 64, Seed: 42}
	if a, b := cfg.A(3, 5), cfg.B(5, 3); a != -0.07123396901986667 || b != -0.8223710442947663 {
		t.Errorf("A(3,5) = %v, B(5,3) = %v", a, b)
	}
	job := newLocalJob(2, 0)
	s := newSolvers(t, cfg, 2)
	steps(t, job, s, -1)
	if got, want := checksum(t, job, s), uint64(0xfdbb1cb490b9047d); got != want {
		t.Errorf("checksum %#x, want %#x", got, want)
	}
}

func TestGenerator(t *testing.T) {
	cfg := Config{N: 100, Seed: 3}
	var sum, sq float64
	seen := map[float64]bool{}
	for i := range cfg.N {
		for j := range cfg.N {
			for _, v := range []float64{cfg.A(i, j), cfg.B(i, j)} {
				if v < -1 || v >= 1 {
					t.Fatalf("element %v outside [-1, 1)", v)
				}
				sum += v
				sq += v * v
				seen[v] = true
			}
		}
	}
	count := float64(2 * cfg.N * cfg.N)
	if mean, variance := sum/count, sq/count; math.Abs(mean) > 0.02 || math.Abs(variance-1.0/3) > 0.02 {
		t.Errorf("mean %v variance %v, want about 0 and 1/3", mean, variance)
	}
	if len(seen) < int(count)-2 {
		t.Errorf("%d distinct values of %v", len(seen), count)
	}
	if (Config{N: 100, Seed: 4}).A(0, 0) == cfg.A(0, 0) {
		t.Errorf("seed does not change A")
	}
}

func TestNewErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg        Config
		rank, size int
		want       string
	}{
		{Config{N: 0}, 0, 1, "n=0"},
		{Config{N: -3}, 0, 1, "n=-3"},
		{Config{N: 1 << 21}, 0, 1, "n=2097152"},
		{Config{N: 8, Panels: -1}, 0, 1, "panels=-1"},
		{Config{N: 8}, 0, 0, "size=0"},
		{Config{N: 8}, 3, 3, "rank=3"},
		{Config{N: 8}, -1, 3, "rank=-1"},
		{Config{N: 8}, 0, 9, "n=8 rows are too few for 9 ranks"},
	} {
		_, err := New(tc.cfg, tc.rank, tc.size)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v, %d, %d) = %v, want an error naming %q", tc.cfg, tc.rank, tc.size, err, tc.want)
		}
	}
}

func TestFlops(t *testing.T) {
	if got := (Config{N: 10}).Flops(); got != 2000 {
		t.Errorf("Flops = %v", got)
	}
}

func TestCommFailure(t *testing.T) {
	const size = 3
	cfg := Config{N: 20, Seed: 5, Panels: 2}
	// Rank 1 makes five calls: two shifts of a Send and a Recv, and the
	// checksum's all-gather. Fail each in turn.
	for failAt := range 5 {
		job := newLocalJob(size, 0)
		comms := job.Comms()
		comms[1] = commtest.NewFaulty(comms[1], job, failAt)
		solvers := newSolvers(t, cfg, size)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		errs := run(job, comms, func(r int, c Comm) error {
			for {
				done, err := solvers[r].Step(ctx, c)
				if err != nil || done {
					if err == nil {
						_, err = solvers[r].Checksum(ctx, c)
					}
					return err
				}
			}
		})
		cancel()
		if !errors.Is(errs[1], errInjected) {
			t.Fatalf("failAt %d: rank 1 returned %v, want the injected failure", failAt, errs[1])
		}
		for r, err := range errs {
			if err == nil || errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("failAt %d: rank %d returned %v", failAt, r, err)
			}
		}
	}
}

func TestStepCancel(t *testing.T) {
	job := newLocalJob(2, 0)
	s := newSolvers(t, Config{N: 6}, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	// Rank 0 receives first; rank 1 never steps.
	if _, err := s[0].Step(ctx, job.Comms()[0]); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Step = %v, want the deadline", err)
	}
	if s[0].Completed() != 0 {
		t.Errorf("Completed() = %d after a failed step", s[0].Completed())
	}
}

func TestWrongComm(t *testing.T) {
	job := newLocalJob(2, 0)
	s := newSolvers(t, Config{N: 6}, 2)
	if _, err := s[0].Step(context.Background(), job.Comms()[1]); err == nil || !strings.Contains(err.Error(), "rank 0 of 2 driven by comm of rank 1") {
		t.Errorf("Step with rank 1's comm = %v", err)
	}
	if _, err := s[0].Checksum(context.Background(), newLocalJob(1, 0).Comms()[0]); err == nil {
		t.Errorf("Checksum with a 1-rank comm succeeded")
	}
}

// badComm answers every Recv with a message of the wrong length and every
// AllGather with its caller's contribution alone, cut short.
type badComm struct{ Comm }

func (badComm) Recv(ctx context.Context, from int, tag uint64, buf []byte) ([]byte, error) {
	return []byte{1, 2, 3}, nil
}

func (badComm) AllGather(ctx context.Context, data []byte) ([][]byte, error) {
	return [][]byte{data[:8]}, nil
}

func TestBadMessages(t *testing.T) {
	job := newLocalJob(2, 8)
	s := newSolvers(t, Config{N: 6}, 2)
	if _, err := s[0].Step(context.Background(), badComm{job.Comms()[0]}); err == nil || !strings.Contains(err.Error(), "3 bytes") {
		t.Errorf("Step with a short block = %v", err)
	}
	one := newSolvers(t, Config{N: 6}, 1)[0]
	if _, err := one.Checksum(context.Background(), badComm{newLocalJob(1, 0).Comms()[0]}); err == nil || !strings.Contains(err.Error(), "rank 0 sent 8 bytes") {
		t.Errorf("Checksum with a short contribution = %v", err)
	}
}

// BenchmarkMultiply runs whole multiplications of order 256; one op is
// one product, and the MFLOPS metric counts 2n³ per product.
func BenchmarkMultiply(b *testing.B) {
	cfg := Config{N: 256, Seed: 1}
	for _, size := range []int{1, 2} {
		b.Run(fmt.Sprintf("n=%d/ranks=%d", cfg.N, size), func(b *testing.B) {
			job := newLocalJob(size, 1)
			b.SetBytes(int64(3 * 8 * cfg.N * cfg.N))
			var elapsed time.Duration
			for b.Loop() {
				b.StopTimer()
				solvers := newSolvers(b, cfg, size)
				b.StartTimer()
				start := time.Now()
				steps(b, job, solvers, -1)
				elapsed += time.Since(start)
			}
			b.ReportMetric(cfg.Flops()*float64(b.N)/elapsed.Seconds()/1e6, "MFLOPS")
		})
	}
}
