package local_test

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/storage/local"
)

// The write benchmarks stream benchSize bytes in benchChunk writes and make
// them durable, through the backend (temp file, fsync, rename, directory
// fsync) and raw (os.File and fsync), into the same directory, so that their
// ratio shows the backend's overhead against the disk's own limit. Set
// CKPT_BENCH_DIR to measure another disk than the one of os.TempDir.
const (
	benchSize  = 256 << 20
	benchChunk = 1 << 20
)

func benchDir(b *testing.B) string {
	if parent := os.Getenv("CKPT_BENCH_DIR"); parent != "" {
		dir, err := os.MkdirTemp(parent, "ckpt-bench-")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(dir) })
		return dir
	}
	return b.TempDir()
}

func benchData() []byte {
	p := make([]byte, benchChunk)
	rand.NewChaCha8([32]byte{42}).Read(p)
	return p
}

// writeBackend writes one object through the backend and removes it.
func writeBackend(b *testing.B, be *local.Backend, data []byte) time.Duration {
	start := time.Now()
	w, err := be.Create(b.Context(), "ckpt.0001/rank-0/state.bin")
	if err != nil {
		b.Fatal(err)
	}
	for n := 0; n < benchSize; n += len(data) {
		if _, err := w.Write(data); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Commit(); err != nil {
		b.Fatal(err)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	if err := be.Remove(b.Context(), "ckpt.0001/rank-0/state.bin"); err != nil {
		b.Fatal(err)
	}
	b.StartTimer()
	return elapsed
}

// writeRaw writes one file with os.File and fsync, and removes it.
func writeRaw(b *testing.B, dir string, data []byte) time.Duration {
	start := time.Now()
	path := filepath.Join(dir, "raw.bin")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		b.Fatal(err)
	}
	for n := 0; n < benchSize; n += len(data) {
		if _, err := f.Write(data); err != nil {
			b.Fatal(err)
		}
	}
	if err := f.Sync(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	if err := os.Remove(path); err != nil {
		b.Fatal(err)
	}
	b.StartTimer()
	return elapsed
}

func BenchmarkWrite(b *testing.B) {
	dir := benchDir(b)
	be := newBackend(b, dir)
	data := benchData()
	b.SetBytes(benchSize)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		writeBackend(b, be, data)
	}
}

func BenchmarkRawWrite(b *testing.B) {
	dir := benchDir(b)
	data := benchData()
	b.SetBytes(benchSize)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		writeRaw(b, dir, data)
	}
}

// BenchmarkWriteVsRaw alternates the two, so that both see the disk in the
// same state, and reports their median throughputs and the ratio of the
// medians, backend/raw (the target is at least 0.9). Medians, because on a
// shared or virtual disk single writes can take several times as long.
func BenchmarkWriteVsRaw(b *testing.B) {
	dir := benchDir(b)
	be := newBackend(b, filepath.Join(dir, "backend"))
	data := benchData()
	var ours, raw []time.Duration
	b.ResetTimer()
	for i := range b.N {
		// Take turns at going first, so that neither inherits the other's
		// write-back more often.
		if i%2 == 0 {
			raw = append(raw, writeRaw(b, dir, data))
			ours = append(ours, writeBackend(b, be, data))
		} else {
			ours = append(ours, writeBackend(b, be, data))
			raw = append(raw, writeRaw(b, dir, data))
		}
	}
	median := func(ds []time.Duration) time.Duration {
		slices.Sort(ds)
		return ds[len(ds)/2]
	}
	mo, mr := median(ours), median(raw)
	b.ReportMetric(benchSize/mo.Seconds()/1e6, "backend-MB/s")
	b.ReportMetric(benchSize/mr.Seconds()/1e6, "raw-MB/s")
	b.ReportMetric(mr.Seconds()/mo.Seconds(), "ratio")
}
