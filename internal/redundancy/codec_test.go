package redundancy

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/klauspost/reedsolomon"
)

// codecMatrix lists the codecs to test for (k, m): the one NewCodec picks,
// and for Reed–Solomon the pure-Go path and other goroutine settings, which
// must give the same bytes.
func codecMatrix(t testing.TB, k, m int) map[string]Codec {
	c, err := NewCodec(k, m)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]Codec{"default": c}
	if m >= 2 {
		for name, opts := range map[string][]reedsolomon.Option{
			"noasm": {reedsolomon.WithAVX512(false), reedsolomon.WithAVX2(false), reedsolomon.WithSSSE3(false),
				reedsolomon.WithGFNI(false), reedsolomon.WithAVXGFNI(false), reedsolomon.WithSSE2(false)},
			"goroutines": {reedsolomon.WithMaxGoroutines(4), reedsolomon.WithMinSplitSize(64)},
		} {
			rc, err := newRSCodec(k, m, opts...)
			if err != nil {
				t.Fatal(err)
			}
			out[name] = rc
		}
	}
	return out
}

func randShards(rng *rand.Rand, count, size int) [][]byte {
	s := make([][]byte, count)
	for i := range s {
		s[i] = make([]byte, size)
		for j := range s[i] {
			s[i][j] = byte(rng.Uint32())
		}
	}
	return s
}

// subsets calls fn with every subset of 0..n-1 of size 1..max (or, when
// there are more than limit of them, with limit random ones).
func subsets(rng *rand.Rand, n, maxSize, limit int, fn func([]int)) {
	total := 0
	for sz, c := 1, 1; sz <= maxSize && total <= limit; sz++ {
		c = c * (n - sz + 1) / sz // C(n, sz), exact; stops before it can overflow
		total += c
	}
	if total > limit {
		for range limit {
			sz := rng.IntN(maxSize) + 1
			fn(rng.Perm(n)[:sz])
		}
		return
	}
	var rec func(start int, cur []int)
	rec = func(start int, cur []int) {
		if len(cur) > 0 {
			fn(append([]int(nil), cur...))
		}
		if len(cur) == maxSize {
			return
		}
		for i := start; i < n; i++ {
			rec(i+1, append(cur, i))
		}
	}
	rec(0, nil)
}

var codecShapes = [][2]int{{1, 0}, {3, 0}, {1, 1}, {2, 1}, {3, 1}, {7, 1}, {1, 2}, {4, 2}, {8, 2}, {3, 3}, {10, 4}, {17, 3}, {200, 56}}

func TestCodecRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, km := range codecShapes {
		k, m := km[0], km[1]
		n := k + m
		matrix, sizes, limit := codecMatrix(t, k, m), []int{1, 7, 64, 1000}, 60
		if n > 64 {
			// Every loss pattern of a big set inverts a new matrix, which
			// is slow under -race: a few patterns, the default codec.
			matrix, sizes, limit = map[string]Codec{"default": matrix["default"]}, []int{100}, 4
		}
		for name, c := range matrix {
			for _, size := range sizes {
				t.Run(fmt.Sprintf("%d+%d/%s/%d", k, m, name, size), func(t *testing.T) {
					data := randShards(rng, k, size)
					parity := randShards(rng, m, size) // garbage: must be overwritten
					if err := c.Encode(data, parity); err != nil {
						t.Fatal(err)
					}
					// Each parity shard alone equals the full encode.
					for p := 0; p < m; p++ {
						only := make([][]byte, m)
						only[p] = make([]byte, size)
						if err := c.Encode(data, only); err != nil {
							t.Fatal(err)
						}
						if !bytes.Equal(only[p], parity[p]) {
							t.Fatalf("parity %d alone differs from the full encode", p)
						}
					}
					all := append(append([][]byte(nil), data...), parity...)
					subsets(rng, n, m, limit, func(missing []int) {
						shards := make([][]byte, n)
						present := make([]bool, n)
						for i := range shards {
							shards[i], present[i] = all[i], true
						}
						for _, i := range missing {
							shards[i], present[i] = bytes.Repeat([]byte{0xee}, size), false
						}
						// Leave the first missing one unwanted when there are several.
						if len(missing) > 1 {
							shards[missing[0]] = nil
						}
						if err := c.Reconstruct(shards, present); err != nil {
							t.Fatalf("missing %v: %v", missing, err)
						}
						for j, i := range missing {
							if j == 0 && len(missing) > 1 {
								if shards[i] != nil {
									t.Fatalf("missing %v: unwanted shard %d filled", missing, i)
								}
								continue
							}
							if !bytes.Equal(shards[i], all[i]) {
								t.Fatalf("missing %v: shard %d rebuilt wrong", missing, i)
							}
						}
					})
					// m+1 missing: ErrTooManyLost, wanted buffers untouched.
					if m+1 <= n {
						shards := make([][]byte, n)
						present := make([]bool, n)
						copy(shards, all)
						for i := range present {
							present[i] = true
						}
						for _, i := range rng.Perm(n)[:m+1] {
							shards[i], present[i] = bytes.Repeat([]byte{0xee}, size), false
						}
						err := c.Reconstruct(shards, present)
						if !errors.Is(err, ErrTooManyLost) {
							t.Fatalf("%d missing: %v, want ErrTooManyLost", m+1, err)
						}
						for i := range shards {
							if !present[i] && !bytes.Equal(shards[i], bytes.Repeat([]byte{0xee}, size)) {
								t.Fatalf("shard %d touched after ErrTooManyLost", i)
							}
						}
					}
				})
			}
		}
	}
}

