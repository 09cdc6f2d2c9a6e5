package transparent

import (
	"bytes"
	"compress/gzip"
	crand "crypto/rand"
	"github.com/klauspost/compress/zstd"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ckpt/ckpt/internal/compress"
)

var (
	randomBytes = func(n int, seed uint64) []byte { return compress.RandomBytes(n, byte(seed)) }
	pageLike    = compress.ZeroHeavy
)

// bigRandom is n bytes from the kernel's generator: a seeded stream in Go
// takes most of a minute for tens of MiB under the race detector.
func bigRandom(n int) []byte {
	b := make([]byte, n)
	crand.Read(b)
	return b
}

func TestStoreImageChoice(t *testing.T) {
	enc, err := newEncoder()
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	for _, c := range []struct {
		name     string
		data     []byte
		compress bool
	}{
		{"pages", pageLike(sampleSize + 256<<10), true},
		{"random", randomBytes(sampleSize+256<<10, 1), false},
		{"small compressible", pageLike(8 << 10), false},
		{"mostly compressible", append(pageLike(sampleSize), randomBytes(256<<10, 2)...), true},
		// A pages image: the program's own small mappings first, then
		// its big random heap (the benchmark's holder).
		{"random after a compressible start", append(pageLike(sampleSize), bigRandom(32*sampleSize)...), false},
		{"empty", nil, false},
	} {
		var stored bytes.Buffer
		n, z, err := storeImage(enc, &stored, bytes.NewReader(c.data), int64(len(c.data)))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if z != c.compress || n != int64(stored.Len()) {
			t.Errorf("%s: compressed %v, %d bytes said for %d written; want compressed %v", c.name, z, n, stored.Len(), c.compress)
		}
		switch {
		case z && stored.Len() >= len(c.data)*3/4:
			t.Errorf("%s: compressed to %d bytes of %d", c.name, stored.Len(), len(c.data))
		case !z && !bytes.Equal(stored.Bytes(), c.data):
			t.Errorf("%s: stored as it is, but not byte for byte", c.name)
		}
		var back bytes.Buffer
		if err := loadImage(&back, bytes.NewReader(stored.Bytes()), z); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !bytes.Equal(back.Bytes(), c.data) {
			t.Errorf("%s: %d bytes back, not the %d stored", c.name, back.Len(), len(c.data))
		}
	}
}

// TestLoadImageCorrupt: a compressed image that is not a zstd stream (its
// hash checked out, but it was stored wrong) fails its load rather than
// handing CRIU garbage.
func TestLoadImageCorrupt(t *testing.T) {
	enc, err := newEncoder()
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	var stored bytes.Buffer
	if _, _, err := storeImage(enc, &stored, bytes.NewReader(pageLike(1<<20)), 1<<20); err != nil {
		t.Fatal(err)
	}
	b := stored.Bytes()
	for name, bad := range map[string][]byte{
		"not zstd":  pageLike(1 << 20),
		"truncated": b[:len(b)/2],
	} {
		if err := loadImage(io.Discard, bytes.NewReader(bad), true); err == nil {
			t.Errorf("%s: loaded without an error", name)
		}
	}
}

// TestStoreFetchImages stores a dump directory as a checkpoint's files,
// the big compressible image compressed and the others not, CRIU's log
// and statistics left behind, and fetches them back for CRIU byte for
// byte.
func TestStoreFetchImages(t *testing.T) {
	dump := t.TempDir()
	images := map[string][]byte{
		"pages-1.img": pageLike(sampleSize + 256<<10),
		"pages-2.img": randomBytes(sampleSize, 3),
		"core-1.img":  []byte("registers"),
	}
	for name, b := range images {
		if err := os.WriteFile(filepath.Join(dump, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(dump, "dump.log"), []byte("log"), 0o600)
	os.WriteFile(filepath.Join(dump, "stats-dump"), []byte("CRIU's statistics"), 0o600)
	s := &supervisor{cfg: Config{Scratch: t.TempDir()}}
	files := memFiles{}
	names, compressed, err := s.store(files, dump)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"core-1.img", "pages-1.img", "pages-2.img"}) || !slices.Equal(compressed, []string{"pages-1.img"}) {
		t.Fatalf("stored %v, compressed %v; want the three images, pages-1.img compressed", names, compressed)
	}
	c := s.rep.Compression
	raw := int64(len(images["pages-1.img"]) + len(images["pages-2.img"]) + len(images["core-1.img"]))
	if c.Files != 3 || c.Compressed != 1 || c.RawBytes != raw || s.rep.ImageBytes != raw || c.StoredBytes >= raw-sampleSize {
		t.Errorf("compression %+v (%s), image bytes %d; want 3 files, 1 compressed, %d bytes raw", c, c, s.rep.ImageBytes, raw)
	}
	if len(files["pages-1.img"]) >= len(images["pages-1.img"])/2 {
		t.Errorf("pages-1.img stored in %d bytes", len(files["pages-1.img"]))
	}
	dir, err := s.fetch(memRestored{name: "t1", files: files}, Meta{Images: names, Compressed: compressed})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range images {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s fetched: %d bytes, %v; want the %d CRIU wrote", name, len(got), err, len(want))
		}
	}
	for _, name := range []string{"dump.log", "stats-dump"} {
		if _, ok := files[name]; ok {
			t.Errorf("CRIU's %s was stored as an image", name)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "dump.log")); err == nil {
		t.Errorf("CRIU's log was fetched as an image")
	}
}

