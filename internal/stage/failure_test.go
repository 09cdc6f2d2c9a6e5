package stage

import (
	"context"
	"errors"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/manifest"
	"github.com/ckpt/ckpt/internal/sharedtier"
	"github.com/ckpt/ckpt/internal/storage/local"
	"github.com/ckpt/ckpt/internal/storage/mem"
	"github.com/ckpt/ckpt/storage"
)

// The server is closed in the middle of a flush: nothing of it is
// visible; a new server on the same address and journal resumes it, the
// client reconnects on its own, and the flush completes exact.
func TestServerRestartMidFlush(t *testing.T) {
	for _, kind := range []string{"local", "mem"} {
		t.Run(kind, func(t *testing.T) {
			// open returns the journal as a process starting on it sees it.
			var open func() storage.Backend
			switch kind {
			case "local":
				dir := t.TempDir()
				open = func() storage.Backend {
					j, err := local.New(dir)
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { j.Close() })
					return j
				}
			case "mem":
				j := mem.New()
				open = func() storage.Backend { return j }
			}
			shared := mem.New()
			cp := makeCheckpoint(t, "ckpt.1", 1, 2, 1, []int{2 << 20, 12345}, 3)
			src := newHookSource(newSource(cp))
			srv1, addr := startServer(t, Config{Shared: shared, Journal: open(), ChunkSize: 32 << 10, Rate: 4 << 20})
			c := startClient(t, addr, "node0", src)
			if err := c.Announce(cp.name, cp.encoded, cp.ranks("node0")); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the first bytes pulled", func() bool { return srv1.Stats().BytesPulled > 0 })
			srv1.Close()
			checkAbsent(t, shared, cp.name)
			if st := srv1.Stats(); st.Failed != 0 || st.Committed != 0 || st.Durable != 0 {
				t.Fatalf("closing the server mid-flush: stats %+v, want nothing finished", st)
			}
			if st, reason, _ := c.State(cp.name); st != Pending {
				t.Fatalf("client reports %v (%s) after its server closed, want pending", st, reason)
			}

			srv2, _ := serveAt(t, Config{Shared: shared, Journal: open(), ChunkSize: 32 << 10}, addr)
			if p := srv2.Pending(); !slices.Equal(p, []string{cp.name}) {
				t.Fatalf("restarted server resumes %v, want [%s]", p, cp.name)
			}
			waitState(t, c, cp.name, Committed)
			checkShared(t, shared, cp)
			if st := srv2.Stats(); st.Committed != 1 || st.Failed != 0 {
				t.Errorf("restarted server: stats %+v, want one commit", st)
			}
			// The finished flush leaves nothing in the journal.
			if left := objects(t, open(), ""); len(left) != 0 {
				t.Errorf("journal still holds %v", left)
			}
		})
	}
}

// closeAfterRank0 flushes cp (ranks 0 and 1 of node0) through a server
// with one writer and a journal, and closes the server once rank 0 is
// durable (and journaled) and rank 1's pull has begun. The source's
// counts start again from zero.
func closeAfterRank0(t *testing.T, shared, journal storage.Backend, cp *testCheckpoint) (*hookSource, string, *Client) {
	t.Helper()
	src := newHookSource(newSource(cp))
	rank1 := make(chan struct{})
	var once sync.Once
	src.onOpen = func(name string, rank int, file string, off int64) {
		if rank == 1 {
			once.Do(func() { close(rank1) })
		}
	}
	srv, addr := startServer(t, Config{Shared: shared, Journal: journal, Writers: 1, ChunkSize: 32 << 10, Rate: 4 << 20})
	c := startClient(t, addr, "node0", src)
	if err := c.Announce(cp.name, cp.encoded, cp.ranks("node0")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-rank1:
	case <-time.After(guard):
		t.Fatal("rank 1 never pulled")
	}
	srv.Close()
	src.mu.Lock()
	src.onOpen = nil
	src.mu.Unlock()
	src.resetCounts()
	return src, addr, c
}

