package transparent

import (
	"fmt"
	"io"

	"github.com/klauspost/compress/zstd"

	"github.com/ckpt/ckpt/internal/compress"
	"github.com/ckpt/ckpt/internal/units"
)

// Image files are compressed with zstd on their way into the checkpoint
// when it pays (issue 19, item 4). Whether it pays is decided per file
// from a sample, sampleSize bytes in sampleParts windows spread evenly
// over the file, compressed at zstd's fastest level. Not its first bytes
// only: a pages image holds the process's mappings in address order, the
// program's own small, compressible data first and its big heap after,
// and the first MiB of a GiB of random data (the 1 GiB benchmark) said
// "compress" for 0.6% saved and seconds of zstd per rank, at the dump and
// again at the restore. The decision is compress.ZstdPays (a tenth saved,
// files from compress.MinSize), not the engine's half (compress.PaysBelow):
// images are only ever zstd-compressed whole, the trade measured for them: a
// process's pages are often mostly zeros and repeated structures
// (a shell, an interpreter's heap), and then the whole file is compressed;
// random data (encrypted, already compressed, a simulation's noise) does
// not shrink, and is copied as it is, so that it costs only the sample's
// compression. The choice is recorded per file in the checkpoint's Meta
// (Compressed) and counted per checkpoint in the Report.
//
// sampleSize is how much of an image decides whether to compress it: more
// than the engine's compress.SampleSize, since an image's first pages
// (CRIU's headers, a few zero pages) say less of the rest than a data
// file's first bytes do. CRIU's small images (the task's registers, its
// file table) are below compress.MinSize and stay as they are.
const (
	sampleSize  = 1 << 20
	sampleParts = 16
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

// newEncoder is the encoder of a checkpoint's images, reused from image
// to image: zstd's fastest level (compress.NewZstd), which writes
// compressible pages far faster than a disk (and gzip) would take them.
func newEncoder() (*zstd.Encoder, error) { return compress.NewZstd(nil) }

// sample reads the part of a file of size bytes that decides whether to
// compress it: all of it up to sampleSize, else sampleParts windows
// spread evenly from its start to its end.
func sample(r io.ReaderAt, size int64) ([]byte, error) {
	if size <= sampleSize {
		b := make([]byte, size)
		n, err := r.ReadAt(b, 0)
		if err == io.EOF {
			err = nil
		}
		return b[:n], err
	}
	const part = sampleSize / sampleParts
	b := make([]byte, sampleSize)
	for i := range int64(sampleParts) {
		off := i * (size - part) / (sampleParts - 1)
		if _, err := r.ReadAt(b[i*part:(i+1)*part], off); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// storeImage copies the image r (size bytes) into w, compressed if its
// sample says it pays, and returns the bytes written and the choice.
func storeImage(enc *zstd.Encoder, w io.Writer, r io.ReaderAt, size int64) (stored int64, compressed bool, err error) {
	s, err := sample(r, size)
	if err != nil {
		return 0, false, err
	}
	cw := &countWriter{w: w}
	all := io.NewSectionReader(r, 0, size)
	if !compress.ZstdPays(s, size) {
		_, err := io.Copy(cw, all)
		return cw.n, false, err
	}
	enc.Reset(cw)
	if _, err := io.Copy(enc, all); err != nil {
		return cw.n, true, err
	}
	err = enc.Close()
	return cw.n, true, err
}

// loadImage copies a stored image r into w, decompressing it if it was
// stored compressed.
func loadImage(w io.Writer, r io.Reader, compressed bool) error {
	var form compress.Form
	if compressed {
		form.Codec = compress.Zstd
	}
	dec, err := compress.NewReader(r, form)
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
