package redundancy

import (
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/reedsolomon"
)

// Shape of the codec benchmarks: 8 data shards of 1 MiB, as one block of a
// row of xor:9 or rs:8+2. SetBytes counts checkpoint (data) bytes only.
// Benchmark names give the shape as data x parity x shard size, as
// klauspost/reedsolomon's do (BenchmarkRS8x2x1MiB: 8 data, 2 parity, 1 MiB).
const (
	benchK     = 8
	benchShard = 1 << 20
)

func benchShards(count, size int) [][]byte {
	return randShards(rand.New(rand.NewPCG(99, 100)), count, size)
}

// memcopy copies the data shards into as many destination buffers: the
// machine's limit the codecs are compared with.
func memcopy(b *testing.B) {
	src := benchShards(benchK, benchShard)
	dst := benchShards(benchK, benchShard)
	b.SetBytes(benchK * benchShard)
	b.ReportAllocs()
	for b.Loop() {
		for i := range src {
			copy(dst[i], src[i])
		}
	}
}

var memcopyBufs = sync.OnceValues(func() (src, dst [][]byte) {
	return benchShards(benchK, benchShard), benchShards(benchK, benchShard)
})

// reportVsMemcopy adds the benchmark's throughput as a fraction of memcopy
// (the copies of BenchmarkMemcopy8x1MiB), measured right after the benchmark's
// loop (b.Loop has stopped its timer), so that both see the machine in the
// same state: on a shared machine, rates drift between runs.
func reportVsMemcopy(b *testing.B, bytesPerOp int64) {
	rate := float64(bytesPerOp) * float64(b.N) / b.Elapsed().Seconds()
	src, dst := memcopyBufs()
	start, rounds := time.Now(), 0
	for time.Since(start) < 300*time.Millisecond {
		for i := range src {
			copy(dst[i], src[i])
		}
		rounds++
	}
	memcopyRate := float64(rounds) * benchK * benchShard / time.Since(start).Seconds()
	b.ReportMetric(rate/memcopyRate, "x-memcopy")
}

func BenchmarkMemcopy8x1MiB(b *testing.B) { memcopy(b) }

// BenchmarkXOR8x1x1MiB is the XOR codec on one core: 8 data shards → 1 parity.
func BenchmarkXOR8x1x1MiB(b *testing.B) {
	c, _ := NewCodec(benchK, 1)
	data := benchShards(benchK, benchShard)
	parity := benchShards(1, benchShard)
	b.SetBytes(benchK * benchShard)
	b.ReportAllocs()
	for b.Loop() {
		if err := c.Encode(data, parity); err != nil {
			b.Fatal(err)
		}
	}
	reportVsMemcopy(b, benchK*benchShard)
}

// BenchmarkXORByRS8x1x1MiB is the same parity computed by klauspost/reedsolomon
// with WithFastOneParityMatrix (bit-identical, see TestXORMatchesReference),
// for comparison with the crypto/subtle codec.
func BenchmarkXORByRS8x1x1MiB(b *testing.B) {
	enc, err := reedsolomon.New(benchK, 1, reedsolomon.WithFastOneParityMatrix(), reedsolomon.WithMaxGoroutines(1))
	if err != nil {
		b.Fatal(err)
	}
	shards := append(benchShards(benchK, benchShard), benchShards(1, benchShard)...)
	b.SetBytes(benchK * benchShard)
	b.ReportAllocs()
	for b.Loop() {
		if err := enc.Encode(shards); err != nil {
			b.Fatal(err)
		}
	}
	reportVsMemcopy(b, benchK*benchShard)
}

// BenchmarkRS8x2x1MiB is Reed–Solomon 8+2 on one core: the full encode, one
// parity shard alone (what a parity holder computes), and rebuilding two
// lost data shards.
func BenchmarkRS8x2x1MiB(b *testing.B) {
	c, _ := NewCodec(benchK, 2)
	data := benchShards(benchK, benchShard)
	parity := benchShards(2, benchShard)
	b.Run("encode", func(b *testing.B) {
		b.SetBytes(benchK * benchShard)
		b.ReportAllocs()
		for b.Loop() {
			if err := c.Encode(data, parity); err != nil {
				b.Fatal(err)
			}
		}
		reportVsMemcopy(b, benchK*benchShard)
	})
	b.Run("one-parity", func(b *testing.B) {
		one := [][]byte{nil, parity[1]}
		b.SetBytes(benchK * benchShard)
		b.ReportAllocs()
		for b.Loop() {
			if err := c.Encode(data, one); err != nil {
				b.Fatal(err)
			}
		}
		reportVsMemcopy(b, benchK*benchShard)
	})
	b.Run("reconstruct-2", func(b *testing.B) {
		if err := c.Encode(data, parity); err != nil {
			b.Fatal(err)
		}
		shards := append(append([][]byte(nil), data...), parity...)
		present := make([]bool, len(shards))
		for i := range present {
			present[i] = i != 0 && i != 5
		}
		b.SetBytes(benchK * benchShard)
		b.ReportAllocs()
		for b.Loop() {
			if err := c.Reconstruct(shards, present); err != nil {
				b.Fatal(err)
			}
		}
		reportVsMemcopy(b, benchK*benchShard)
	})
}

// BenchmarkRSOptions8x2x1MiB compares klauspost/reedsolomon options for 8+2 (the
// ones that keep the standard output, and two that change it), to choose
// rsOptions.
func BenchmarkRSOptions8x2x1MiB(b *testing.B) {
	data := benchShards(benchK, benchShard)
	for _, c := range []struct {
		name string
		opts []reedsolomon.Option
	}{
		{"defaults", nil},
		{"goroutines=1", []reedsolomon.Option{reedsolomon.WithMaxGoroutines(1)}},
		{"auto-goroutines", []reedsolomon.Option{reedsolomon.WithAutoGoroutines(benchShard)}},
		{"no-gfni", []reedsolomon.Option{reedsolomon.WithMaxGoroutines(1), reedsolomon.WithGFNI(false), reedsolomon.WithAVXGFNI(false)}},
		{"avx2-only", []reedsolomon.Option{reedsolomon.WithMaxGoroutines(1), reedsolomon.WithGFNI(false), reedsolomon.WithAVXGFNI(false), reedsolomon.WithAVX512(false)}},
		{"cauchy", []reedsolomon.Option{reedsolomon.WithMaxGoroutines(1), reedsolomon.WithCauchyMatrix()}},
		{"leopard-gf8", []reedsolomon.Option{reedsolomon.WithMaxGoroutines(1), reedsolomon.WithLeopardGF(true)}},
	} {
		b.Run(c.name, func(b *testing.B) {
			enc, err := reedsolomon.New(benchK, 2, c.opts...)
			if err != nil {
				b.Fatal(err)
			}
			shards := append(append([][]byte(nil), data...), benchShards(2, benchShard)...)
			b.SetBytes(benchK * benchShard)
			for b.Loop() {
				if err := enc.Encode(shards); err != nil {
					b.Fatal(err)
				}
			}
			reportVsMemcopy(b, benchK*benchShard)
		})
	}
}