// Restarted after one rank's object is durable, the server pulls only the
// rest: the journal remembers what is durable.
func TestServerRestartKeepsDurableRanks(t *testing.T) {
	shared, journal := mem.New(), mem.New()
	cp := makeCheckpoint(t, "ckpt.2", 2, 2, 1, []int{1 << 20}, 4)
	src, addr, c := closeAfterRank0(t, shared, journal, cp)
	checkAbsent(t, shared, cp.name)
	if _, err := shared.Stat(context.Background(), sharedtier.DataObject(cp.name, 0)); err != nil {
		t.Fatalf("rank 0's object, durable before the close: %v", err)
	}

	srv2, _ := serveAt(t, Config{Shared: shared, Journal: journal, Writers: 1, ChunkSize: 32 << 10}, addr)
	waitState(t, c, cp.name, Committed)
	checkShared(t, shared, cp)
	if n := src.openCount(cp.name, 0); n != 0 {
		t.Errorf("the restarted server pulled rank 0 again (%d opens)", n)
	}
	if got, want := srv2.Stats().BytesPulled, int64(1<<20); got != want {
		t.Errorf("the restarted server pulled %d bytes, want rank 1's %d", got, want)
	}
}

// A rank's object commits just as the server closes: the task ends after
// the close. That must not fail the flush (and remove objects the journal
// records as durable): the next server completes it exact.
func TestServerClosedWhileObjectCommits(t *testing.T) {
	shared := &faultBackend{Backend: mem.New()}
	journal := mem.New()
	cp := makeCheckpoint(t, "ckpt.3", 3, 2, 1, []int{100000}, 5)
	committed := make(chan struct{})
	shared.set(faults{
		match: func(n string) bool { return n == sharedtier.DataObject(cp.name, 1) },
		afterCommit: func(ctx context.Context, _ string) {
			close(committed)
			<-ctx.Done() // the server is closing
		},
	})
	srv1, addr := startServer(t, Config{Shared: shared, Journal: journal, Writers: 1, ChunkSize: 8192})
	c := startClient(t, addr, "node0", newSource(cp))
	if err := c.Announce(cp.name, cp.encoded, cp.ranks("node0")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-committed:
	case <-time.After(guard):
		t.Fatal("rank 1 never committed")
	}
	srv1.Close()
	if st := srv1.Stats(); st.Failed != 0 {
		t.Errorf("closing the server failed the flush: stats %+v", st)
	}
	checkAbsent(t, shared, cp.name)
	shared.set(faults{})

	serveAt(t, Config{Shared: shared, Journal: journal, Writers: 1, ChunkSize: 8192}, addr)
	waitState(t, c, cp.name, Committed)
	checkShared(t, shared, cp)
}

