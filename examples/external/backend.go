package ckptexternal

import (
	"bytes"
	"context"
	"io"
	"sort"
	"strings"
	"sync"

	"github.com/ckpt/ckpt/storage"
)

// MapBackend is a storage tier in memory: committed objects are byte
// slices in a map, never changed once stored (a commit replaces the
// slice), so a reader can keep reading the object it opened.
type MapBackend struct {
	mu      sync.Mutex
	objects map[string][]byte
	closed  bool
}

// NewMapBackend returns an empty tier.
func NewMapBackend() *MapBackend { return &MapBackend{objects: map[string][]byte{}} }

var (
	_ storage.Backend   = (*MapBackend)(nil)
	_ storage.Describer = (*MapBackend)(nil)
)

// Properties: names are flat keys, as in an object store.
func (b *MapBackend) Properties() storage.Properties {
	return storage.Properties{Connections: 8, Hierarchical: false}
}

func (b *MapBackend) precheck(ctx context.Context, op, name string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return storage.Precheck(ctx, op, name, b.closed)
}

func (b *MapBackend) Create(ctx context.Context, name string) (storage.Writer, error) {
	if err := b.precheck(ctx, "create", name); err != nil {
		return nil, err
	}
	return &mapWriter{b: b, ctx: ctx, name: name}, nil
}

func (b *MapBackend) Open(ctx context.Context, name string, offset, length int64) (io.ReadCloser, error) {
	if err := b.precheck(ctx, "open", name); err != nil {
		return nil, err
	}
	if offset < 0 {
		return nil, &storage.Error{Op: "open", Name: name, Err: storage.ErrInvalidName}
	}
	b.mu.Lock()
	data, ok := b.objects[name]
	b.mu.Unlock()
	if !ok {
		return nil, &storage.Error{Op: "open", Name: name, Err: storage.ErrNotExist}
	}
	data = data[min(offset, int64(len(data))):]
	if length >= 0 {
		data = data[:min(length, int64(len(data)))]
	}
	return io.NopCloser(bytes.NewReader(data)), nil
}

func (b *MapBackend) Stat(ctx context.Context, name string) (storage.Info, error) {
	if err := b.precheck(ctx, "stat", name); err != nil {
		return storage.Info{}, err
	}
	b.mu.Lock()
	data, ok := b.objects[name]
	b.mu.Unlock()
	if !ok {
		return storage.Info{}, &storage.Error{Op: "stat", Name: name, Err: storage.ErrNotExist}
	}
	return storage.Info{Name: name, Size: int64(len(data))}, nil
}

// List reports from a snapshot, so that fn may use the backend.
func (b *MapBackend) List(ctx context.Context, prefix string, fn func(storage.Info) error) error {
	if err := b.precheck(ctx, "list", prefix); err != nil {
		return err
	}
	var infos []storage.Info
	b.mu.Lock()
	for name, data := range b.objects {
		if strings.HasPrefix(name, prefix) {
			infos = append(infos, storage.Info{Name: name, Size: int64(len(data))})
		}
	}
	b.mu.Unlock()
	sort.Slice(infos, func(i, j int) bool { return infos[i].Name < infos[j].Name })
	for _, i := range infos {
		if err := fn(i); err != nil {
			return err
		}
	}
	return nil
}

func (b *MapBackend) Remove(ctx context.Context, name string) error {
	if err := b.precheck(ctx, "remove", name); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.objects[name]; !ok {
		return &storage.Error{Op: "remove", Name: name, Err: storage.ErrNotExist}
	}
	delete(b.objects, name)
	return nil
}

func (b *MapBackend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	return nil
}

// mapWriter collects an object's bytes until Commit stores them.
type mapWriter struct {
	b    *MapBackend
	ctx  context.Context
	name string
	buf  bytes.Buffer
	done bool
	err  error // the first failed Write: Commit fails too
}

func (w *mapWriter) Write(p []byte) (int, error) {
	switch {
	case w.done:
		return 0, &storage.Error{Op: "write", Name: w.name, Err: storage.ErrClosed}
	case w.ctx.Err() != nil:
		w.err = &storage.Error{Op: "write", Name: w.name, Err: w.ctx.Err()}
		return 0, w.err
	}
	return w.buf.Write(p)
}

func (w *mapWriter) Commit() error {
	if w.done {
		return &storage.Error{Op: "commit", Name: w.name, Err: storage.ErrClosed}
	}
	w.done = true
	if w.err != nil {
		return w.err
	}
	if err := w.b.precheck(w.ctx, "commit", w.name); err != nil {
		return err
	}
	w.b.mu.Lock()
	w.b.objects[w.name] = bytes.Clone(w.buf.Bytes())
	w.b.mu.Unlock()
	w.buf = bytes.Buffer{}
	return nil
}

func (w *mapWriter) Abort() error {
	w.done = true
	w.buf = bytes.Buffer{}
	return nil
}