// benchImageSize is the size of the images of the benchmarks.
const benchImageSize = 64 << 20

// benchImages are the benchmarks' encoder (closed when b ends) and their
// two images: random bytes, which do not compress, and page-like memory.
func benchImages(b *testing.B) (*zstd.Encoder, []benchImage) {
	enc, err := newEncoder()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { enc.Close() })
	return enc, []benchImage{{"random", randomBytes(benchImageSize, 4)}, {"pages", pageLike(benchImageSize)}}
}

type benchImage struct {
	name string
	data []byte
}

// BenchmarkImageStore measures what storing images costs against copying
// them as they are, into a file (docs/PERFORMANCE.md; issue 19's goals:
// random pages cost at most 10% over the copy, compressible pages are
// written at 10 times gzip's rate, DMTCP's compression, or more).
func BenchmarkImageStore(b *testing.B) {
	const size = benchImageSize
	enc, inputs := benchImages(b)
	for _, d := range inputs {
		out := filepath.Join(b.TempDir(), "image")
		into := func(b *testing.B, write func(w io.Writer, r io.Reader) error) {
			b.SetBytes(size)
			for b.Loop() {
				f, err := os.Create(out)
				if err != nil {
					b.Fatal(err)
				}
				if err := write(f, bytes.NewReader(d.data)); err != nil {
					b.Fatal(err)
				}
				if err := f.Close(); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.Run(d.name+"/copy", func(b *testing.B) {
			into(b, func(w io.Writer, r io.Reader) error { _, err := io.Copy(w, r); return err })
		})
		b.Run(d.name+"/store", func(b *testing.B) {
			into(b, func(w io.Writer, r io.Reader) error {
				_, _, err := storeImage(enc, w, r.(io.ReaderAt), size)
				return err
			})
		})
		b.Run(d.name+"/gzip", func(b *testing.B) {
			into(b, func(w io.Writer, r io.Reader) error {
				z := gzip.NewWriter(w)
				if _, err := io.Copy(z, r); err != nil {
					return err
				}
				return z.Close()
			})
		})
	}
}

// BenchmarkImageInPlace measures what the checkpoint does with an image
// CRIU dumped into the cache (compressInPlace: its sample read, and the
// file replaced by its zstd frame if that pays) against what it did when
// CRIU dumped into a scratch directory (storeImage: the image copied into
// the cache, compressed or not), for a 64 MiB image in the page cache
// (docs/PERFORMANCE.md).
func BenchmarkImageInPlace(b *testing.B) {
	const size = benchImageSize
	enc, inputs := benchImages(b)
	for _, d := range inputs {
		dir := b.TempDir()
		raw, out := filepath.Join(dir, "pages-1.img"), filepath.Join(dir, "stored")
		dumped := func(b *testing.B) {
			b.StopTimer()
			if err := os.WriteFile(raw, d.data, 0o600); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		b.Run(d.name+"/inplace", func(b *testing.B) {
			b.SetBytes(size)
			for range b.N {
				dumped(b)
				if _, _, _, err := compressInPlace(enc, raw); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(d.name+"/store", func(b *testing.B) {
			b.SetBytes(size)
			for range b.N {
				dumped(b)
				r, err := os.Open(raw)
				if err != nil {
					b.Fatal(err)
				}
				w, err := os.Create(out)
				if err != nil {
					b.Fatal(err)
				}
				if _, _, err := storeImage(enc, w, r, size); err != nil {
					b.Fatal(err)
				}
				r.Close()
				if err := w.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
