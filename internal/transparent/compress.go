package transparent

import (
	"fmt"
	"io"

	"github.com/klauspost/compress/zstd"

	"github.com/ckpt/ckpt/internal/units"
)

// Image files are compressed with zstd on their way into the checkpoint
// when it pays (issue 19, item 4). Whether it pays is decided per file
// from a sample, its first sampleSize bytes, compressed at zstd's fastest
// level: a process's pages are often mostly zeros and repeated structures
// (a shell, an interpreter's heap), and then the whole file is compressed;
// random data (encrypted, already compressed, a simulation's noise) does
// not shrink, and is copied as it is, so that it costs only the sample's
// compression. The choice is recorded per file in the checkpoint's Meta
// (Compressed) and counted per checkpoint in the Report.
const (
	// sampleSize is how much of a file decides whether to compress it.
	sampleSize = 1 << 20
	// minCompress is the smallest file worth compressing: CRIU's small
	// images (the task's registers, its file table) are a few hundred
	// bytes and gain nothing that matters.
	minCompress = 64 << 10
	// paysBelow is the sample's compressed size, as a fraction of the
	// sample, below which the file is compressed: a tenth saved at least,
	// enough to pay for the decompression at restore.
	paysBelow = 0.9
)

// Compression is what a checkpoint did with its images: their bytes as
// CRIU wrote them and as stored, and how many files were compressed.
type Compression struct {
	Files, Compressed int
	RawBytes          int64
	StoredBytes       int64
}

// String says what was chosen, for the rank's report.
func (c Compression) String() string {
	if c.Compressed == 0 {
		return fmt.Sprintf("%d image files stored as they are (zstd did not pay)", c.Files)
	}
	return fmt.Sprintf("zstd on %d of %d image files, %s stored for %s",
		c.Compressed, c.Files, units.FormatSize(float64(c.StoredBytes)), units.FormatSize(float64(c.RawBytes)))
}

// add counts one file.
func (c *Compression) add(raw, stored int64, compressed bool) {
	c.Files++
	c.RawBytes += raw
	c.StoredBytes += stored
	if compressed {
		c.Compressed++
	}
}

// pays says whether to compress a file whose first bytes are sample, the
// whole file being size bytes long.
func pays(enc *zstd.Encoder, sample []byte, size int64) bool {
	if size < minCompress || len(sample) == 0 {
		return false
	}
	out := enc.EncodeAll(sample, make([]byte, 0, len(sample)))
	return float64(len(out)) < paysBelow*float64(len(sample))
}

// newEncoder is the encoder of a checkpoint's images: zstd's fastest
// level, which writes compressible pages far faster than a disk (and
// gzip) would take them.
func newEncoder() (*zstd.Encoder, error) {
	return zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest))
}

// storeImage copies the image r (size bytes) into w, compressed if its
// sample says it pays, and returns the bytes written and the choice.
func storeImage(enc *zstd.Encoder, w io.Writer, r io.Reader, size int64) (stored int64, compressed bool, err error) {
	sample := make([]byte, min(size, sampleSize))
	n, err := io.ReadFull(r, sample)
	if err != nil && err != io.ErrUnexpectedEOF {
		return 0, false, err
	}
	sample = sample[:n]
	cw := &countWriter{w: w}
	if !pays(enc, sample, size) {
		if _, err := cw.Write(sample); err != nil {
			return cw.n, false, err
		}
		_, err := io.Copy(cw, r)
		return cw.n, false, err
	}
	enc.Reset(cw)
	if _, err := enc.Write(sample); err != nil {
		return cw.n, true, err
	}
	if _, err := io.Copy(enc, r); err != nil {
		return cw.n, true, err
	}
	err = enc.Close()
	return cw.n, true, err
}

// loadImage copies a stored image r into w, decompressing it if it was
// stored compressed.
func loadImage(w io.Writer, r io.Reader, compressed bool) error {
	if !compressed {
		_, err := io.Copy(w, r)
		return err
	}
	dec, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1))
	if err != nil {
		return err
	}
	defer dec.Close()
	_, err = io.Copy(w, dec)
	return err
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
