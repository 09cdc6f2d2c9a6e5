package cluster

import (
	"bytes"
	"context"
	"io"
	"sync"

	"github.com/ckpt/ckpt/storage"
)

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

// nodeCache is a node's cache as its ranks see it: once the node is lost
// every call fails with ErrNodeLost, as calls on a crashed machine never
// return anything; and a crash can be armed to happen at a chosen Create.
type nodeCache struct {
	storage.Backend

	mu      sync.Mutex
	lost    bool
	when    func(object string) bool // armed crash, nil if none
	trigger func()
}

var (
	_ storage.Backend   = (*nodeCache)(nil)
	_ storage.Unwrapper = (*nodeCache)(nil)
)

// Unwrap lets storage.As find the backend's optional interfaces (the
// Locator that routes Checkpoint.Path to a file).
func (n *nodeCache) Unwrap() storage.Backend { return n.Backend }

// lose marks the node lost and reports whether it already was.
func (n *nodeCache) lose() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	was := n.lost
	n.lost, n.when = true, nil
	return was
}

func (n *nodeCache) isLost() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.lost
}

func (n *nodeCache) setTrigger(when func(string) bool, trigger func()) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.when, n.trigger = when, trigger
}

// check fails once the node is lost; op and name go into the error.
func (n *nodeCache) check(op, name string) error {
	if n.isLost() {
		return &storage.Error{Op: op, Name: name, Err: ErrNodeLost}
	}
	return nil
}

func (n *nodeCache) Create(ctx context.Context, name string) (storage.Writer, error) {
	n.mu.Lock()
	fire := n.when != nil && n.when(name)
	trigger := n.trigger
	if fire {
		n.when = nil // once
	}
	n.mu.Unlock()
	if fire {
		trigger() // may take the cluster's lock, then ours (LoseNode)
	}
	if err := n.check("create", name); err != nil {
		return nil, err
	}
	w, err := n.Backend.Create(ctx, name)
	if err != nil {
		return nil, err
	}
	return &nodeWriter{Writer: w, n: n, name: name}, nil
}

func (n *nodeCache) Open(ctx context.Context, name string, offset, length int64) (io.ReadCloser, error) {
	if err := n.check("open", name); err != nil {
		return nil, err
	}
	return n.Backend.Open(ctx, name, offset, length)
}

func (n *nodeCache) Stat(ctx context.Context, name string) (storage.Info, error) {
	if err := n.check("stat", name); err != nil {
		return storage.Info{}, err
	}
	return n.Backend.Stat(ctx, name)
}

func (n *nodeCache) List(ctx context.Context, prefix string, fn func(storage.Info) error) error {
	if err := n.check("list", prefix); err != nil {
		return err
	}
	return n.Backend.List(ctx, prefix, fn)
}

func (n *nodeCache) Remove(ctx context.Context, name string) error {
	if err := n.check("remove", name); err != nil {
		return err
	}
	return n.Backend.Remove(ctx, name)
}

// nodeWriter refuses to write or commit once its node is lost: nothing a
// dead node was writing may appear.
type nodeWriter struct {
	storage.Writer
	n    *nodeCache
	name string
}

func (w *nodeWriter) Write(p []byte) (int, error) {
	if err := w.n.check("write", w.name); err != nil {
		return 0, err
	}
	return w.Writer.Write(p)
}

func (w *nodeWriter) Commit() error {
	if err := w.n.check("commit", w.name); err != nil {
		w.Writer.Abort()
		return err
	}
	return w.Writer.Commit()
}
