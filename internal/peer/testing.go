package peer

import (
	"context"
	"fmt"
	"sync"
)

// MapResolver is an in-memory Resolver for tests and one-process runs:
// Publish stores a rank's address, Lookup waits for it.
type MapResolver struct {
	mu      sync.Mutex
	addrs   map[int]string
	changed chan struct{} // closed at every Publish
}

var _ Resolver = (*MapResolver)(nil)

// NewMapResolver returns an empty resolver.
func NewMapResolver() *MapResolver {
	return &MapResolver{addrs: map[int]string{}, changed: make(chan struct{})}
}

// Publish sets (or replaces, after a relaunch) rank's address.
func (r *MapResolver) Publish(rank int, addr string) {
	r.mu.Lock()
	r.addrs[rank] = addr
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
}

// Lookup returns rank's address, waiting until it is published.
func (r *MapResolver) Lookup(ctx context.Context, rank int) (string, error) {
	for {
		r.mu.Lock()
		addr, ok := r.addrs[rank]
		changed := r.changed
		r.mu.Unlock()
		if ok {
			return addr, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return "", fmt.Errorf("address of rank %d: %w", rank, ctx.Err())
		}
	}
}

// Handshake returns the handshake a dialler of the application channel
// from rank from to rank to sends, with token, length prefix included:
// for tests and hostile clients (internal/hostile) that speak to a Node
// without being one.
func Handshake(token string, from, to int) []byte {
	return appendHello(nil, hello{kind: kindApp, token: token, from: from, to: to})
}
