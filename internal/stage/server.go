package stage

import (
	"bufio"
	"context"
	"crypto/subtle"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/ckpt/ckpt/internal/manifest"
	"github.com/ckpt/ckpt/internal/sharedtier"
	"github.com/ckpt/ckpt/internal/tcp"
	"github.com/ckpt/ckpt/storage"
)

// DefaultHelloTimeout is Config.HelloTimeout's default (ckpt stage's):
// the hostile client (internal/hostile) waits this long for a silent
// client to be dropped.
const DefaultHelloTimeout = 30 * time.Second

// Config configures a staging server. Zero fields take their defaults.
type Config struct {
	// Shared is the shared tier the server writes to.
	Shared storage.Backend
	// Journal keeps the server's pending flushes, so that they resume after
	// the server restarts (nil: kept in memory only).
	Journal storage.Backend
	// Token is the job's token; a client must present it.
	Token string
	// Name is the server's name in Welcome and logs.
	Name string
	// Writers is W, the shared-tier objects written concurrently (001's
	// data writer threads; default WritersFor(Shared)).
	Writers int
	// ChunkSize is the bytes one Pull asks for (default 4 MiB).
	ChunkSize int
	// Depth is the chunks one transfer keeps in flight: 2 is
	// double-buffering, the default (one chunk travels while the previous
	// one is written).
	Depth int
	// Buffer bounds the bytes of all chunk buffers together (default
	// Writers·Depth·ChunkSize). When every buffer is taken, the server
	// stops pulling until a write frees one.
	Buffer int64
	// Rate bounds the bytes per second the server pulls from compute
	// nodes, and so its interference with the application (0: no bound).
	Rate float64
	// Keep is the number of checkpoints kept on the shared tier (0: all).
	Keep int
	// PullTimeout: a client that does not answer a Pull this long is
	// dropped (default 60s).
	PullTimeout time.Duration
	// HelloTimeout: a connection that has not sent its Hello this long
	// after it was accepted is dropped (default DefaultHelloTimeout), so
	// that clients that connect and say nothing, or trickle bytes, hold
	// no server resources for longer.
	HelloTimeout time.Duration
	// TLS, if set, is the job's server TLS configuration
	// (jobtls.Config.Server): every connection is TLS, and a client must
	// present the job's certificate before its Hello is read. nil: plain
	// TCP.
	TLS *tls.Config
	// Logf, if set, receives one line per notable event.
	Logf func(format string, args ...any)
	// OnDone, if set, is called once per flush the server finishes,
	// committed (this server wrote the manifest), durable (its part done,
	// another server committed or will) or failed.
	OnDone func(Event)
}

// Event reports the end of a flush on this server.
type Event struct {
	Name    string
	State   State   // Durable, Committed or Failed
	Bytes   int64   // bytes this server pulled and wrote for it
	Seconds float64 // from its first announcement to its end
	Reason  string  // for Failed
}

// Stats are a server's running totals.
type Stats struct {
	BytesPulled     int64
	BytesWritten    int64
	Committed       int // flushes whose manifest this server wrote
	Durable         int // flushes whose share this server made durable
	Failed          int
	BufferFullWaits int           // times a pull waited for a free buffer (or was put off until a chunk in flight was written)
	BufferFullTime  time.Duration // total time pulls waited for buffers (with no chunk in flight)
	PeakBuffered    int64         // most bytes of buffers taken at once
}

// Server is a staging server: it pulls committed checkpoints from the
// staging clients of compute nodes and writes them to the shared tier.
type Server struct {
	cfg     Config
	ctx     context.Context
	cancel  context.CancelFunc
	limiter *rate.Limiter
	bufs    chan []byte

	mu      sync.Mutex
	cond    *sync.Cond // signalled when a task may have become runnable
	flushes map[string]*flush
	order   []string         // flushes in announcement order
	conns   map[string]*conn // the live connection of each node
	writing map[objKey]bool  // objects a task is writing, of any flush
	stats   Stats
	inUse   int64
	closed  bool
	wg      sync.WaitGroup
	lns     []net.Listener
}

// flush is one checkpoint being pulled by this server.
type flush struct {
	rec     record
	m       *manifest.Manifest
	running map[int]bool // ranks whose transfer is under way
	start   time.Time
	bytes   int64
	durable map[string]bool // nodes told their part is durable
}

