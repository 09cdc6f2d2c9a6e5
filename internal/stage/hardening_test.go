package stage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/sharedtier"
	"github.com/ckpt/ckpt/internal/storage/mem"
	"github.com/ckpt/ckpt/storage"
)

// A peer that has not shown the job's token cannot make the server hold a
// large buffer: a first frame claiming the size of an Announce is refused
// before it is read, and the connection dropped.
func TestHandshakeFrameIsSmall(t *testing.T) {
	_, addr := startServer(t, Config{Shared: mem.New()})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	const conns = 8
	for range conns {
		p := dialPeer(t, addr)
		p.sendRaw(frame(TAnnounce, MaxManifest+MaxFrame, []byte{0}))
		p.expectClosed("a first frame of 64 MiB")
	}
	runtime.ReadMemStats(&after)
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 16<<20 {
		t.Errorf("%d unauthenticated peers made the server hold %d MiB", conns, grew>>20)
	}
}

// failRemove is a journal whose Remove fails.
type failRemove struct{ storage.Backend }

func (failRemove) Remove(context.Context, string) error { return syscall.EIO }

// A flush fails after its objects are durable (its marker cannot be
// written), and its journal record cannot be dropped: the objects stay
// for the record, and the restarted server commits the checkpoint whole,
// never a manifest without its objects.
func TestFailedFlushRecordOutlivesIt(t *testing.T) {
	shared := &faultBackend{Backend: mem.New()}
	journal := failRemove{mem.New()}
	cp := makeCheckpoint(t, "ckpt.5", 5, 2, 1, []int{20000}, 5)
	shared.set(faults{match: func(n string) bool { return strings.Contains(n, "/staged-") }, createErr: syscall.ENOSPC})
	srv1, addr := startServer(t, Config{Shared: shared, Journal: journal, ChunkSize: 8192})
	c := startClient(t, addr, "node0", newSource(cp))
	c.Announce(cp.name, cp.encoded, cp.ranks("node0"))
	waitFailed(t, c, cp.name)
	c.Close()
	srv1.Close()
	checkAbsent(t, shared, cp.name)
	shared.set(faults{}) // room on the disk again
	serveAt(t, Config{Shared: shared, Journal: journal, ChunkSize: 8192}, addr)
	waitManifest(t, shared, cp.name)
	checkShared(t, shared, cp)
}

// A record that outlived an object removed meanwhile (someone else's
// cleaning, a crash between removing objects and dropping the record):
// the restarted server pulls that rank again rather than trusting the
// record, and commits the checkpoint whole.
func TestJournalRecordWithoutObjects(t *testing.T) {
	shared, journal := mem.New(), mem.New()
	cp := makeCheckpoint(t, "ckpt.6", 6, 2, 1, []int{1 << 20}, 6)
	src, addr, c := closeAfterRank0(t, shared, journal, cp)
	if err := shared.Remove(context.Background(), sharedtier.DataObject(cp.name, 0)); err != nil {
		t.Fatalf("rank 0's object, durable before the close: %v", err)
	}
	serveAt(t, Config{Shared: shared, Journal: journal, Writers: 1, ChunkSize: 32 << 10}, addr)
	waitState(t, c, cp.name, Committed)
	checkShared(t, shared, cp)
	if n := src.openCount(cp.name, 0); n == 0 {
		t.Error("the restarted server trusted the record: rank 0 was not pulled again")
	}
}

// Reasons of any length reach the other side (cut to the protocol's
// longest string): a client error of 5000 bytes fails the flush once,
// not in a loop of reconnections.
func TestLongReasons(t *testing.T) {
	for _, n := range []int{4060, 5000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			cp := makeCheckpoint(t, "ckpt.3", 3, 1, 1, []int{1000}, 3)
			srv, addr := startServer(t, Config{Shared: mem.New()})
			src := newSource(cp)
			src.failOpen = errors.New(strings.Repeat("é", n/2))
			c := startClient(t, addr, "node0", src)
			c.Announce(cp.name, cp.encoded, cp.ranks("node0"))
			reason := waitFailed(t, c, cp.name)
			if !strings.HasSuffix(reason, " [...]") || len(reason) > maxString || !strings.Contains(reason, "éé") {
				t.Errorf("reason of %d bytes ends %q: want it cut to %d bytes, marked", len(reason), reason[max(0, len(reason)-20):], maxString)
			}
			if st := srv.Stats(); st.Failed != 1 {
				t.Errorf("the flush failed %d times, want once", st.Failed)
			}
		})
	}
	if got := clip(strings.Repeat("é", 3000)); len(got) > maxString || !strings.HasSuffix(got, " [...]") || !strings.HasPrefix(got, "éé") {
		t.Errorf("clip of 6000 bytes: %d bytes", len(got))
	}
}

// pipeListener hands the server the ends of net.Pipes: connections whose
// peer accepts no byte it does not read.
type pipeListener struct{ ch chan net.Conn }

