package transfer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/cachetier"
	"github.com/ckpt/ckpt/internal/engine"
	"github.com/ckpt/ckpt/internal/flush"
	"github.com/ckpt/ckpt/internal/group"
	"github.com/ckpt/ckpt/internal/manifest"
	"github.com/ckpt/ckpt/internal/redundancy"
	"github.com/ckpt/ckpt/internal/sharedtier"
	"github.com/ckpt/ckpt/internal/stage"
	"github.com/ckpt/ckpt/internal/storage/mem"
	"github.com/ckpt/ckpt/storage"
)

// The transfers' lifecycle, the same for both: a test builds a node's
// cache holding committed checkpoints, a shared tier it can make fail, and
// a transfer over them.

// node is one compute node's cache, a shared tier, and a rank's engine.
type node struct {
	cache  *mem.Backend
	shared *faulty
}

func newNode() *node { return &node{cache: mem.New(), shared: &faulty{Backend: mem.New()}} }

// commit writes checkpoint name of one rank on node0 into the cache, as
// the engine commits it: the files, then the manifest.
func (n *node) commit(t *testing.T, name string, id uint64, size int) {
	t.Helper()
	ctx := t.Context()
	rng := rand.New(rand.NewPCG(id, 7))
	p := manifest.Part{Rank: 0, Node: "node0", Set: 0}
	for i := range 3 {
		b := make([]byte, size)
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		fn := fmt.Sprintf("f%d", i)
		if _, err := storage.Save(ctx, n.cache, cachetier.FileObject(name, 0, fn), strings.NewReader(string(b))); err != nil {
			t.Fatal(err)
		}
		p.Files = append(p.Files, manifest.File{Rank: 0, Name: fn, Size: int64(size), Hash: manifest.ContentHashBytes(b)})
	}
	m, err := manifest.Merge([]manifest.Part{p}, manifest.Meta{Name: name, ID: id, Created: time.Unix(1700000000, 0).UTC(),
		Ranks: 1, Scheme: "single", SetSize: 1, Sets: [][]int{{0}}, Level: manifest.LevelCache})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := manifest.Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := storage.Save(ctx, n.cache, cachetier.ManifestObject(name), strings.NewReader(string(raw))); err != nil {
		t.Fatal(err)
	}
}

// Manifest and Open serve the cache to a staging client.
func (n *node) Manifest(ctx context.Context, name string) ([]byte, error) {
	return storage.Load(ctx, n.cache, cachetier.ManifestObject(name))
}

func (n *node) Open(ctx context.Context, name string, rank int, file string, offset, length int64) (io.ReadCloser, error) {
	return n.cache.Open(ctx, cachetier.FileObject(name, rank, file), offset, length)
}