// objKey names a rank's object on the shared tier: a superseded flush and
// the flush that supersedes it write the same objects.
type objKey struct {
	name string
	rank int
}

// task is one rank's object of one flush.
type task struct {
	f    *flush
	rank int
	node string
}

var (
	errDisconnected = errors.New("the staging client disconnected")
	errClosed       = errors.New("stage: server closed")
)

// NewServer starts a server's writers and resumes the flushes its journal
// holds; Serve then accepts clients.
func NewServer(cfg Config) (*Server, error) {
	if cfg.Shared == nil {
		return nil, errors.New("stage: no shared tier")
	}
	if cfg.Writers <= 0 {
		cfg.Writers = WritersFor(cfg.Shared)
	}
	if cfg.ChunkSize <= 0 {
		cfg.ChunkSize = DefaultChunkSize
	}
	if cfg.ChunkSize > MaxChunk {
		return nil, fmt.Errorf("stage: chunk size %d exceeds the protocol's %d", cfg.ChunkSize, MaxChunk)
	}
	if cfg.Depth <= 0 {
		cfg.Depth = DefaultDepth
	}
	if cfg.Buffer <= 0 {
		cfg.Buffer = DefaultBuffer(cfg.Writers, cfg.Depth, cfg.ChunkSize)
	}
	if cfg.Buffer < int64(cfg.ChunkSize) {
		return nil, fmt.Errorf("stage: buffer %d bytes cannot hold one chunk of %d", cfg.Buffer, cfg.ChunkSize)
	}
	if cfg.PullTimeout <= 0 {
		cfg.PullTimeout = 60 * time.Second
	}
	if cfg.HelloTimeout <= 0 {
		cfg.HelloTimeout = DefaultHelloTimeout
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	s := &Server{cfg: cfg, flushes: map[string]*flush{}, conns: map[string]*conn{}, writing: map[objKey]bool{}}
	s.cond = sync.NewCond(&s.mu)
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if cfg.Rate > 0 {
		s.limiter = rate.NewLimiter(rate.Limit(cfg.Rate), cfg.ChunkSize)
	}
	n := int(cfg.Buffer / int64(cfg.ChunkSize))
	s.bufs = make(chan []byte, n)
	for range n {
		s.bufs <- nil // allocated on first use
	}
	if err := s.loadJournal(); err != nil {
		return nil, err
	}
	// Parts finished before a restart but not yet marked: mark them now.
	s.mu.Lock()
	for _, name := range slices.Clone(s.order) {
		if f := s.flushes[name]; f != nil {
			for _, node := range f.rec.nodes() {
				s.checkNodeLocked(f, node)
			}
		}
	}
	s.mu.Unlock()
	for range cfg.Writers {
		s.wg.Add(1)
		go s.writer()
	}
	return s, nil
}

// Serve accepts staging clients on ln until the server is closed.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ln.Close() // as Close would have
		return errClosed
	}
	s.lns = append(s.lns, ln)
	s.mu.Unlock()
	return tcp.Accept(ln, s.ctx.Done(), func(err error, retry time.Duration) {
		s.cfg.Logf("stage: accept: %v; retrying in %v", err, retry)
	}, func(nc net.Conn) {
		s.mu.Lock()
		if s.closed {
			// Close may be waiting on the group already: add nothing.
			s.mu.Unlock()
			nc.Close()
			return
		}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			s.handle(nc)
		}()
	})
}

// Close stops the server: transfers under way are abandoned (their objects
// are never committed) and stay in the journal for the next start.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.cancel()
	for _, ln := range s.lns {
		ln.Close()
	}
	for _, c := range s.conns {
		c.close(errClosed)
	}
	s.cond.Broadcast()
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

// Stats returns the server's running totals.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// Pending lists the flushes not yet finished, in announcement order.
func (s *Server) Pending() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.order)
}

// Read buffers of a client's connection, before and after its Hello.
const (
	helloBuffer = 4 << 10
	connBuffer  = 64 << 10
)

