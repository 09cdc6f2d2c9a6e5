// Package mem is a storage.Backend that keeps its objects in memory, for
// tests. It passes the same conformance suite as the real backends.
package mem

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/ckpt/ckpt/storage"
)

var (
	_ storage.Backend   = (*Backend)(nil)
	_ storage.Describer = (*Backend)(nil)
	_ storage.Writer    = (*writer)(nil)
)

// Backend holds objects in a map. A committed object's bytes are never
// modified afterwards (a commit replaces the map entry), so readers share
// them without copying.
type Backend struct {
	mu      sync.RWMutex
	objects map[string][]byte
	closed  bool
}

// New returns an empty backend.
func New() *Backend {
	return &Backend{objects: make(map[string][]byte)}
}

// check returns the error that a call on name must fail with, if any.
func (b *Backend) check(ctx context.Context, name string, prefix bool) error {
	var err error
	if prefix {
		err = storage.ValidPrefix(name)
	} else {
		err = storage.ValidName(name)
	}
	if err != nil {
		return err
	}
	return ctx.Err()
}

// Create implements storage.Backend.
func (b *Backend) Create(ctx context.Context, name string) (storage.Writer, error) {
	if err := b.check(ctx, name, false); err != nil {
		return nil, err
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.closed {
		return nil, &storage.Error{Op: "create", Name: name, Err: storage.ErrClosed}
	}
	return &writer{b: b, ctx: ctx, name: name}, nil
}

// Open implements storage.Backend.
func (b *Backend) Open(ctx context.Context, name string, offset, length int64) (io.ReadCloser, error) {
	if err := b.check(ctx, name, false); err != nil {
		return nil, err
	}
	if offset < 0 {
		return nil, &storage.Error{Op: "open", Name: name, Err: fmt.Errorf("negative offset %d", offset)}
	}
	data, err := b.get("open", name)
	if err != nil {
		return nil, err
	}
	data = data[min(offset, int64(len(data))):]
	if length >= 0 && length < int64(len(data)) {
		data = data[:length]
	}
	return io.NopCloser(bytes.NewReader(data)), nil
}

// Stat implements storage.Backend.
func (b *Backend) Stat(ctx context.Context, name string) (storage.Info, error) {
	if err := b.check(ctx, name, false); err != nil {
		return storage.Info{}, err
	}
	data, err := b.get("stat", name)
	if err != nil {
		return storage.Info{}, err
	}
	return storage.Info{Name: name, Size: int64(len(data))}, nil
}

func (b *Backend) get(op, name string) ([]byte, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.closed {
		return nil, &storage.Error{Op: op, Name: name, Err: storage.ErrClosed}
	}
	data, ok := b.objects[name]
	if !ok {
		return nil, &storage.Error{Op: op, Name: name, Err: storage.ErrNotExist}
	}
	return data, nil
}

// List implements storage.Backend. It takes a snapshot of the matching
// names first, so fn may call the backend.
func (b *Backend) List(ctx context.Context, prefix string, fn func(storage.Info) error) error {
	if err := b.check(ctx, prefix, true); err != nil {
		return err
	}
	b.mu.RLock()
	if b.closed {
		b.mu.RUnlock()
		return &storage.Error{Op: "list", Name: prefix, Err: storage.ErrClosed}
	}
	var infos []storage.Info
	for name, data := range b.objects {
		if strings.HasPrefix(name, prefix) {
			infos = append(infos, storage.Info{Name: name, Size: int64(len(data))})
		}
	}
	b.mu.RUnlock()
	slices.SortFunc(infos, func(a, b storage.Info) int { return strings.Compare(a.Name, b.Name) })
	for _, info := range infos {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(info); err != nil {
			return err
		}
	}
	return nil
}

// Remove implements storage.Backend.
func (b *Backend) Remove(ctx context.Context, name string) error {
	if err := b.check(ctx, name, false); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return &storage.Error{Op: "remove", Name: name, Err: storage.ErrClosed}
	}
	if _, ok := b.objects[name]; !ok {
		return &storage.Error{Op: "remove", Name: name, Err: storage.ErrNotExist}
	}
	delete(b.objects, name)
	return nil
}

// Close implements storage.Backend. It drops all objects.
func (b *Backend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	b.objects = nil
	return nil
}

// Properties implements storage.Describer: names are flat keys, and the
// backend serves any number of callers at once.
func (b *Backend) Properties() storage.Properties {
	return storage.Properties{Connections: 16, Hierarchical: false}
}

// writer collects an object in a buffer that Commit hands to the map.
type writer struct {
	b    *Backend
	ctx  context.Context
	name string
	buf  bytes.Buffer
	done bool
}

func (w *writer) Write(p []byte) (int, error) {
	if w.done {
		return 0, &storage.Error{Op: "write", Name: w.name, Err: storage.ErrClosed}
	}
	return w.buf.Write(p)
}

func (w *writer) Commit() error {
	if w.done {
		return &storage.Error{Op: "commit", Name: w.name, Err: storage.ErrClosed}
	}
	w.done = true
	data := w.buf.Bytes()
	w.buf = bytes.Buffer{}
	if err := w.ctx.Err(); err != nil {
		return &storage.Error{Op: "commit", Name: w.name, Err: err}
	}
	w.b.mu.Lock()
	defer w.b.mu.Unlock()
	if w.b.closed {
		return &storage.Error{Op: "commit", Name: w.name, Err: storage.ErrClosed}
	}
	w.b.objects[w.name] = data
	return nil
}

func (w *writer) Abort() error {
	w.done = true
	w.buf = bytes.Buffer{}
	return nil
}
