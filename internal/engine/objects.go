package engine

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/ckpt/ckpt/internal/manifest"
	"github.com/ckpt/ckpt/storage"
)

// objectsReaderAt reads a sequence of objects as one stream: a rank's
// files, concatenated in manifest order, are the data its redundancy set
// encodes.
type objectsReaderAt struct {
	ctx   context.Context
	b     storage.Backend
	names []string
	sizes []int64
}

func (o *objectsReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n := 0
	for i, size := range o.sizes {
		if off >= size {
			off -= size
			continue
		}
		if len(p) == n {
			break
		}
		want := min(int64(len(p)-n), size-off)
		r, err := o.b.Open(o.ctx, o.names[i], off, want)
		if err != nil {
			return n, err
		}
		got, err := io.ReadFull(r, p[n:n+int(want)])
		r.Close()
		n += got
		if err != nil {
			return n, fmt.Errorf("%s: %w", o.names[i], err)
		}
		off = 0
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// splitWriter writes one stream into a sequence of new objects of given
// sizes: a rebuilt rank's data back into its files. Each object is
// committed when it is full; Finish checks that the stream had exactly the
// total size and creates the empty objects at its end.
type splitWriter struct {
	ctx   context.Context
	b     storage.Backend
	names []string
	sizes []int64
	i     int
	left  int64
	cur   storage.Writer
}

func (w *splitWriter) next() error {
	for w.cur == nil && w.i < len(w.names) {
		obj, err := w.b.Create(w.ctx, w.names[w.i])
		if err != nil {
			return err
		}
		w.cur, w.left = obj, w.sizes[w.i]
		if w.left == 0 {
			if err := w.commit(); err != nil {
				return err
			}
		}
	}
	return nil
}

func (w *splitWriter) commit() error {
	err := w.cur.Commit()
	w.cur = nil
	w.i++
	return err
}

func (w *splitWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		if err := w.next(); err != nil {
			return n, err
		}
		if w.cur == nil {
			return n, errors.New("rebuilt data longer than the files it belongs to")
		}
		chunk := p[:min(int64(len(p)), w.left)]
		m, err := w.cur.Write(chunk)
		n += m
		if err != nil {
			return n, err
		}
		w.left -= int64(m)
		p = p[m:]
		if w.left == 0 {
			if err := w.commit(); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

// Finish commits the trailing empty objects and fails if bytes are missing.
func (w *splitWriter) Finish() error {
	if err := w.next(); err != nil {
		return err
	}
	if w.cur != nil {
		w.cur.Abort()
		return fmt.Errorf("rebuilt data ends %d bytes short in %s", w.left, w.names[w.i])
	}
	return nil
}

// Abort discards the object being written.
func (w *splitWriter) Abort() {
	if w.cur != nil {
		w.cur.Abort()
	}
}

// hashingWriter hashes and counts what goes into a storage writer.
type hashingWriter struct {
	storage.Writer
	h *manifest.ContentHasher
	n int64
}

func newHashingWriter(w storage.Writer) *hashingWriter {
	return &hashingWriter{Writer: w, h: manifest.NewContentHasher()}
}

func (w *hashingWriter) Write(p []byte) (int, error) {
	n, err := w.Writer.Write(p)
	w.h.Write(p[:n])
	w.n += int64(n)
	return n, err
}