// handle runs one client connection: Hello, then its messages until it
// closes or misbehaves.
func (s *Server) handle(nc net.Conn) {
	defer nc.Close()
	// Close ends connections still in their handshake too, which are not
	// in s.conns yet.
	stop := context.AfterFunc(s.ctx, func() { nc.Close() })
	defer stop()
	tcp.NoDelay(nc)
	if s.cfg.TLS != nil {
		// The handshake runs at the first read, within the Hello's
		// deadline; nc.Close (deferred) closes the TCP connection.
		nc = tls.Server(nc, s.cfg.TLS)
	}
	// Until the client has shown the job's token it gets a small buffer:
	// the large one, for Data, reads through it once the Hello is in (a
	// read that size bypasses the small buffer, so nothing is copied
	// twice).
	hr := bufio.NewReaderSize(nc, helloBuffer)
	nc.SetReadDeadline(time.Now().Add(s.cfg.HelloTimeout))
	msg, err := ReadHello(hr)
	if err != nil {
		s.cfg.Logf("stage: %s: no hello: %v", nc.RemoteAddr(), err)
		return
	}
	h, ok := msg.(*Hello)
	switch {
	case !ok:
		WriteMsg(nc, &Refused{Reason: fmt.Sprintf("expected Hello, got %s", msg.Type())})
		return
	case h.Version != Version:
		WriteMsg(nc, &Refused{Reason: fmt.Sprintf("protocol version %d, this server speaks %d", h.Version, Version)})
		return
	case subtle.ConstantTimeCompare([]byte(h.Token), []byte(s.cfg.Token)) != 1:
		WriteMsg(nc, &Refused{Reason: "wrong job token"})
		s.cfg.Logf("stage: %s (node %q): wrong job token", nc.RemoteAddr(), h.Node)
		return
	case h.Node == "" || manifest.ValidName(h.Node) != nil:
		WriteMsg(nc, &Refused{Reason: fmt.Sprintf("bad node name %q", h.Node)})
		return
	}
	nc.SetReadDeadline(time.Time{})
	br := bufio.NewReaderSize(hr, connBuffer)
	c := newConn(s, nc, h.Node)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		c.writeLoop()
	}()
	if old := s.conns[h.Node]; old != nil {
		old.close(fmt.Errorf("node %q connected again", h.Node))
	}
	s.conns[h.Node] = c
	var pending []string
	size := 0
	for _, name := range s.order {
		if f := s.flushes[name]; slices.Contains(f.rec.nodes(), h.Node) {
			if size += len(name) + binary.MaxVarintLen16; size > MaxManifest {
				// Beyond what a Welcome carries: the oldest go first.
				s.cfg.Logf("stage: node %q: %d pending flushes do not fit a Welcome; the newest are left out", h.Node, len(pending))
				break
			}
			pending = append(pending, name)
		}
	}
	err = c.send(&Welcome{Server: s.cfg.Name, Pending: pending})
	s.cond.Broadcast() // this node's tasks can run again
	s.mu.Unlock()
	if err == nil {
		err = c.read(br)
	}
	c.close(err)
	s.mu.Lock()
	if s.conns[h.Node] == c {
		delete(s.conns, h.Node)
	}
	s.mu.Unlock()
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, errClosed) {
		s.cfg.Logf("stage: node %q: %v", h.Node, err)
	}
}

