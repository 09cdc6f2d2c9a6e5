package stage

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/manifest"
	"github.com/ckpt/ckpt/internal/sharedtier"
	"github.com/ckpt/ckpt/storage"
)

// testCheckpoint is a checkpoint as the caches of its nodes hold it.
type testCheckpoint struct {
	name    string
	encoded []byte
	m       *manifest.Manifest
	data    map[string][]byte // "rank/file" → bytes
}

// node returns the ranks node holds.
func (cp *testCheckpoint) ranks(node string) []int {
	var out []int
	for _, p := range cp.m.Parts {
		if p.Node == node {
			out = append(out, p.Rank)
		}
	}
	return out
}

// object is what rank's shared-tier object must hold.
func (cp *testCheckpoint) object(rank int) []byte {
	var b []byte
	for _, f := range cp.m.Parts[rank].Files {
		b = append(b, cp.data[fmt.Sprintf("%d/%s", rank, f.Name)]...)
	}
	return b
}

// makeCheckpoint builds a checkpoint of ranks spread round robin over
// nodes, each rank with files of the given sizes filled from seed.
func makeCheckpoint(t testing.TB, name string, id uint64, ranks, nodes int, sizes []int, seed uint64) *testCheckpoint {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, id))
	cp := &testCheckpoint{name: name, data: map[string][]byte{}}
	var parts []manifest.Part
	for r := range ranks {
		p := manifest.Part{Rank: r, Node: fmt.Sprintf("node%d", r%nodes), Set: r, Member: 0}
		for i, n := range sizes {
			b := make([]byte, n)
			for j := range b {
				b[j] = byte(rng.Uint32())
			}
			fn := fmt.Sprintf("f%d", i)
			cp.data[fmt.Sprintf("%d/%s", r, fn)] = b
			p.Files = append(p.Files, manifest.File{Rank: r, Name: fn, Size: int64(n), Hash: manifest.ContentHashBytes(b)})
		}
		parts = append(parts, p)
	}
	m, err := manifest.Merge(parts, manifest.Meta{Name: name, ID: id, Created: time.Unix(1700000000, 0).UTC(),
		Ranks: ranks, Scheme: "single", SetSize: 1, M: 0, Sets: splitSets(ranks), Level: manifest.LevelCache})
	if err != nil {
		t.Fatal(err)
	}
	cp.m = m
	if cp.encoded, err = manifest.Encode(m); err != nil {
		t.Fatal(err)
	}
	return cp
}

func splitSets(n int) [][]int {
	s := make([][]int, n)
	for i := range s {
		s[i] = []int{i}
	}
	return s
}

// memSource is a node's cache in memory. failOpen, when set, makes Open
// fail. holdOpen, when
// set, makes Open say so on it and wait for its context's end, as a
// cache read cut off by the client's Close.
type memSource struct {
	mu       sync.Mutex
	cps      map[string]*testCheckpoint
	failOpen error
	holdOpen chan struct{}
	opens    int
}

func newSource(cps ...*testCheckpoint) *memSource {
	s := &memSource{cps: map[string]*testCheckpoint{}}
	for _, cp := range cps {
		s.cps[cp.name] = cp
	}
	return s
}

func (s *memSource) add(cp *testCheckpoint) {
	s.mu.Lock()
	s.cps[cp.name] = cp
	s.mu.Unlock()
}

func (s *memSource) Manifest(_ context.Context, name string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cp := s.cps[name]
	if cp == nil {
		return nil, storage.ErrNotExist
	}
	return cp.encoded, nil
}

func (s *memSource) Open(ctx context.Context, name string, rank int, file string, off, n int64) (io.ReadCloser, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opens++
	if s.holdOpen != nil {
		s.holdOpen <- struct{}{}
		<-ctx.Done()
		return nil, fmt.Errorf("open state: %w", ctx.Err())
	}
	if s.failOpen != nil {
		return nil, s.failOpen
	}
	cp := s.cps[name]
	if cp == nil {
		return nil, storage.ErrNotExist
	}
	b, ok := cp.data[fmt.Sprintf("%d/%s", rank, file)]
	if !ok {
		return nil, storage.ErrNotExist
	}
	end := min(off+n, int64(len(b)))
	return io.NopCloser(bytes.NewReader(b[off:end])), nil
}

// startServer runs a server on a loopback port.
func startServer(t testing.TB, cfg Config) (*Server, string) {
	t.Helper()
	return serveAt(t, cfg, "127.0.0.1:0")
}

// serveAt runs a server listening on addr. A closed server may have used
// addr (its clients reconnect to this one): listening is retried while the
// port is still being released.
func serveAt(t testing.TB, cfg Config, addr string) (*Server, string) {
	t.Helper()
	if cfg.Token == "" {
		cfg.Token = "tok"
	}
	cfg.Logf = t.Logf
	s, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var ln net.Listener
	deadline := time.Now().Add(5 * time.Second)
	for {
		ln, err = net.Listen("tcp", addr)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			s.Close()
			t.Fatalf("listening on %s: %v", addr, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	go s.Serve(ln)
	t.Cleanup(func() { s.Close() })
	return s, ln.Addr().String()
}

// waitManifest waits for name's manifest on the shared tier: a client's
// Durable is its node's part only, and the server that commits writes
// the manifest after telling the node.
func waitManifest(t testing.TB, shared storage.Backend, name string) {
	t.Helper()
	waitFor(t, "the manifest of "+name, func() bool {
		ok, err := sharedtier.Exists(context.Background(), shared, name)
		return err == nil && ok
	})
}

func startClient(t testing.TB, addr, node string, src Source) *Client {
	t.Helper()
	c := NewClient(ClientConfig{Addr: addr, Token: "tok", Node: node, Source: src, Logf: t.Logf})
	t.Cleanup(func() { c.Close() })
	return c
}

// waitState waits until the client reports one of the states for name.
func waitState(t testing.TB, c *Client, name string, want ...State) State {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if st, _, ok := c.State(name); ok {
			for _, w := range want {
				if st == w {
					return st
				}
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	st, reason, ok := c.State(name)
	t.Fatalf("%s: state %v (%q, known %v), want one of %v", name, st, reason, ok, want)
	return 0
}

// checkShared asserts that the shared tier holds cp complete and exact.
func checkShared(t testing.TB, shared storage.Backend, cp *testCheckpoint) {
	t.Helper()
	ctx := context.Background()
	ok, err := sharedtier.Exists(ctx, shared, cp.name)
	if err != nil || !ok {
		t.Fatalf("%s: no manifest on the shared tier (%v)", cp.name, err)
	}
	for r := range cp.m.Ranks {
		got, err := storage.Load(ctx, shared, sharedtier.DataObject(cp.name, r))
		if err != nil {
			t.Fatalf("%s rank %d: %v", cp.name, r, err)
		}
		if !bytes.Equal(got, cp.object(r)) {
			t.Fatalf("%s rank %d: object of %d bytes differs from the cached files (%d bytes)", cp.name, r, len(got), len(cp.object(r)))
		}
	}
}

// checkAbsent asserts that cp does not exist on the shared tier.
func checkAbsent(t testing.TB, shared storage.Backend, name string) {
	t.Helper()
	ok, err := sharedtier.Exists(context.Background(), shared, name)
	if err != nil || ok {
		t.Fatalf("%s: exists on the shared tier (%v), want absent", name, err)
	}
}