// The client is closed in the middle of a flush: nothing is committed; a
// new client of the same node learns of the flush from the Welcome, adopts
// it and serves it to the end.
func TestClientRestartMidFlush(t *testing.T) {
	shared := mem.New()
	cp := makeCheckpoint(t, "ckpt.4", 4, 2, 1, []int{1 << 20, 1000}, 6)
	src := newSource(cp)
	srv, addr := startServer(t, Config{Shared: shared, ChunkSize: 32 << 10, Rate: 8 << 20})
	c1 := startClient(t, addr, "node0", src)
	if err := c1.Announce(cp.name, cp.encoded, cp.ranks("node0")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the first bytes pulled", func() bool { return srv.Stats().BytesPulled > 0 })
	c1.Close()
	checkAbsent(t, shared, cp.name)
	if st, _, _ := c1.State(cp.name); st != Pending {
		t.Fatalf("closed client reports %v, want pending", st)
	}
	if p := srv.Pending(); !slices.Equal(p, []string{cp.name}) {
		t.Fatalf("server pending %v after the client left, want [%s]", p, cp.name)
	}

	c2 := startClient(t, addr, "node0", src)
	waitState(t, c2, cp.name, Committed)
	checkShared(t, shared, cp)
	if st := srv.Stats(); st.Committed != 1 || st.Failed != 0 {
		t.Errorf("stats %+v, want one commit", st)
	}
}

// The node is lost with its cache (001 §V.C): its relaunched client has
// no copy of the pending checkpoint. The flush fails, nothing of it is
// visible, and the older checkpoint on the shared tier is intact.
func TestClientRestartCacheLost(t *testing.T) {
	shared := mem.New()
	old := makeCheckpoint(t, "ckpt.5", 5, 2, 1, []int{50000}, 7)
	cp := makeCheckpoint(t, "ckpt.6", 6, 2, 1, []int{1 << 20}, 8)
	var mu sync.Mutex
	var events []Event
	srv, addr := startServer(t, Config{Shared: shared, ChunkSize: 32 << 10, Rate: 8 << 20, OnDone: func(e Event) {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
	}})
	c1 := startClient(t, addr, "node0", newSource(old, cp))
	if err := c1.Announce(old.name, old.encoded, old.ranks("node0")); err != nil {
		t.Fatal(err)
	}
	waitState(t, c1, old.name, Committed)
	before := srv.Stats().BytesPulled
	if err := c1.Announce(cp.name, cp.encoded, cp.ranks("node0")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the first bytes pulled", func() bool { return srv.Stats().BytesPulled > before })
	c1.Close()

	c2 := startClient(t, addr, "node0", newSource())
	waitFor(t, "the flush to fail", func() bool { return srv.Stats().Failed == 1 })
	mu.Lock()
	last := events[len(events)-1]
	mu.Unlock()
	if last.Name != cp.name || last.State != Failed || !strings.Contains(last.Reason, "not announced") {
		t.Errorf("last event %+v, want %s failed as not served by the node", last, cp.name)
	}
	checkAbsent(t, shared, cp.name)
	checkShared(t, shared, old)
	if c2.Busy() {
		t.Errorf("the new client is busy with a flush it cannot serve")
	}
	if p := srv.Pending(); len(p) != 0 {
		t.Errorf("server still pending %v", p)
	}
	srv.Close()
	checkNothingOf(t, shared, cp.name)
	checkShared(t, shared, old)
}

// The shared tier fails under the flush: the flush fails with the tier's
// error as its reason, nothing of it is left on the tier, and the server
// goes on serving: once the fault is cleared, another flush succeeds.
func TestSharedTierFaults(t *testing.T) {
	data := func(name string) func(string) bool {
		return func(n string) bool { return strings.HasPrefix(n, name+"/rank-") }
	}
	errInjected := errors.New("injected fault")
	for _, tc := range []struct {
		name  string
		f     func(cp string) faults
		want  string
		stray bool // a stray marker of another server stays
	}{
		{"ENOSPC after 50000 bytes", func(cp string) faults {
			return faults{match: data(cp), writeErr: syscall.ENOSPC, failAfter: 50000}
		}, syscall.ENOSPC.Error(), false},
		{"ENOSPC at once", func(cp string) faults {
			return faults{match: data(cp), writeErr: syscall.ENOSPC}
		}, syscall.ENOSPC.Error(), false},
		{"EIO on commit", func(cp string) faults {
			return faults{match: data(cp), commitErr: syscall.EIO}
		}, syscall.EIO.Error(), false},
		{"create", func(cp string) faults {
			return faults{match: data(cp), createErr: errInjected}
		}, errInjected.Error(), false},
		{"marker", func(cp string) faults {
			return faults{match: func(n string) bool { return strings.HasPrefix(n, markerPrefix(cp)) }, commitErr: errInjected}
		}, errInjected.Error(), false},
		{"manifest", func(cp string) faults {
			return faults{match: func(n string) bool { return n == sharedtier.ManifestObject(cp) }, commitErr: syscall.ENOSPC}
		}, syscall.ENOSPC.Error(), false},
		{"corrupt marker", func(cp string) faults { return faults{} }, "malformed rank list", true},
		{"stale marker", func(cp string) faults { return faults{} }, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			shared := &faultBackend{Backend: mem.New()}
			cp := makeCheckpoint(t, "ckpt.7", 7, 4, 1, []int{100000, 3}, 9)
			next := makeCheckpoint(t, "ckpt.8", 8, 4, 1, []int{100000, 3}, 10)
			shared.set(tc.f(cp.name))
			if tc.stray {
				// A marker of another server: of this checkpoint, but
				// unreadable; or of an older checkpoint of the same name
				// (another manifest), which does not count for this one.
				text := manifest.ContentHashBytes(cp.encoded).String() + " garbage"
				if tc.want == "" {
					text = manifest.ContentHashBytes(next.encoded).String() + " [0 1 2 3]"
				}
				if _, err := storage.Save(context.Background(), shared, markerPrefix(cp.name)+"other", strings.NewReader(text)); err != nil {
					t.Fatal(err)
				}
			}
			srv, addr := startServer(t, Config{Shared: shared, Writers: 2, ChunkSize: 16 << 10})
			c := startClient(t, addr, "node0", newSource(cp, next))
			if err := c.Announce(cp.name, cp.encoded, cp.ranks("node0")); err != nil {
				t.Fatal(err)
			}
			if tc.want == "" {
				waitState(t, c, cp.name, Committed)
				checkShared(t, shared, cp)
				return
			}
			reason := waitFailed(t, c, cp.name)
			if !strings.Contains(reason, tc.want) {
				t.Errorf("reason %q does not name the fault %q", reason, tc.want)
			}
			checkAbsent(t, shared, cp.name)
			if st := srv.Stats(); st.Failed != 1 || st.Committed != 0 {
				t.Errorf("stats %+v, want one failure", st)
			}

			shared.set(faults{})
			if err := c.Announce(next.name, next.encoded, next.ranks("node0")); err != nil {
				t.Fatal(err)
			}
			waitState(t, c, next.name, Committed)
			checkShared(t, shared, next)
			srv.Close()
			if tc.stray {
				checkAbsent(t, shared, cp.name)
				if left := objects(t, shared, cp.name+"/"); !slices.Equal(left, []string{markerPrefix(cp.name) + "other"}) {
					t.Errorf("left on the tier: %v, want only the stray marker", left)
				}
			} else {
				checkNothingOf(t, shared, cp.name)
			}
			checkShared(t, shared, next)
		})
	}
}

// A real full disk: the local backend writing into /dev/full, where every
// write fails with ENOSPC from the kernel.
func TestSharedTierFullDevice(t *testing.T) {
	if f, err := os.OpenFile("/dev/full", os.O_WRONLY, 0); err != nil {
		t.Skipf("no /dev/full: %v", err)
	} else if _, err := f.Write([]byte{0}); !errors.Is(err, syscall.ENOSPC) {
		f.Close()
		t.Skipf("writing /dev/full: %v, not ENOSPC", err)
	} else {
		f.Close()
	}
	var full atomic.Bool
	full.Store(true)
	shared, err := local.New(t.TempDir(), local.WithoutSync(), local.WithHooks(local.Hooks{
		OpenTemp: func(path string) (*os.File, error) {
			if full.Load() && strings.Contains(path, "rank-") {
				return os.OpenFile("/dev/full", os.O_WRONLY, 0)
			}
			return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		},
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer shared.Close()
	cp := makeCheckpoint(t, "ckpt.9", 9, 2, 1, []int{200000}, 11)
	next := makeCheckpoint(t, "ckpt.10", 10, 2, 1, []int{200000}, 12)
	srv, addr := startServer(t, Config{Shared: shared, ChunkSize: 64 << 10})
	c := startClient(t, addr, "node0", newSource(cp, next))
	if err := c.Announce(cp.name, cp.encoded, cp.ranks("node0")); err != nil {
		t.Fatal(err)
	}
	if reason := waitFailed(t, c, cp.name); !strings.Contains(reason, syscall.ENOSPC.Error()) {
		t.Errorf("reason %q, want ENOSPC", reason)
	}
	checkAbsent(t, shared, cp.name)
	full.Store(false)
	if err := c.Announce(next.name, next.encoded, next.ranks("node0")); err != nil {
		t.Fatal(err)
	}
	waitState(t, c, next.name, Committed)
	checkShared(t, shared, next)
	srv.Close()
	checkNothingOf(t, shared, cp.name)
}

// The journal cannot be written: the flush fails (it could not survive a
// restart) and says why.
func TestJournalWriteFails(t *testing.T) {
	shared := mem.New()
	journal := &faultBackend{Backend: mem.New()}
	journal.set(faults{match: func(string) bool { return true }, createErr: syscall.EROFS})
	cp := makeCheckpoint(t, "ckpt.11", 11, 2, 1, []int{10000}, 13)
	next := makeCheckpoint(t, "ckpt.12", 12, 2, 1, []int{10000}, 14)
	_, addr := startServer(t, Config{Shared: shared, Journal: journal})
	c := startClient(t, addr, "node0", newSource(cp, next))
	c.Announce(cp.name, cp.encoded, cp.ranks("node0"))
	if reason := waitFailed(t, c, cp.name); !strings.Contains(reason, "journal") || !strings.Contains(reason, syscall.EROFS.Error()) {
		t.Errorf("reason %q, want the journal's EROFS", reason)
	}
	checkAbsent(t, shared, cp.name)
	journal.set(faults{})
	c.Announce(next.name, next.encoded, next.ranks("node0"))
	waitState(t, c, next.name, Committed)
	checkShared(t, shared, next)
}

// A rank's file changes under the transfer: the bytes the client sends do
// not hash to what the manifest says. The flush fails; nothing is visible.
func TestFileChangedUnderTransfer(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mangle func(b []byte) []byte
	}{
		{"rewritten", func(b []byte) []byte {
			b = append([]byte(nil), b...)
			b[100] ^= 0xff
			return b
		}},
		// The cache file shrank: the client promised Length bytes in the
		// Data header and has fewer to send.
		{"truncated", func(b []byte) []byte { return b[:len(b)-1000] }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			shared := mem.New()
			cp := makeCheckpoint(t, "ckpt.13", 13, 2, 1, []int{100000}, 15)
			next := makeCheckpoint(t, "ckpt.14", 14, 2, 1, []int{100000}, 16)
			src := newHookSource(newSource(cp, next))
			src.mangle = func(name string, rank int, file string, off int64, b []byte) []byte {
				if name == cp.name && rank == 1 && off == 16<<10 {
					return tc.mangle(b)
				}
				return b
			}
			srv, addr := startServer(t, Config{Shared: shared, ChunkSize: 16 << 10})
			c := startClient(t, addr, "node0", src)
			c.Announce(cp.name, cp.encoded, cp.ranks("node0"))
			if reason := waitFailed(t, c, cp.name); !strings.Contains(reason, "content hash") {
				t.Errorf("reason %q, want a content hash mismatch", reason)
			}
			checkAbsent(t, shared, cp.name)
			// The connection is still in step: the next flush goes through.
			c.Announce(next.name, next.encoded, next.ranks("node0"))
			waitState(t, c, next.name, Committed)
			checkShared(t, shared, next)
			srv.Close()
			checkNothingOf(t, shared, cp.name)
		})
	}
}

// The buffer bounds the chunks in memory, whatever Writers and Depth ask
// for: with a slow shared tier, pulls wait for a free buffer, and no more
// than Buffer bytes of buffers are ever taken. (A buffer smaller than
// Writers·Depth chunks must not deadlock the writers.)
func TestBufferFull(t *testing.T) {
	const chunk = 4096
	for _, chunks := range []int{1, 2, 3} {
		t.Run(strings.Repeat("c", chunks), func(t *testing.T) {
			shared := &faultBackend{Backend: mem.New()}
			shared.set(faults{match: func(n string) bool { return strings.Contains(n, "/rank-") }, writeDelay: 500 * time.Microsecond})
			cp := makeCheckpoint(t, "ckpt.15", 15, 4, 1, []int{16 * chunk, 1000}, 17)
			buffer := int64(chunks * chunk)
			srv, addr := startServer(t, Config{Shared: shared, Writers: 2, Depth: 2, ChunkSize: chunk, Buffer: buffer})
			c := startClient(t, addr, "node0", newSource(cp))
			c.Announce(cp.name, cp.encoded, cp.ranks("node0"))
			waitState(t, c, cp.name, Committed)
			checkShared(t, shared, cp)
			st := srv.Stats()
			if st.BufferFullWaits == 0 {
				t.Errorf("stats %+v: no pull waited for a buffer", st)
			}
			if st.PeakBuffered > buffer || st.PeakBuffered < chunk {
				t.Errorf("peak buffered %d bytes, buffer %d", st.PeakBuffered, buffer)
			}
		})
	}
}

// With Rate R, N bytes take at least (N − one chunk)/R: the limiter's
// burst is one chunk.
func TestRateLimit(t *testing.T) {
	const (
		rate  = 4 << 20
		chunk = 64 << 10
		n     = 1 << 20
	)
	cp := makeCheckpoint(t, "ckpt.16", 16, 2, 1, []int{n / 2}, 18)
	srv, addr := startServer(t, Config{Shared: mem.New(), ChunkSize: chunk, Rate: rate})
	c := startClient(t, addr, "node0", newSource(cp))
	start := time.Now()
	c.Announce(cp.name, cp.encoded, cp.ranks("node0"))
	waitState(t, c, cp.name, Committed)
	elapsed := time.Since(start)
	if low := time.Duration(float64(n-chunk) / rate * float64(time.Second)); elapsed < low*95/100 {
		t.Errorf("%d bytes at %d B/s in %v, want at least %v", n, rate, elapsed, low)
	}
	if got := srv.Stats().BytesPulled; got != n {
		t.Errorf("pulled %d bytes, want %d", got, n)
	}
}

// An announcement the server handles as it closes must not fail the
// flush: failing it would remove the objects of another node's part,
// which the journal records as durable, and the next server would commit
// a checkpoint without them.
func TestServerClosedDuringAnnounce(t *testing.T) {
	shared := &faultBackend{Backend: mem.New()}
	journal := mem.New()
	cp := makeCheckpoint(t, "ckpt.17", 17, 2, 2, []int{50000}, 19) // rank 0 on node0, 1 on node1
	srv1, addr := startServer(t, Config{Shared: shared, Journal: journal, ChunkSize: 8192})
	c0 := startClient(t, addr, "node0", newSource(cp))
	c0.Announce(cp.name, cp.encoded, cp.ranks("node0"))
	waitState(t, c0, cp.name, Durable)
	// node1's announcement stops at its first shared-tier call until the
	// server closes.
	announcing := make(chan struct{})
	var once sync.Once
	shared.set(faults{
		match: func(n string) bool { return n == sharedtier.ManifestObject(cp.name) },
		onLookup: func(ctx context.Context, _ string) {
			once.Do(func() { close(announcing) })
			<-ctx.Done()
		},
	})
	c1 := startClient(t, addr, "node1", newSource(cp))
	c1.Announce(cp.name, cp.encoded, cp.ranks("node1"))
	select {
	case <-announcing:
	case <-time.After(guard):
		t.Fatal("node1's announcement never reached the server")
	}
	srv1.Close()
	if st := srv1.Stats(); st.Failed != 0 {
		t.Errorf("closing the server failed the flush: stats %+v", st)
	}
	shared.set(faults{})
	checkAbsent(t, shared, cp.name)

	serveAt(t, Config{Shared: shared, Journal: journal, ChunkSize: 8192}, addr)
	waitState(t, c1, cp.name, Committed)
	checkShared(t, shared, cp)
}

// Close returns at once, even with a connection that never said Hello,
// and a client's Close with a server that never answers its Hello.
func TestCloseDuringHandshake(t *testing.T) {
	srv, addr := startServer(t, Config{Shared: mem.New()})
	p := dialPeer(t, addr)
	p.sendRaw([]byte{1, 0}) // half a header, then silence
	// A client dialled after p is welcomed: p was accepted before it.
	other := dialPeer(t, addr)
	other.hello("tok", "node0")
	closed := make(chan struct{})
	go func() {
		srv.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(guard / 2):
		t.Fatal("server Close waits for a client that never said Hello")
	}
	p.expectClosed("server closed")
	other.expectClosed("server closed")

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c := NewClient(ClientConfig{Addr: ln.Addr().String(), Token: "tok", Node: "node0", Source: newSource(), Logf: t.Logf})
	p = acceptPeer(t, ln)
	p.recv() // Hello; no answer
	closed = make(chan struct{})
	go func() {
		c.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(guard / 2):
		t.Fatal("client Close waits for a Welcome that never comes")
	}
	p.expectClosed("client closed")
}

// A checkpoint announced again under the same name with another manifest
// supersedes the pending one. The old flush's task still writing the same
// object must not remove or overwrite the new flush's object, and the old
// flush's failure must not be reported as the new one's.
func TestSupersede(t *testing.T) {
	shared := &faultBackend{Backend: mem.New()}
	old := makeCheckpoint(t, "ckpt.90", 90, 1, 1, []int{40000}, 90)
	cp := makeCheckpoint(t, "ckpt.90", 91, 2, 1, []int{40000}, 91) // same name, new content, one more rank
	// The old flush's commit of rank 0 stops until released.
	held, release := make(chan struct{}), make(chan struct{})
	var commits atomic.Int32
	shared.set(faults{
		match: func(n string) bool { return n == sharedtier.DataObject(cp.name, 0) },
		afterCommit: func(context.Context, string) {
			if commits.Add(1) == 1 {
				close(held)
				<-release
			}
		},
	})
	srv, addr := startServer(t, Config{Shared: shared, Writers: 2, ChunkSize: 8192})
	src := newSource(old)
	c := startClient(t, addr, "node0", src)
	c.Announce(old.name, old.encoded, old.ranks("node0"))
	select {
	case <-held:
	case <-time.After(guard):
		t.Fatal("the old flush never committed rank 0")
	}
	src.add(cp)
	c.Announce(cp.name, cp.encoded, cp.ranks("node0"))
	// Rank 1 is the new flush's alone; once it is durable, the new flush
	// had its chance at rank 0 too.
	waitFor(t, "the new flush's rank 1", func() bool {
		_, err := shared.Stat(context.Background(), sharedtier.DataObject(cp.name, 1))
		return err == nil
	})
	close(release)
	st := waitState(t, c, cp.name, Committed, Failed)
	if _, reason, _ := c.State(cp.name); st != Committed {
		t.Errorf("the new flush is reported %v (%s)", st, reason)
	}
	srv.Close() // every task ended
	checkShared(t, shared, cp)
	if st := srv.Stats(); st.Failed != 1 || st.Committed != 1 {
		t.Errorf("stats %+v, want the old flush failed and the new committed", st)
	}
}
