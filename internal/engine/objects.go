package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/ckpt/ckpt/internal/manifest"
	"github.com/ckpt/ckpt/storage"
)

// objectsReaderAt reads a sequence of objects as one stream: a rank's
// files, concatenated in manifest order, are the data its redundancy set
// encodes.
//
// A cache that is a directory (storage.Locator) has each file opened once,
// at its first read, and read with pread: Encode and Rebuild read a block
// at a time, and an open per block cost more than the read of a block in
// the page cache. Close closes them.
//
// Like Checkpoint.Path, this reads the files beneath any decorator that
// chose to expose its backend's Locator (storage.Unwrapper): retry and
// throttle, and the test cluster's node caches. A fault such a decorator
// would inject on Open is not seen by these reads; the cluster's node
// loss is still seen by the ranks, which end with their node.
type objectsReaderAt struct {
	ctx   context.Context
	b     storage.Backend
	names []string
	sizes []int64

	mu     sync.Mutex
	files  []*os.File   // by object, opened at first read; nil until then
	stamps []*fileStamp // by object, its stamp when opened (nil: none)
}

// file returns object i opened for pread, or nil when the backend has no
// path for it (then each read opens the object through the backend).
func (o *objectsReaderAt) file(i int) (*os.File, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.files == nil {
		o.files = make([]*os.File, len(o.names))
		o.stamps = make([]*fileStamp, len(o.names))
	}
	if f := o.files[i]; f != nil {
		return f, nil
	}
	loc, ok := storage.As[storage.Locator](o.b)
	if !ok {
		return nil, nil
	}
	path, ok := loc.Path(o.names[i])
	if !ok {
		return nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o.names[i], err)
	}
	o.files[i] = f
	if st, ok := stampOf(f); ok {
		o.stamps[i] = &st
	}
	return f, nil
}

// unchanged returns the stamp object i had when it was opened, if it has
// it still: every byte read from it since came from the file in that
// state. ok is false for an object not opened or without a stamp.
func (o *objectsReaderAt) unchanged(i int) (st fileStamp, ok bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.files == nil || o.files[i] == nil || o.stamps[i] == nil {
		return st, false
	}
	now, ok := stampOf(o.files[i])
	return *o.stamps[i], ok && now == *o.stamps[i]
}

// Close closes the files ReadAt opened.
func (o *objectsReaderAt) Close() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	var errs []error
	for i, f := range o.files {
		if f != nil {
			errs = append(errs, f.Close())
			o.files[i] = nil
		}
	}
	return errors.Join(errs...)
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
		f, err := o.file(i)
		if err != nil {
			return n, err
		}
		var got int
		if f != nil {
			got, err = f.ReadAt(p[n:n+int(want)], off)
			if got == int(want) {
				err = nil
			} else if err == nil || errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
		} else {
			var r io.ReadCloser
			if r, err = o.b.Open(o.ctx, o.names[i], off, want); err != nil {
				return n, err
			}
			got, err = io.ReadFull(r, p[n:n+int(want)])
			r.Close()
		}
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
// sizes: a rebuilt rank's data back into its files. With hashes (one per
// object, from the manifest) it hashes each object's bytes on their way
// out and commits an object only if its hash matches, so a rebuild
// verifies what it writes without reading it back; an object that does
// not match is discarded and the write fails with manifest.ErrCorrupt.
// Each object is committed when it is full; Finish checks that the stream
// had exactly the total size and creates the empty objects at its end.
type splitWriter struct {
	ctx    context.Context
	b      storage.Backend
	names  []string
	sizes  []int64
	hashes []manifest.Hash // nil: commit without checking
	i      int
	left   int64
	cur    storage.Writer
	h      *manifest.ContentHasher
}

func (w *splitWriter) next() error {
	for w.cur == nil && w.i < len(w.names) {
		obj, err := w.b.Create(w.ctx, w.names[w.i])
		if err != nil {
			return err
		}
		w.cur, w.left = obj, w.sizes[w.i]
		if w.hashes != nil {
			w.h = manifest.NewContentHasher()
		}
		if w.left == 0 {
			if err := w.commit(); err != nil {
				return err
			}
		}
	}
	return nil
}

func (w *splitWriter) commit() error {
	cur := w.cur
	w.cur = nil
	w.i++
	if w.hashes != nil {
		if got, want := w.h.Sum128(), w.hashes[w.i-1]; got != want {
			cur.Abort()
			return fmt.Errorf("%s: %w: content hash %s on its way into the cache, the manifest says %s", w.names[w.i-1], manifest.ErrCorrupt, got, want)
		}
	}
	return cur.Commit()
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
		if w.h != nil {
			w.h.Write(chunk[:m])
		}
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
		w.cur = nil
		return fmt.Errorf("rebuilt data ends %d bytes short in %s", w.left, w.names[w.i])
	}
	return nil
}

// Abort discards the object being written.
func (w *splitWriter) Abort() {
	if w.cur != nil {
		w.cur.Abort()
		w.cur = nil
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
