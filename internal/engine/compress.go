package engine

import (
	"errors"
	"fmt"
	"io"

	"github.com/ckpt/ckpt/internal/compress"
	"github.com/ckpt/ckpt/internal/manifest"
)

// A checkpoint's files may be stored compressed (Config.Compress; issue
// 17, "Fewer bytes"): each file's first compress.SampleSize bytes are
// held back until compress.Decide has chosen its form from them, then
// the file streams through that form into the cache. The manifest keeps
// the application's bytes' size and content hash (what Restored.Open
// proves it hands back) beside the stored object's (what redundancy
// encodes, flushes copy and restarts rebuild and verify, never
// decompressing). Routed files (Checkpoint.Path) are written by the
// application itself and stored as written.

// compressor is a file's path through compression: the sample until the
// form is chosen, then the form's writer over the file's hashingWriter.
type compressor struct {
	sample  []byte // the file's first bytes, until decided
	decided bool
	form    compress.Form
	enc     io.WriteCloser          // the form's writer; nil when stored as written
	logical *manifest.ContentHasher // the application's bytes, when compressed
	n       int64                   // the application's bytes so far
}

func newCompressor() *compressor {
	return &compressor{sample: make([]byte, 0, compress.SampleSize)}
}

// write takes p from the application; w is the file's stored bytes.
func (z *compressor) write(w *hashingWriter, p []byte) (int, error) {
	n := 0
	if !z.decided {
		n = copy(z.sample[len(z.sample):cap(z.sample)], p)
		z.sample = z.sample[:len(z.sample)+n]
		z.n += int64(n)
		p = p[n:]
		if len(z.sample) < cap(z.sample) {
			return n, nil
		}
		if err := z.decide(w, -1); err != nil {
			return n, err
		}
	}
	if len(p) == 0 {
		return n, nil
	}
	var m int
	var err error
	if z.enc != nil {
		z.logical.Write(p)
		m, err = z.enc.Write(p)
	} else {
		m, err = w.Write(p)
	}
	z.n += int64(m)
	return n + m, err
}

// decide chooses the form from the sample (size: the file's whole length
// if known, else -1) and writes the sample through it.
func (z *compressor) decide(w *hashingWriter, size int64) error {
	z.decided = true
	sample := z.sample
	z.sample = nil
	z.form = compress.Decide(sample, size)
	if !z.form.Compressed() {
		_, err := w.Write(sample)
		return err
	}
	enc, err := compress.NewWriter(w, z.form)
	if err != nil {
		return err
	}
	z.enc, z.logical = enc, manifest.NewContentHasher()
	z.logical.Write(sample)
	_, err = enc.Write(sample)
	return err
}

// finish flushes what the form holds back into w and returns the
// application's bytes' size and hash.
func (z *compressor) finish(w *hashingWriter) (int64, manifest.Hash, error) {
	if !z.decided {
		if err := z.decide(w, int64(len(z.sample))); err != nil {
			return 0, manifest.Hash{}, err
		}
	}
	if z.enc == nil {
		return w.n, w.h.Sum128(), nil
	}
	if err := z.enc.Close(); err != nil {
		return 0, manifest.Hash{}, err
	}
	return z.n, z.logical.Sum128(), nil
}

// discard ends the form's writer of a file being abandoned; what it
// flushes goes to an object about to be aborted.
func (z *compressor) discard() {
	if z.enc != nil {
		z.enc.Close()
		z.enc = nil
	}
}

// openStored returns the application's bytes of f read from its stored
// object rc, checked against the stored form's size and hash on the way
// in and the application's on the way out. The stored hash is known only
// at the object's end, so the decoder does read a damaged object's bytes
// first (its window is bounded: compress.NewReader); what it makes of
// them is caught by the application's hash, so a wrong byte fails the
// read at the latest at the file's end, as for a file stored as written.
// verified: rc checks itself (a stampedReader of a file Restart hashed),
// so its stored bytes are not hashed again.
func openStored(rc io.ReadCloser, f manifest.File, verified bool) (io.ReadCloser, error) {
	var stored io.Reader = rc
	size, hash := f.Stored()
	if !verified {
		stored = manifest.NewContentVerifyingReader(rc, f.Name, size, hash)
	}
	if f.Codec == "" {
		return readCloser{stored, rc}, nil
	}
	form := compress.Form{Codec: f.Codec, Filter: f.Filter}
	dec, err := compress.NewReader(stored, form)
	if err != nil {
		rc.Close()
		return nil, fmt.Errorf("%s: %w", f.Name, err)
	}
	// The decompressed bytes are checked against the application's hash
	// even when the stored ones were verified: no read of the file, only
	// a hash of what the decoder made of it.
	return readCloser{manifest.NewContentVerifyingReader(dec, f.Name, f.Size, f.Hash), closers{dec, rc}}, nil
}

type readCloser struct {
	io.Reader
	io.Closer
}

type closers []io.Closer

func (cs closers) Close() error {
	var errs []error
	for _, c := range cs {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}