// visible lists what the shared tier shows of checkpoint name.
func (n *node) visible(t *testing.T, name string) []string {
	t.Helper()
	var out []string
	err := n.shared.List(t.Context(), name, func(i storage.Info) error {
		out = append(out, i.Name)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// solo is the group of a job of one rank.
type solo struct{ group.Solo }

func (solo) SetTransport(context.Context, []int, uint64) (redundancy.Transport, io.Closer, error) {
	return nil, nil, errors.New("no redundancy sets in a job of one rank")
}

var errBoom = errors.New("disk full")

// faulty is a shared tier whose data objects can fail part-way, or be
// slow.
type faulty struct {
	storage.Backend
	mu        sync.Mutex
	failAfter int64         // > 0: a data object's writes fail after this many bytes
	delay     time.Duration // every write of a data object sleeps this long
}

func (b *faulty) set(failAfter int64, delay time.Duration) {
	b.mu.Lock()
	b.failAfter, b.delay = failAfter, delay
	b.mu.Unlock()
}

func (b *faulty) Unwrap() storage.Backend { return b.Backend }

func (b *faulty) Create(ctx context.Context, name string) (storage.Writer, error) {
	w, err := b.Backend.Create(ctx, name)
	if err != nil || !strings.HasSuffix(name, ".data") {
		return w, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return &faultyWriter{Writer: w, failAfter: b.failAfter, delay: b.delay}, nil
}

type faultyWriter struct {
	storage.Writer
	failAfter, n int64
	delay        time.Duration
}

func (w *faultyWriter) Write(p []byte) (int, error) {
	time.Sleep(w.delay)
	if w.failAfter > 0 && w.n+int64(len(p)) > w.failAfter {
		return 0, errBoom
	}
	w.n += int64(len(p))
	return w.Writer.Write(p)
}

// kind makes one implementation over a node.
type kind struct {
	name string
	make func(t *testing.T, n *node) flush.Transfer
}

func blockingKind(t *testing.T, n *node) flush.Transfer {
	return NewBlocking(engine.New(engine.Config{Rank: 0, Size: 1, Node: "node0", Cache: n.cache, Shared: n.shared, Comm: solo{}}))
}

// startServer runs a staging server for the node's shared tier at addr
// ("127.0.0.1:0": any), retrying while a closed server's port is released.
func startServer(t *testing.T, n *node, journal storage.Backend, addr string) (*stage.Server, string) {
	t.Helper()
	srv, err := stage.NewServer(stage.Config{Shared: n.shared, Journal: journal, Token: "tok", ChunkSize: 4096, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	var ln net.Listener
	deadline := time.Now().Add(5 * time.Second)
	for {
		if ln, err = net.Listen("tcp", addr); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("listening on %s: %v", addr, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return srv, ln.Addr().String()
}

func stagedAt(t *testing.T, n *node, addr string) *Staged {
	t.Helper()
	raw, err := n.Manifest(t.Context(), "c1")
	if err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	s := NewStaged(StagedConfig{Addrs: []string{addr}, Token: "tok", Node: "node0", Source: n, Logf: t.Logf}, m)
	t.Cleanup(func() { s.Cancel() })
	return s
}

func stagedKind(t *testing.T, n *node) flush.Transfer {
	_, addr := startServer(t, n, nil, "127.0.0.1:0")
	return stagedAt(t, n, addr)
}

var kinds = []kind{{"blocking", blockingKind}, {"staged", stagedKind}}

// waitEnd waits for the transfer to be idle and returns name's state.
func waitEnd(t *testing.T, tr flush.Transfer, name string) (flush.State, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if err := tr.Wait(ctx); err != nil {
		t.Fatalf("wait: %v", err)
	}
	if tr.Busy() {
		t.Fatal("busy after Wait")
	}
	st, reason, ok := tr.State(name)
	if !ok {
		t.Fatalf("%s: no state after it started", name)
	}
	return st, reason
}

// waitCommitted waits until the shared tier holds checkpoint name (a
// staging server tells a node its part is durable before it writes the
// manifest).
func waitCommitted(t *testing.T, n *node, name string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ok, err := sharedtier.Exists(t.Context(), n.shared, name)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never committed on the shared tier: %v", name, n.visible(t, name))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Start, State, Wait: a flush reaches the shared tier, whole, and the
// transfer says so; names never started have no state.
func TestLifecycle(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			n := newNode()
			n.commit(t, "c1", 1, 10000)
			n.commit(t, "c2", 2, 10000)
			tr := k.make(t, n)
			if _, _, ok := tr.State("c1"); ok {
				t.Error("a state for a flush never started")
			}
			for _, name := range []string{"c1", "c2"} {
				if err := tr.Start(t.Context(), name); err != nil {
					t.Fatalf("start %s: %v", name, err)
				}
				st, reason := waitEnd(t, tr, name)
				if st != flush.Durable && st != flush.Committed {
					t.Fatalf("%s: %v (%s), want durable or committed", name, st, reason)
				}
				if _, ok := tr.Latency(name); !ok {
					t.Errorf("%s: no latency once finished", name)
				}
				waitCommitted(t, n, name)
				m, err := cachetier.Load(t.Context(), n.cache, name)
				if err != nil {
					t.Fatal(err)
				}
				if ok, err := sharedtier.Holds(t.Context(), n.shared, m); err != nil || !ok {
					t.Errorf("%s: the shared tier does not hold it (%v)", name, err)
				}
			}
			// Cancel and Resume leave a finished transfer usable.
			if err := tr.Cancel(); err != nil {
				t.Fatal(err)
			}
			if err := tr.Resume(t.Context()); err != nil {
				t.Fatal(err)
			}
			n.commit(t, "c3", 3, 1000)
			if err := tr.Start(t.Context(), "c3"); err != nil {
				t.Fatalf("start after resume: %v", err)
			}
			if st, reason := waitEnd(t, tr, "c3"); st == flush.Failed || st == flush.Pending {
				t.Fatalf("c3 after resume: %v (%s)", st, reason)
			}
			waitCommitted(t, n, "c3")
		})
	}
}

// The shared tier fails mid-copy: the flush ends Failed, with the tier's
// reason, and nothing of the checkpoint is visible on the tier; the next
// flush, the tier healed, goes through.
func TestSharedTierFailsMidCopy(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			n := newNode()
			n.commit(t, "c1", 1, 20000)
			n.commit(t, "c2", 2, 20000)
			tr := k.make(t, n)
			n.shared.set(15000, 0) // part of the first file lands, then the disk fills
			err := tr.Start(t.Context(), "c1")
			if _, blocking := tr.(*Blocking); blocking != (err != nil) {
				t.Errorf("start: %v (a blocking transfer reports the copy's failure, a staged one its start)", err)
			}
			st, reason := waitEnd(t, tr, "c1")
			if st != flush.Failed || !strings.Contains(reason, errBoom.Error()) {
				t.Fatalf("c1: %v (%q), want failed naming %q", st, reason, errBoom)
			}
			if v := n.visible(t, "c1"); len(v) != 0 {
				t.Errorf("a failed flush left %v on the shared tier", v)
			}
			n.shared.set(0, 0)
			if err := tr.Start(t.Context(), "c2"); err != nil {
				t.Fatalf("start c2: %v", err)
			}
			if st, reason := waitEnd(t, tr, "c2"); st == flush.Failed {
				t.Fatalf("c2: failed (%s)", reason)
			}
			waitCommitted(t, n, "c2")
		})
	}
}

// The staging server stops mid-pull. The flush stays Pending, not Failed:
// the staging service's contract is that a flush survives a restart of
// its server (its journal keeps it). Nothing is visible on the shared tier
// meanwhile; a server restarted on the same journal finishes it. Cancel
// and Resume go the same way: a client of the node connecting again takes
// the flush up where the journal left it.
func TestStagedServerStopsMidPull(t *testing.T) {
	n := newNode()
	n.commit(t, "c1", 1, 60000)
	journal := mem.New()
	srv, addr := startServer(t, n, journal, "127.0.0.1:0")
	s := stagedAt(t, n, addr)
	n.shared.set(0, 20*time.Millisecond) // a slow tier: the pull is under way a while
	if err := s.Start(t.Context(), "c1"); err != nil {
		t.Fatal(err)
	}
	// Stop it once some bytes, not all, are pulled.
	for deadline := time.Now().Add(20 * time.Second); srv.Stats().BytesPulled == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the server never pulled a byte")
		}
	}
	srv.Close()
	if st := srv.Stats(); st.BytesWritten >= 3*60000 || st.Committed != 0 {
		t.Fatalf("the pull was over before the server stopped: %+v", st)
	}
	if st, _, ok := s.State("c1"); !ok || st != flush.Pending || !s.Busy() || !s.Pinned("c1") {
		t.Fatalf("server stopped mid-pull: %v (known %v, busy %v): want pending, pinned", st, ok, s.Busy())
	}
	if v := n.visible(t, "c1"); len(v) != 0 {
		t.Errorf("an unfinished flush shows %v on the shared tier", v)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	if err := s.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("wait with the server gone: %v, want the deadline", err)
	}
	cancel()
	// Cancel while it is gone; resume once it is back on its journal.
	if err := s.Cancel(); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(t.Context(), "c1"); err == nil {
		t.Error("a cancelled transfer started a flush")
	}
	n.shared.set(0, 0)
	startServer(t, n, journal, addr)
	if err := s.Resume(t.Context()); err != nil {
		t.Fatal(err)
	}
	waitCommitted(t, n, "c1")
	m, err := cachetier.Load(t.Context(), n.cache, "c1")
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := sharedtier.Holds(t.Context(), n.shared, m); err != nil || !ok {
		t.Errorf("resumed flush: the shared tier does not hold c1 (%v)", err)
	}
}
