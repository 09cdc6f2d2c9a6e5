package stage

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ckpt/ckpt/storage"
)

// Fixtures of the failure tests: a backend and a source that inject
// faults, a fake peer speaking the protocol over raw TCP, and waits.

// guard bounds every wait of these tests; it is never an assertion.
const guard = 20 * time.Second

// waitFor polls cond until it holds.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(guard)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// waitReason waits for the client to report name Failed and returns the
// reason.
func waitFailed(t testing.TB, c *Client, name string) string {
	t.Helper()
	waitState(t, c, name, Failed)
	_, reason, _ := c.State(name)
	return reason
}

// objects lists the names under prefix.
func objects(t testing.TB, b storage.Backend, prefix string) []string {
	t.Helper()
	var names []string
	if err := b.List(context.Background(), prefix, func(i storage.Info) error {
		names = append(names, i.Name)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return names
}

// checkNothingOf asserts that the tier holds nothing of checkpoint name:
// no manifest, no data object, no marker. Call it once no task of the
// server can still run (after Close), or tasks abandoned half way may yet
// commit and remove their objects.
func checkNothingOf(t testing.TB, b storage.Backend, name string) {
	t.Helper()
	checkAbsent(t, b, name)
	if left := objects(t, b, name+"/"); len(left) > 0 {
		t.Fatalf("%s: the failed flush left %v on the shared tier", name, left)
	}
}

// faultBackend wraps a backend and injects faults into the writers of
// the objects that match. The faults in effect when an object is created
// apply to it.
type faultBackend struct {
	storage.Backend
	mu sync.Mutex
	f  faults
}

type faults struct {
	match      func(name string) bool // nil: no object
	createErr  error                  // Create fails
	writeErr   error                  // Write fails once failAfter bytes are written
	failAfter  int64                  //
	commitErr  error                  // Commit fails (the object is discarded)
	writeDelay time.Duration          // every Write sleeps this long: a slow tier
	// afterCommit, if set, runs after the object is committed, before
	// Commit returns; ctx is the one the object was created with.
	afterCommit func(ctx context.Context, name string)
	// onLookup, if set, runs before a Stat or an Open of a matching
	// object.
	onLookup func(ctx context.Context, name string)
}

var _ storage.Backend = (*faultBackend)(nil)

func (b *faultBackend) set(f faults) {
	b.mu.Lock()
	b.f = f
	b.mu.Unlock()
}

func (b *faultBackend) Unwrap() storage.Backend { return b.Backend }

func (b *faultBackend) Create(ctx context.Context, name string) (storage.Writer, error) {
	b.mu.Lock()
	f := b.f
	b.mu.Unlock()
	if f.match == nil || !f.match(name) {
		return b.Backend.Create(ctx, name)
	}
	if f.createErr != nil {
		return nil, &storage.Error{Op: "create", Name: name, Err: f.createErr}
	}
	w, err := b.Backend.Create(ctx, name)
	if err != nil {
		return nil, err
	}
	return &faultWriter{Writer: w, f: f, ctx: ctx, name: name}, nil
}

func (b *faultBackend) lookup(ctx context.Context, name string) {
	b.mu.Lock()
	f := b.f
	b.mu.Unlock()
	if f.onLookup != nil && f.match != nil && f.match(name) {
		f.onLookup(ctx, name)
	}
}

func (b *faultBackend) Stat(ctx context.Context, name string) (storage.Info, error) {
	b.lookup(ctx, name)
	return b.Backend.Stat(ctx, name)
}

func (b *faultBackend) Open(ctx context.Context, name string, offset, length int64) (io.ReadCloser, error) {
	b.lookup(ctx, name)
	return b.Backend.Open(ctx, name, offset, length)
}

type faultWriter struct {
	storage.Writer
	f       faults
	ctx     context.Context
	name    string
	written int64
	err     error
}

func (w *faultWriter) Write(p []byte) (int, error) {
	if w.f.writeDelay > 0 {
		time.Sleep(w.f.writeDelay)
	}
	if w.err != nil {
		return 0, w.err
	}
	if w.f.writeErr != nil && w.written+int64(len(p)) > w.f.failAfter {
		n, _ := w.Writer.Write(p[:w.f.failAfter-w.written])
		w.written += int64(n)
		w.err = &storage.Error{Op: "write", Name: w.name, Err: w.f.writeErr}
		return n, w.err
	}
	n, err := w.Writer.Write(p)
	w.written += int64(n)
	return n, err
}

func (w *faultWriter) Commit() error {
	if w.err != nil {
		w.Writer.Abort()
		return w.err
	}
	if w.f.commitErr != nil {
		w.Writer.Abort()
		return &storage.Error{Op: "commit", Name: w.name, Err: w.f.commitErr}
	}
	if err := w.Writer.Commit(); err != nil {
		return err
	}
	if w.f.afterCommit != nil {
		w.f.afterCommit(w.ctx, w.name)
	}
	return nil
}

// hookSource wraps a Source: it counts opens per checkpoint and rank, and
// may rewrite the bytes it returns (a file changing under the transfer).
type hookSource struct {
	Source
	mu     sync.Mutex
	opens  map[string]map[int]int
	onOpen func(name string, rank int, file string, off int64)
	mangle func(name string, rank int, file string, off int64, b []byte) []byte
}

func newHookSource(src Source) *hookSource {
	return &hookSource{Source: src, opens: map[string]map[int]int{}}
}

func (s *hookSource) Open(ctx context.Context, name string, rank int, file string, off, n int64) (io.ReadCloser, error) {
	s.mu.Lock()
	if s.opens[name] == nil {
		s.opens[name] = map[int]int{}
	}
	s.opens[name][rank]++
	onOpen, mangle := s.onOpen, s.mangle
	s.mu.Unlock()
	if onOpen != nil {
		onOpen(name, rank, file, off)
	}
	r, err := s.Source.Open(ctx, name, rank, file, off, n)
	if err != nil || mangle == nil {
		return r, err
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	return io.NopCloser(bytes.NewReader(mangle(name, rank, file, off, b))), nil
}

func (s *hookSource) openCount(name string, rank int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.opens[name][rank]
}

func (s *hookSource) resetCounts() {
	s.mu.Lock()
	s.opens = map[string]map[int]int{}
	s.mu.Unlock()
}

// peer is one end of a raw protocol connection, played by the test: a
// fake server to a real client or a fake client to a real server.
type peer struct {
	t  testing.TB
	nc net.Conn
	br *bufio.Reader
}

func newPeer(t testing.TB, nc net.Conn) *peer {
	t.Cleanup(func() { nc.Close() })
	return &peer{t: t, nc: nc, br: bufio.NewReader(nc)}
}

func dialPeer(t testing.TB, addr string) *peer {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, guard)
	if err != nil {
		t.Fatal(err)
	}
	return newPeer(t, nc)
}

func acceptPeer(t testing.TB, ln net.Listener) *peer {
	t.Helper()
	type result struct {
		nc  net.Conn
		err error
	}
	ch := make(chan result, 1)
	go func() {
		nc, err := ln.Accept()
		ch <- result{nc, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatal(r.err)
		}
		return newPeer(t, r.nc)
	case <-time.After(guard):
		ln.Close()
		t.Fatal("timed out waiting for the client to connect")
	}
	return nil
}

func (p *peer) send(m Msg) {
	p.t.Helper()
	p.sendRaw(Append(nil, m))
}

func (p *peer) sendRaw(b []byte) {
	p.t.Helper()
	p.nc.SetWriteDeadline(time.Now().Add(guard))
	if _, err := p.nc.Write(b); err != nil {
		p.t.Fatalf("peer write: %v", err)
	}
}

// recv reads the next frame.
func (p *peer) recv() Msg {
	p.t.Helper()
	p.nc.SetReadDeadline(time.Now().Add(guard))
	m, err := ReadMsg(p.br)
	if err != nil {
		p.t.Fatalf("peer read: %v", err)
	}
	return m
}

// recvData reads the raw bytes that follow a Data frame.
func (p *peer) recvData(n int) []byte {
	p.t.Helper()
	b := make([]byte, n)
	p.nc.SetReadDeadline(time.Now().Add(guard))
	if _, err := io.ReadFull(p.br, b); err != nil {
		p.t.Fatalf("peer read of %d data bytes: %v", n, err)
	}
	return b
}

// recvPulls reads until n Pulls came, skipping other frames.
func (p *peer) recvPulls(n int) []*Pull {
	p.t.Helper()
	var pulls []*Pull
	for len(pulls) < n {
		if m, ok := p.recv().(*Pull); ok {
			pulls = append(pulls, m)
		}
	}
	return pulls
}

// expectClosed reads until the other end closes the connection, skipping
// the frames (and Data bytes) it sends meanwhile; it fails the test if
// the connection stays open.
func (p *peer) expectClosed(why string) {
	p.t.Helper()
	p.nc.SetReadDeadline(time.Now().Add(guard))
	for {
		m, err := ReadMsg(p.br)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				p.t.Fatalf("%s: the connection stayed open", why)
			}
			return // EOF or reset: closed
		}
		if d, ok := m.(*Data); ok {
			if _, err := io.CopyN(io.Discard, p.br, int64(d.Length)); err != nil {
				return
			}
		}
	}
}

// hello opens a fake client's session and returns the Welcome.
func (p *peer) hello(token, node string) *Welcome {
	p.t.Helper()
	p.send(&Hello{Version: Version, Token: token, Node: node})
	m := p.recv()
	w, ok := m.(*Welcome)
	if !ok {
		p.t.Fatalf("hello as %q: got %s %+v, want Welcome", node, m.Type(), m)
	}
	return w
}

// expectPullError reads the answer to pull id and requires a PullError
// whose reason holds want.
func (p *peer) expectPullError(id uint64, want string) {
	p.t.Helper()
	m := p.recv()
	pe, ok := m.(*PullError)
	if !ok || pe.ID != id || !strings.Contains(pe.Reason, want) {
		p.t.Fatalf("answer to pull %d: %s %+v, want a PullError saying %q", id, m.Type(), m, want)
	}
}