// announce registers a checkpoint a node holds. A name already pending
// with the same manifest gains the node's ranks; with a different
// manifest, the older flush is abandoned for the newer.
func (s *Server) announce(c *conn, a *Announce) error {
	m, err := manifest.Decode(a.Manifest)
	if err != nil {
		return fmt.Errorf("%w: announce %q: %v", ErrProtocol, a.Name, err)
	}
	if m.Name != a.Name {
		return fmt.Errorf("%w: announce %q carries the manifest of %q", ErrProtocol, a.Name, m.Name)
	}
	for _, r := range a.Ranks {
		if r >= m.Ranks {
			return fmt.Errorf("%w: announce %q: rank %d of %d", ErrProtocol, a.Name, r, m.Ranks)
		}
		if m.Parts[r].Node != c.node {
			return fmt.Errorf("%w: announce %q: rank %d is on node %q, not %q", ErrProtocol, a.Name, r, m.Parts[r].Node, c.node)
		}
	}
	switch same, err := sharedtier.Holds(s.ctx, s.cfg.Shared, m); {
	case s.ctx.Err() != nil:
		return errClosed
	case err != nil && !errors.Is(err, storage.ErrNotExist):
		// The flush goes on: if the tier is out of order, its writes
		// fail and say why.
		s.cfg.Logf("stage: %s: reading the shared tier: %v", a.Name, err)
	case err == nil && same:
		return c.send(&Status{Name: a.Name, State: Committed})
	case err == nil:
		// Replacing it would destroy a complete checkpoint for one not
		// yet flushed: this one stays at level 1.
		return c.send(&Status{Name: a.Name, State: Failed, Reason: "another checkpoint of this name is on the shared tier"})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		// The journal cannot be written any more: a failure here would
		// remove objects it records as durable.
		return errClosed
	}
	f := s.flushes[a.Name]
	if f != nil && string(f.rec.Manifest) != string(a.Manifest) {
		// Not told to c's node: its client's record of the name is the
		// new flush's already.
		s.abandonLocked(f, "superseded by a new checkpoint of the same name", c.node)
		f = nil
	}
	if f == nil {
		f = &flush{rec: record{Name: a.Name, Manifest: a.Manifest, Nodes: map[string][]int{}}, m: m}
		f.init()
		s.flushes[a.Name] = f
		s.order = append(s.order, a.Name)
	}
	ranks := slices.Clone(a.Ranks)
	sort.Ints(ranks)
	ranks = slices.Compact(ranks)
	if !slices.Equal(f.rec.Nodes[c.node], ranks) {
		f.durable[c.node] = false // its part, changed, is to be marked again
	}
	f.rec.Nodes[c.node] = ranks
	if err := s.saveLocked(f); err != nil {
		s.failLocked(f, fmt.Sprintf("journal: %v", err))
		return nil
	}
	s.cfg.Logf("stage: %s: node %q announced ranks %v", a.Name, c.node, ranks)
	s.checkNodeLocked(f, c.node)
	s.cond.Broadcast()
	return nil
}

func (f *flush) init() {
	f.running = map[int]bool{}
	f.durable = map[string]bool{}
	f.start = time.Now()
	if f.rec.Done == nil {
		f.rec.Done = map[int]bool{}
	}
}

// writer is one of the W data writers: it takes the next runnable task
// and writes its object.
func (s *Server) writer() {
	defer s.wg.Done()
	for {
		t, c, ok := s.next()
		if !ok {
			return
		}
		n, err := s.transfer(t, c)
		s.finish(t, n, err)
	}
}

// next blocks until a task can run: its flush is pending, its rank neither
// done nor running (nor its object being written by the task of a flush
// it superseded), and its node's client connected. Oldest flush first.
func (s *Server) next() (task, *conn, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		if s.closed {
			return task{}, nil, false
		}
		for _, name := range s.order {
			f := s.flushes[name]
			for _, node := range f.rec.nodes() {
				c := s.conns[node]
				if c == nil {
					continue
				}
				for _, r := range f.rec.Nodes[node] {
					if !f.rec.Done[r] && !f.running[r] && !s.writing[objKey{name, r}] {
						f.running[r] = true
						s.writing[objKey{name, r}] = true
						return task{f: f, rank: r, node: node}, c, true
					}
				}
			}
		}
		s.cond.Wait()
	}
}

// transfer pulls one rank's files from its node, chunk by chunk with up to
// Depth chunks in flight, and writes them as the rank's object on the
// shared tier, checking each file's content hash on the way. The object
// is committed (durable) only if every byte arrived and matched.
func (s *Server) transfer(t task, c *conn) (int64, error) {
	part := t.f.m.Parts[t.rank]
	w, err := s.cfg.Shared.Create(s.ctx, sharedtier.DataObject(t.f.rec.Name, t.rank))
	if err != nil {
		return 0, &sharedError{err}
	}
	var total int64
	for _, file := range part.Files {
		n, err := s.pullFile(t, c, file, w)
		total += n
		if err != nil {
			w.Abort()
			return total, err
		}
	}
	if err := w.Commit(); err != nil {
		return total, &sharedError{err}
	}
	return total, nil
}

// sharedError marks a failure of the shared tier (as opposed to the
// client's or the network's).
type sharedError struct{ err error }

