package manifest

import (
	"bytes"
	"fmt"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// benchSizes: one in L2 cache, one in L3, one well beyond any cache.
var benchSizes = []int{64 << 10, 1 << 20, 64 << 20}

func sizeName(n int) string {
	if n < 1<<10 {
		return fmt.Sprintf("%dB", n)
	}
	if n >= 1<<20 {
		return fmt.Sprintf("%dMiB", n>>20)
	}
	return fmt.Sprintf("%dKiB", n>>10)
}

func benchData(n int) []byte {
	b := make([]byte, n)
	rand.New(rand.NewSource(1)).Read(b)
	return b
}

// BenchmarkCopy is the machine's limit for touching the same bytes: a
// memory copy (memmove).
func BenchmarkCopy(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(sizeName(n), func(b *testing.B) {
			src, dst := benchData(n), make([]byte, n)
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for b.Loop() {
				copy(dst, src)
			}
		})
	}
}

// BenchmarkHashBytes hashes a buffer in one call.
func BenchmarkHashBytes(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(sizeName(n), func(b *testing.B) {
			src := benchData(n)
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for b.Loop() {
				HashBytes(src)
			}
		})
	}
}

// copyBuffer is the size of the writes and reads of the streaming
// benchmarks.
const copyBuffer = 256 << 10

// BenchmarkHasher streams a buffer through a Hasher in 256 KiB writes.
func BenchmarkHasher(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(sizeName(n), func(b *testing.B) {
			src := benchData(n)
			h := NewHasher()
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for b.Loop() {
				h.Reset()
				for off := 0; off < n; off += copyBuffer {
					h.Write(src[off:min(off+copyBuffer, n)])
				}
				h.Sum128()
			}
		})
	}
}

// BenchmarkVerifyingReader reads a buffer through a VerifyingReader into a
// 256 KiB buffer: the restart path, with the copy out of the source included.
func BenchmarkVerifyingReader(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(sizeName(n), func(b *testing.B) {
			src := benchData(n)
			want := HashBytes(src)
			buf := make([]byte, copyBuffer)
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for b.Loop() {
				v := newVerifyingReader(bytes.NewReader(src), "bench", int64(n), want)
				for {
					_, err := v.Read(buf)
					if err == io.EOF {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// BenchmarkHashVsCopy measures, in the same run and on the same bytes, a
// memory copy, a one-shot hash and a streaming hash (256 KiB writes, the
// path of VerifyingReader), and reports the rates and the
// ratios to the copy (1 means as fast as copying the data once).
func BenchmarkHashVsCopy(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(sizeName(n), func(b *testing.B) {
			src, dst := benchData(n), make([]byte, n)
			h := NewHasher()
			var tCopy, tHash, tStream time.Duration
			for b.Loop() {
				t0 := time.Now()
				copy(dst, src)
				t1 := time.Now()
				HashBytes(src)
				t2 := time.Now()
				h.Reset()
				for off := 0; off < n; off += copyBuffer {
					h.Write(src[off:min(off+copyBuffer, n)])
				}
				h.Sum128()
				t3 := time.Now()
				tCopy += t1.Sub(t0)
				tHash += t2.Sub(t1)
				tStream += t3.Sub(t2)
			}
			total := float64(n) * float64(b.N)
			b.ReportMetric(total/tCopy.Seconds()/1e9, "copy-GB/s")
			b.ReportMetric(total/tHash.Seconds()/1e9, "hash-GB/s")
			b.ReportMetric(total/tStream.Seconds()/1e9, "stream-GB/s")
			b.ReportMetric(tCopy.Seconds()/tHash.Seconds(), "hash/copy")
			b.ReportMetric(tCopy.Seconds()/tStream.Seconds(), "stream/copy")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkFile reads a 64 MiB file (from the page cache after the first
// pass) plainly and through HashContent: the cost hashing adds to a read.
func BenchmarkFile(b *testing.B) {
	const n = 64 << 20
	path := filepath.Join(b.TempDir(), "data")
	if err := os.WriteFile(path, benchData(n), 0o600); err != nil {
		b.Fatal(err)
	}
	run := func(b *testing.B, consume func(*os.File) error) {
		b.SetBytes(n)
		for b.Loop() {
			f, err := os.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			if err := consume(f); err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
	}
	b.Run("read", func(b *testing.B) {
		buf := make([]byte, copyBuffer)
		run(b, func(f *os.File) error {
			for {
				if _, err := f.Read(buf); err == io.EOF {
					return nil
				} else if err != nil {
					return err
				}
			}
		})
	})
	b.Run("HashContent", func(b *testing.B) {
		run(b, func(f *os.File) error { _, _, err := HashContent(f); return err })
	})
}

// BenchmarkEncodeDecode encodes and decodes the manifest of a 1024-rank
// XOR checkpoint with four files per rank.
func BenchmarkEncodeDecode(b *testing.B) {
	const ranks = 1024
	m := &Manifest{Version: Version, Meta: Meta{Name: "bench", ID: 1, Created: time.Unix(1e9, 0),
		Ranks: ranks, Scheme: "xor:8", SetSize: 8, M: 1, Level: LevelCache}}
	for s := range ranks / 8 {
		set := make([]int, 8)
		for i := range set {
			set[i] = s*8 + i
		}
		m.Sets = append(m.Sets, set)
	}
	for r := range ranks {
		p := Part{Rank: r, Node: fmt.Sprintf("node%04d", r/8), Set: r / 8, Member: r % 8}
		for f := range 4 {
			p.Files = append(p.Files, File{Rank: r, Name: fmt.Sprintf("file%d", f), Size: 1 << 30, Hash: HashBytes([]byte{byte(r), byte(f)})})
		}
		p.Parity = []File{{Rank: r, Name: "xor", Size: 1 << 29, Hash: HashBytes([]byte{byte(r)})}}
		m.Parts = append(m.Parts, p)
	}
	data, err := Encode(m)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("Encode", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			Encode(m)
		}
	})
	b.Run("Decode", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Decode(data); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// smallSizes are the files of a checkpoint of many small ones (a
// configuration, a rank's counters), where the hash's own buffers, not
// the bytes, would be the cost.
var smallSizes = []int{512, 4 << 10, 64 << 10}

// BenchmarkContentSmall hashes a small file's content the two ways a
// manifest's hash is computed: HashContent over a reader (commit of a
// routed file, verify) and a ContentHasher written once (a file created
// through the engine, a restart's verifying reader). Its allocs and B/op
// are what a small file costs beyond its bytes.
func BenchmarkContentSmall(b *testing.B) {
	for _, n := range smallSizes {
		src := benchData(n)
		b.Run("HashContent/"+sizeName(n), func(b *testing.B) {
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := HashContent(bytes.NewReader(src)); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("ContentHasher/"+sizeName(n), func(b *testing.B) {
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for b.Loop() {
				h := NewContentHasher()
				h.Write(src)
				h.Sum128()
			}
		})
	}
}