func (l pipeListener) Accept() (net.Conn, error) {
	nc, ok := <-l.ch
	if !ok {
		return nil, net.ErrClosed
	}
	return nc, nil
}
func (l pipeListener) Close() error   { return nil }
func (l pipeListener) Addr() net.Addr { return &net.TCPAddr{} }

// A client that stops reading holds up only itself: the server's status
// frames to it wait in its queue, not under the server's lock.
func TestClientNotReading(t *testing.T) {
	cp := makeCheckpoint(t, "ckpt.4", 4, 1, 1, []int{100}, 4)
	srv, err := NewServer(Config{Shared: mem.New(), Token: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ln := pipeListener{make(chan net.Conn, 1)}
	go srv.Serve(ln)
	server, client := net.Pipe()
	ln.ch <- server
	p := newPeer(t, client)
	p.hello("tok", "node0")
	// No ranks: the node's part is durable at once, and the server tells
	// it, to a peer that never reads.
	p.send(&Announce{Name: cp.name, Manifest: cp.encoded})
	time.Sleep(100 * time.Millisecond)
	done := make(chan struct{})
	go func() { srv.Stats(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("Stats blocked behind a send to a client that does not read")
	}
}

// A marker left by an older checkpoint of the same name, on another
// server, does not count for the new one: the new checkpoint is committed
// only once each of its own parts is durable, with its own bytes.
func TestStaleMarkerOfOtherServer(t *testing.T) {
	ctx := context.Background()
	shared := mem.New()
	old := makeCheckpoint(t, "step", 10, 2, 2, []int{5000}, 10) // rank 0 on node0, 1 on node1
	cp := makeCheckpoint(t, "step", 11, 2, 2, []int{5000}, 11)  // same name, new content
	_, addrA := startServer(t, Config{Shared: shared, ChunkSize: 1024})
	_, addrB := startServer(t, Config{Shared: shared, ChunkSize: 1024})
	// The old flush: node1's part durable on B; node0's cache lost on A.
	src1 := newSource(old)
	c1 := startClient(t, addrB, "node1", src1)
	c1.Announce(old.name, old.encoded, old.ranks("node1"))
	waitState(t, c1, old.name, Durable)
	src0 := newSource()
	c0 := startClient(t, addrA, "node0", src0)
	c0.Announce(old.name, old.encoded, old.ranks("node0"))
	waitFailed(t, c0, old.name)
	// The new one: node0 first.
	src0.add(cp)
	c0.Announce(cp.name, cp.encoded, cp.ranks("node0"))
	waitState(t, c0, cp.name, Durable)
	time.Sleep(50 * time.Millisecond)
	checkAbsent(t, shared, cp.name)
	src1.add(cp)
	c1.Announce(cp.name, cp.encoded, cp.ranks("node1"))
	waitManifest(t, shared, cp.name)
	checkShared(t, shared, cp)
	if got, err := storage.Load(ctx, shared, sharedtier.DataObject(cp.name, 1)); err != nil || !bytes.Equal(got, cp.object(1)) {
		t.Errorf("rank 1's object is not the new checkpoint's (%v)", err)
	}
}

// A checkpoint of the same name but other content committed on the tier
// is not replaced by a flush, nor taken for it: the flush fails, saying
// why, and the checkpoint stays at level 1.
func TestNameTakenOnTier(t *testing.T) {
	shared := mem.New()
	old := makeCheckpoint(t, "step", 10, 1, 1, []int{5000}, 10)
	cp := makeCheckpoint(t, "step", 11, 1, 1, []int{5000}, 11)
	_, addr := startServer(t, Config{Shared: shared, ChunkSize: 1024})
	c := startClient(t, addr, "node0", newSource(old))
	c.Announce(old.name, old.encoded, old.ranks("node0"))
	waitState(t, c, old.name, Committed)
	c.Close()
	c2 := startClient(t, addr, "node0", newSource(cp)) // the node's relaunched client
	c2.Announce(cp.name, cp.encoded, cp.ranks("node0"))
	if reason := waitFailed(t, c2, cp.name); !strings.Contains(reason, "another checkpoint of this name") {
		t.Errorf("reason %q", reason)
	}
	checkShared(t, shared, old)
}

// More flushes pending for a node than a small frame holds: the Welcome
// carries them all the same, and the node's client gets past it.
func TestLargeWelcome(t *testing.T) {
	_, addr := startServer(t, Config{Shared: mem.New(), PullTimeout: time.Hour})
	p := dialPeer(t, addr)
	p.hello("tok", "node0")
	for i := range 300 {
		name := fmt.Sprintf("%s.%d", strings.Repeat("c", 240), i)
		cp := makeCheckpoint(t, name, uint64(i+1), 1, 1, []int{10}, 1)
		p.send(&Announce{Name: cp.name, Manifest: cp.encoded, Ranks: []int{0}})
	}
	p.nc.Close() // the node goes; its flushes stay pending
	cp := makeCheckpoint(t, "ckpt.1", 1000, 1, 1, []int{10}, 1)
	c := startClient(t, addr, "node0", newSource(cp))
	c.Announce(cp.name, cp.encoded, cp.ranks("node0"))
	waitState(t, c, cp.name, Committed)
}