func (e *sharedError) Error() string { return "shared tier: " + e.err.Error() }
func (e *sharedError) Unwrap() error { return e.err }

// pullFile pulls a file's object, in its stored form (a compressed file
// stays compressed: manifest.File.Stored), into w.
func (s *Server) pullFile(t task, c *conn, file manifest.File, w io.Writer) (int64, error) {
	size, hash := file.Stored()
	h := manifest.NewContentHasher()
	chunk := int64(s.cfg.ChunkSize)
	var inflight []*pull
	// release gives up the pulls in flight and frees their buffers. The
	// connection's reader may be filling a buffer still (its Data header
	// came before the pull was given up): that buffer stays the reader's,
	// and its place in the pool gets a new one.
	release := func() {
		for _, p := range inflight {
			if !c.forget(p) {
				select {
				case <-p.done: // answered: the reader is done with it
				default:
					s.putBuf(nil)
					continue
				}
			}
			s.putBuf(p.buf)
		}
	}
	var next, written int64
	for written < size {
		// Keep up to Depth chunks in flight. Wait for a buffer only with
		// none in flight: transfers holding some buffers and waiting for
		// more would wait on each other for ever when Buffer holds fewer
		// than Writers·Depth chunks.
		for len(inflight) < s.cfg.Depth && next < size {
			n := min(chunk, size-next)
			buf, err := s.getBuf(int(n), len(inflight) == 0)
			if err != nil {
				release()
				return written, err
			}
			if buf == nil {
				break // every buffer taken: write a chunk in flight first
			}
			if s.limiter != nil {
				if err := s.limiter.WaitN(s.ctx, int(n)); err != nil {
					s.putBuf(buf)
					release()
					return written, err
				}
			}
			p, err := c.pull(&Pull{Name: t.f.rec.Name, Rank: t.rank, File: file.Name, Offset: next, Length: int(n)}, buf[:n])
			if err != nil {
				if p == nil {
					s.putBuf(buf)
				} else {
					inflight = append(inflight, p) // released below
				}
				release()
				return written, err
			}
			inflight = append(inflight, p)
			next += n
		}
		p := inflight[0]
		timer := time.NewTimer(s.cfg.PullTimeout)
		select {
		case err := <-p.done:
			timer.Stop()
			if err != nil {
				inflight = inflight[1:]
				s.putBuf(p.buf)
				release()
				return written, err
			}
		case <-timer.C:
			c.close(fmt.Errorf("no answer to a pull in %v", s.cfg.PullTimeout))
			release()
			return written, errDisconnected
		case <-s.ctx.Done():
			timer.Stop()
			release()
			return written, errClosed
		}
		inflight = inflight[1:]
		s.mu.Lock()
		s.stats.BytesPulled += int64(len(p.buf))
		s.mu.Unlock()
		h.Write(p.buf)
		_, err := w.Write(p.buf)
		s.putBuf(p.buf)
		if err != nil {
			release()
			return written, &sharedError{err}
		}
		written += int64(len(p.buf))
	}
	if got := h.Sum128(); got != hash {
		return written, fmt.Errorf("rank %d file %q: content hash %s, manifest says %s", t.rank, file.Name, got, hash)
	}
	return written, nil
}

// getBuf takes a chunk buffer. When every one is taken it waits for one,
// or, unless wait, returns nil at once: this is where the server throttles
// its pulls when its buffer is full.
func (s *Server) getBuf(n int, wait bool) ([]byte, error) {
	var b []byte
	select {
	case b = <-s.bufs:
	default:
		if !wait {
			s.mu.Lock()
			s.stats.BufferFullWaits++
			s.mu.Unlock()
			return nil, nil
		}
		start := time.Now()
		select {
		case b = <-s.bufs:
		case <-s.ctx.Done():
			return nil, errClosed
		}
		s.mu.Lock()
		s.stats.BufferFullWaits++
		s.stats.BufferFullTime += time.Since(start)
		s.mu.Unlock()
	}
	if b == nil {
		b = make([]byte, s.cfg.ChunkSize)
	}
	s.mu.Lock()
	s.inUse += int64(s.cfg.ChunkSize)
	s.stats.PeakBuffered = max(s.stats.PeakBuffered, s.inUse)
	s.mu.Unlock()
	return b[:n], nil
}

