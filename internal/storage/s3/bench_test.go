package s3_test

import (
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/ckpt/ckpt/internal/storage/s3"
	"github.com/ckpt/ckpt/storage"
)

// The write benchmarks stream benchSize bytes in benchChunk writes through
// the backend into the MinIO server on loopback, and for comparison write
// the same bytes into a file on the disk that holds the server's data, with
// fsync. The server writes the object to that disk too, so the ratio of the
// two shows what the client, the HTTP transfer and the server cost on top of
// the disk.
const (
	benchSize  = 256 << 20
	benchChunk = 1 << 20
)

func benchData() []byte {
	p := make([]byte, benchChunk)
	rand.NewChaCha8([32]byte{42}).Read(p)
	return p
}

const benchName = "ckpt.0001/rank-0/state.bin"

// writeBackend writes one object through the backend and removes it.
func writeBackend(b *testing.B, be storage.Backend, data []byte) time.Duration {
	start := time.Now()
	w, err := be.Create(b.Context(), benchName)
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
	if err := be.Remove(b.Context(), benchName); err != nil {
		b.Fatal(err)
	}
	b.StartTimer()
	return elapsed
}

// writeRaw writes one file with os.File and fsync in dir, and removes it.
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

// rawDir returns a directory on the disk of the server's data.
func rawDir(b *testing.B) string {
	dir, err := os.MkdirTemp(filepath.Dir(server(b).DataDir()), "raw-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// cpuTimes returns the CPU time (user and system) used so far by this
// process and by the server's, or -1 for one that is unknown.
func cpuTimes(b *testing.B) (client, srv time.Duration) {
	var ru syscall.Rusage
	client = -1
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		client = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	srv = -1
	// Fields 14 and 15 of /proc/PID/stat are utime and stime in clock
	// ticks, 100 a second on Linux; the command before them is in ().
	if data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", server(b).Pid())); err == nil {
		if _, rest, ok := strings.Cut(string(data), ") "); ok {
			f := strings.Fields(rest)
			if len(f) > 12 {
				u, err1 := strconv.ParseInt(f[11], 10, 64)
				s, err2 := strconv.ParseInt(f[12], 10, 64)
				if err1 == nil && err2 == nil {
					srv = time.Duration(u+s) * 10 * time.Millisecond
				}
			}
		}
	}
	return client, srv
}

// reportCPU reports the CPU seconds per GB that client and server used
// between two cpuTimes, for n bytes.
func reportCPU(b *testing.B, c0, s0, c1, s1 time.Duration, n float64) {
	if c0 >= 0 && c1 >= 0 {
		b.ReportMetric((c1-c0).Seconds()/(n/1e9), "client-cpu-s/GB")
	}
	if s0 >= 0 && s1 >= 0 {
		b.ReportMetric((s1-s0).Seconds()/(n/1e9), "server-cpu-s/GB")
	}
}

func median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// minioGoDefaults undoes what New configures against double hashing: the
// client signs every upload over http with the streaming SHA-256 signature
// and sends no CRC32C, as minio-go does by default.
func minioGoDefaults(o *minio.Options, p *minio.PutObjectOptions) {
	o.TrailingHeaders = false
	p.DisableContentSha256 = false
	p.AutoChecksum = 0
}

// BenchmarkWriteVsRaw takes turns at writing through the backend (default
// Config), through a backend with minio-go's default hashing, and raw, so
// that all three see the machine in the same state. It reports their
// median throughputs, the ratios of the medians to raw's, and the CPU time
// that client and server spent per GB.
func BenchmarkWriteVsRaw(b *testing.B) {
	s := server(b)
	ours := newBackend(b, s, nil)
	defer ours.Close()
	cfg, err := s.NewBucket(b.Context())
	if err != nil {
		b.Fatal(err)
	}
	defaults, err := s3.NewTweaked(b.Context(), cfg, minioGoDefaults)
	if err != nil {
		b.Fatal(err)
	}
	defer defaults.Close()
	dir := rawDir(b)
	data := benchData()

	type run struct {
		name                 string
		write                func() time.Duration
		times                []time.Duration
		clientCPU, serverCPU time.Duration
	}
	runs := []*run{
		{name: "raw", write: func() time.Duration { return writeRaw(b, dir, data) }},
		{name: "backend", write: func() time.Duration { return writeBackend(b, ours, data) }},
		{name: "minio-go-defaults", write: func() time.Duration { return writeBackend(b, defaults, data) }},
	}
	b.ResetTimer()
	for i := range b.N {
		for j := range runs {
			r := runs[(i+j)%len(runs)] // each goes first in turn
			c0, s0 := cpuTimes(b)
			r.times = append(r.times, r.write())
			c1, s1 := cpuTimes(b)
			r.clientCPU += c1 - c0
			r.serverCPU += s1 - s0
		}
	}
	raw := median(runs[0].times)
	b.ReportMetric(benchSize/raw.Seconds()/1e6, "raw-MB/s")
	gb := float64(b.N) * benchSize / 1e9
	for _, r := range runs[1:] {
		m := median(r.times)
		b.ReportMetric(benchSize/m.Seconds()/1e6, r.name+"-MB/s")
		b.ReportMetric(raw.Seconds()/m.Seconds(), r.name+"-ratio")
		b.ReportMetric(r.clientCPU.Seconds()/gb, r.name+"-client-cpu-s/GB")
		b.ReportMetric(r.serverCPU.Seconds()/gb, r.name+"-server-cpu-s/GB")
	}
}

func BenchmarkRawWrite(b *testing.B) {
	dir := rawDir(b)
	data := benchData()
	b.SetBytes(benchSize)
	b.ResetTimer()
	for range b.N {
		writeRaw(b, dir, data)
	}
}

// BenchmarkWrite writes through backends configured in several ways:
// "default" is the default Config; "minio-go-defaults" leaves minio-go's
// hashing as it is (streaming SHA-256 signature over http, no CRC);
// "no-crc" is DisableChecksum; the others vary the part size and the
// number of parts in flight.
func BenchmarkWrite(b *testing.B) {
	s := server(b)
	variants := []struct {
		name   string
		change func(*s3.Config)
		tweak  func(*minio.Options, *minio.PutObjectOptions)
	}{
		{name: "default"},
		{name: "minio-go-defaults", tweak: minioGoDefaults},
		{name: "no-crc", change: func(c *s3.Config) { c.DisableChecksum = true }},
	}
	for _, part := range []int64{8 << 20, 16 << 20, 32 << 20, 64 << 20} {
		for _, conc := range []int{1, 2, 4, 8} {
			variants = append(variants, struct {
				name   string
				change func(*s3.Config)
				tweak  func(*minio.Options, *minio.PutObjectOptions)
			}{
				name:   fmt.Sprintf("part=%dMiB/concurrency=%d", part>>20, conc),
				change: func(c *s3.Config) { c.PartSize, c.Concurrency = part, conc },
			})
		}
	}
	data := benchData()
	for _, v := range variants {
		b.Run(v.name, func(b *testing.B) {
			cfg, err := s.NewBucket(b.Context())
			if err != nil {
				b.Fatal(err)
			}
			if v.change != nil {
				v.change(&cfg)
			}
			be, err := s3.NewTweaked(b.Context(), cfg, v.tweak)
			if err != nil {
				b.Fatal(err)
			}
			defer be.Close()
			b.SetBytes(benchSize)
			b.ReportAllocs()
			b.ResetTimer()
			c0, s0 := cpuTimes(b)
			for range b.N {
				writeBackend(b, be, data)
			}
			c1, s1 := cpuTimes(b)
			reportCPU(b, c0, s0, c1, s1, float64(b.N)*benchSize)
		})
	}
}

// BenchmarkRead reads a whole object back.
func BenchmarkRead(b *testing.B) {
	be := newBackend(b, server(b), nil)
	defer be.Close()
	data := benchData()
	w, err := be.Create(b.Context(), benchName)
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
	b.SetBytes(benchSize)
	b.ResetTimer()
	for range b.N {
		r, err := be.Open(b.Context(), benchName, 0, -1)
		if err != nil {
			b.Fatal(err)
		}
		if n, err := io.Copy(io.Discard, r); err != nil || n != benchSize {
			b.Fatalf("read %d bytes, %v", n, err)
		}
		r.Close()
	}
}