// XOR parity is what Reed–Solomon gives with the fast one-parity matrix,
// and what a byte loop gives.
func TestXORMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, k := range []int{1, 2, 3, 7, 16, 100} {
		for _, size := range []int{1, 63, 64, 4097, 3*xorSpan + 5} {
			data := randShards(rng, k, size)
			c, _ := NewCodec(k, 1)
			got := make([]byte, size)
			if err := c.Encode(data, [][]byte{got}); err != nil {
				t.Fatal(err)
			}
			naive := make([]byte, size)
			for _, d := range data {
				for i := range d {
					naive[i] ^= d[i]
				}
			}
			if !bytes.Equal(got, naive) {
				t.Fatalf("k=%d size=%d: XOR differs from the byte loop", k, size)
			}
			enc, err := reedsolomon.New(k, 1, reedsolomon.WithFastOneParityMatrix())
			if err != nil {
				t.Fatal(err)
			}
			shards := append(append([][]byte(nil), data...), make([]byte, size))
			if err := enc.Encode(shards); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, shards[k]) {
				t.Fatalf("k=%d size=%d: XOR differs from reedsolomon with the fast one-parity matrix", k, size)
			}
		}
	}
}

// The Reed–Solomon parity is the library's standard output.
func TestRSMatchesLibrary(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, km := range [][2]int{{4, 2}, {8, 2}, {3, 3}} {
		k, m := km[0], km[1]
		data := randShards(rng, k, 1000)
		c, _ := NewCodec(k, m)
		parity := randShards(rng, m, 1000)
		if err := c.Encode(data, parity); err != nil {
			t.Fatal(err)
		}
		enc, _ := reedsolomon.New(k, m)
		shards := append(append([][]byte(nil), data...), randShards(rng, m, 1000)...)
		if err := enc.Encode(shards); err != nil {
			t.Fatal(err)
		}
		for p := range parity {
			if !bytes.Equal(parity[p], shards[k+p]) {
				t.Fatalf("%d+%d parity %d differs from reedsolomon.New defaults", k, m, p)
			}
		}
	}
}

func TestCodecErrors(t *testing.T) {
	for _, km := range [][2]int{{0, 1}, {-1, 0}, {2, -1}, {250, 7}} {
		if c, err := NewCodec(km[0], km[1]); err == nil {
			t.Errorf("NewCodec(%d, %d) = %v, want an error", km[0], km[1], c)
		}
	}
	a, _ := NewCodec(8, 2)
	b, _ := NewCodec(8, 2)
	if a != b {
		t.Error("NewCodec(8, 2) twice built two encoders")
	}
	for _, km := range [][2]int{{3, 0}, {3, 1}, {3, 2}} {
		k, m := km[0], km[1]
		c, _ := NewCodec(k, m)
		if c.DataShards() != k || c.ParityShards() != m {
			t.Errorf("NewCodec(%d, %d) reports %d+%d", k, m, c.DataShards(), c.ParityShards())
		}
		ok := func(n int) [][]byte { return randShards(rand.New(rand.NewPCG(1, 1)), n, 8) }
		bad := [][][]byte{ok(k - 1), append(ok(k-1), make([]byte, 9))}
		for _, data := range bad {
			if err := c.Encode(data, ok(m)); !errors.Is(err, ErrShardSize) {
				t.Errorf("%d+%d Encode with bad data: %v", k, m, err)
			}
		}
		if m > 0 {
			par := ok(m)
			par[0] = make([]byte, 3)
			if err := c.Encode(ok(k), par); !errors.Is(err, ErrShardSize) {
				t.Errorf("%d+%d Encode with short parity: %v", k, m, err)
			}
		}
		shards := ok(k + m)
		present := make([]bool, k+m)
		for i := range present {
			present[i] = true
		}
		if err := c.Reconstruct(shards[1:], present[1:]); !errors.Is(err, ErrShardSize) {
			t.Errorf("%d+%d Reconstruct with a shard too few: %v", k, m, err)
		}
		shards[0] = make([]byte, 5)
		if err := c.Reconstruct(shards, present); !errors.Is(err, ErrShardSize) {
			t.Errorf("%d+%d Reconstruct with a short shard: %v", k, m, err)
		}
		shards[0], present[0] = nil, false
		if err := c.Reconstruct(shards, present); (err == nil) != (m > 0) {
			t.Errorf("%d+%d Reconstruct with one missing and nothing wanted: %v", k, m, err)
		}
	}
}