// putBuf returns a buffer to the pool; nil frees its place for a new one.
func (s *Server) putBuf(b []byte) {
	s.mu.Lock()
	s.inUse -= int64(s.cfg.ChunkSize)
	s.mu.Unlock()
	s.bufs <- b[:cap(b)]
}

// finish records the end of one task. A task cut off by its client's
// disconnection or the server's close runs again later; any other error
// abandons the whole flush.
func (s *Server) finish(t task, n int64, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := t.f
	delete(f.running, t.rank)
	defer func() {
		// After the removal below: a flush superseding f may write the
		// object now.
		delete(s.writing, objKey{f.rec.Name, t.rank})
		s.cond.Broadcast()
	}()
	if s.flushes[f.rec.Name] != f {
		// Failed or superseded meanwhile: what this task committed is
		// nobody's.
		if err == nil {
			s.cfg.Shared.Remove(context.WithoutCancel(s.ctx), sharedtier.DataObject(f.rec.Name, t.rank))
		}
		return
	}
	if s.closed {
		// Ended by Close, or just before it: the journal, which can no
		// longer be written, keeps the flush as it was, and nothing may
		// fail it now (that would remove objects the journal records as
		// durable). An object committed just now is pulled again.
		return
	}
	f.bytes += n
	switch {
	case err == nil:
		s.stats.BytesWritten += n
		f.rec.Done[t.rank] = true
		if jerr := s.saveLocked(f); jerr != nil {
			s.failLocked(f, fmt.Sprintf("journal: %v", jerr))
			return
		}
		s.checkNodeLocked(f, t.node)
	case errors.Is(err, errDisconnected):
		// Runs again when the node's client is back. (An error of Close's
		// making returned above: the server is closed.)
	default:
		s.failLocked(f, fmt.Sprintf("rank %d: %v", t.rank, err))
	}
	s.cond.Broadcast()
}

// checkNodeLocked tells a node whose every rank is durable, marks its part
// on the shared tier, and commits the checkpoint if every node's part is
// marked. s.mu is held; the shared-tier calls are short (one small object
// and one listing) and keep the bookkeeping in one order.
func (s *Server) checkNodeLocked(f *flush, node string) {
	ranks := f.rec.Nodes[node]
	for _, r := range ranks {
		if !f.rec.Done[r] {
			return
		}
	}
	if f.durable[node] {
		return
	}
	if err := s.markPart(f, node, ranks); err != nil {
		s.failLocked(f, fmt.Sprintf("marking node %q durable: %v", node, err))
		return
	}
	f.durable[node] = true
	if c := s.conns[node]; c != nil {
		c.send(&Status{Name: f.rec.Name, State: Durable})
	}
	for _, n := range f.rec.nodes() {
		if !f.durable[n] {
			return // this server still has parts to pull
		}
	}
	committed, err := s.tryCommit(f)
	if err != nil {
		s.failLocked(f, fmt.Sprintf("commit: %v", err))
		return
	}
	state := Durable
	if committed {
		state = Committed
		s.stats.Committed++
		for _, n := range f.rec.nodes() {
			if c := s.conns[n]; c != nil {
				c.send(&Status{Name: f.rec.Name, State: Committed})
			}
		}
		if err := sharedtier.Retain(s.ctx, s.cfg.Shared, s.cfg.Keep); err != nil {
			s.cfg.Logf("stage: retention: %v", err)
		}
	} else {
		s.stats.Durable++
	}
	s.cfg.Logf("stage: %s: %s (%d bytes in %.3fs)", f.rec.Name, state, f.bytes, time.Since(f.start).Seconds())
	if err := s.dropJournal(f.rec.Name); err != nil {
		// A restart resumes it: every rank durable, it is marked and
		// committed again, to the same effect.
		s.cfg.Logf("stage: %s: journal: %v", f.rec.Name, err)
	}
	s.endLocked(f, Event{Name: f.rec.Name, State: state, Bytes: f.bytes, Seconds: time.Since(f.start).Seconds()})
}

// markerPrefix names the objects that record, on the shared tier, which
// nodes' parts of a checkpoint are durable: NAME/staged-NODE, holding the
// node's ranks. They let several staging servers, each serving some of
// the nodes, agree on when the checkpoint is complete without talking to
// each other: the server that completes the last part finds every rank
// marked and writes the manifest. (Two finding it at once write the same
// manifest.)
func markerPrefix(name string) string { return name + "/staged-" }

// markerText is a node part's marker: the checkpoint's identity (the hash
// of its manifest, so that a marker left by an older checkpoint of the
// same name never counts for a newer one) and the node's ranks.
func markerText(f *flush, ranks []int) string {
	return manifest.ContentHashBytes(f.rec.Manifest).String() + " " + fmt.Sprint(ranks)
}

func (s *Server) markPart(f *flush, node string, ranks []int) error {
	text := markerText(f, ranks)
	w, err := s.cfg.Shared.Create(s.ctx, markerPrefix(f.rec.Name)+node)
	if err != nil {
		return err
	}
	if _, err := io.WriteString(w, text); err != nil {
		w.Abort()
		return err
	}
	return w.Commit()
}

// tryCommit writes the manifest if the markers of this checkpoint cover
// every rank.
func (s *Server) tryCommit(f *flush) (bool, error) {
	covered := make([]bool, f.m.Ranks)
	id := manifest.ContentHashBytes(f.rec.Manifest).String() + " "
	err := s.cfg.Shared.List(s.ctx, markerPrefix(f.rec.Name), func(i storage.Info) error {
		b, err := storage.Load(s.ctx, s.cfg.Shared, i.Name)
		if err != nil {
			return err
		}
		text, ok := strings.CutPrefix(string(b), id)
		if !ok {
			// An older checkpoint of the same name, abandoned: its
			// node's part is not this one's.
			return nil
		}
		ranks, err := parseRanks(text, f.m.Ranks)
		if err != nil {
			return fmt.Errorf("%s: %v", i.Name, err)
		}
		for _, r := range ranks {
			covered[r] = true
		}
		return nil
	})
	if err != nil {
		return false, err
	}
	if slices.Contains(covered, false) {
		return false, nil
	}
	return true, sharedtier.Commit(s.ctx, s.cfg.Shared, f.m)
}

// failLocked abandons a flush: its objects are removed (the manifest was
// never written, so nothing was visible), its clients told.
func (s *Server) failLocked(f *flush, reason string) { s.abandonLocked(f, reason, "") }

// abandonLocked is failLocked telling every node but quiet.
func (s *Server) abandonLocked(f *flush, reason, quiet string) {
	s.stats.Failed++
	s.cfg.Logf("stage: %s: failed: %s", f.rec.Name, reason)
	for _, n := range f.rec.nodes() {
		if c := s.conns[n]; c != nil && n != quiet {
			c.send(&Status{Name: f.rec.Name, State: Failed, Reason: reason})
		}
	}
	// The journal first: a record that outlived the objects it calls
	// durable would have a restarted server commit the checkpoint
	// without them. If it cannot be dropped, the objects stay (complete
	// and checked, but unmarked or without a manifest: invisible) for the
	// record to find after a restart.
	if err := s.dropJournal(f.rec.Name); err != nil {
		s.cfg.Logf("stage: %s: journal: %v; its objects stay for the record", f.rec.Name, err)
	} else {
		// Objects of ranks this server wrote, and its nodes' markers.
		// Other servers' objects of the same checkpoint are theirs to
		// remove.
		ctx := context.WithoutCancel(s.ctx)
		for _, n := range f.rec.nodes() {
			s.cfg.Shared.Remove(ctx, markerPrefix(f.rec.Name)+n)
			for _, r := range f.rec.Nodes[n] {
				s.cfg.Shared.Remove(ctx, sharedtier.DataObject(f.rec.Name, r))
			}
		}
	}
	s.endLocked(f, Event{Name: f.rec.Name, State: Failed, Bytes: f.bytes, Seconds: time.Since(f.start).Seconds(), Reason: reason})
}

// endLocked forgets a finished flush (its journal record dropped already,
// or to be dropped by the caller).
func (s *Server) endLocked(f *flush, ev Event) {
	delete(s.flushes, f.rec.Name)
	s.order = slices.DeleteFunc(s.order, func(n string) bool { return n == f.rec.Name })
	if s.cfg.OnDone != nil {
		s.cfg.OnDone(ev)
	}
}
