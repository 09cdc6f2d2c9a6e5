package stage

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/ckpt/ckpt/internal/manifest"
	"github.com/ckpt/ckpt/internal/tcp"
)

// Source is the node's cache as the staging client serves it.
type Source interface {
	// Manifest returns the encoded manifest of a committed checkpoint.
	Manifest(ctx context.Context, name string) ([]byte, error)
	// Open reads length bytes of one of rank's files from offset. A reader
	// that implements io.WriterTo (as the local cache's does) lets the
	// client send the bytes to the network without copying them through
	// user space.
	Open(ctx context.Context, name string, rank int, file string, offset, length int64) (io.ReadCloser, error)
}

// ClientConfig configures a staging client.
type ClientConfig struct {
	Addr   string // the staging server's host:port
	Token  string // the job's token
	Node   string // this compute node
	Source Source
	Logf   func(format string, args ...any)
	// TLS, if set, is the job's client TLS configuration
	// (jobtls.Config.Client): the connection is TLS, and the server must
	// present the job's certificate. nil: plain TCP.
	TLS *tls.Config
}

// Client is the staging client of one compute node: it announces the
// node's committed checkpoints to its staging server and serves the
// server's pulls from the cache. It does no work of its own beyond
// answering pulls: no copy, no checksum (the server checks the content
// hashes against the manifest).
//
// The client connects in the background and reconnects after a lost
// connection, announcing again every checkpoint not yet durable, so a
// flush survives a restart of its server.
type Client struct {
	cfg    ClientConfig
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every state change
	flushes map[string]*clientFlush
	order   []string // announced names, oldest first
	nc      net.Conn
	refused string // the server refused us: permanent
	wmu     sync.Mutex
}

type clientFlush struct {
	manifest []byte
	m        *manifest.Manifest
	ranks    []int // ranks this node serves (nil: known from Welcome only)
	state    State
	reason   string
	start    time.Time
	end      time.Time
}

// NewClient starts a client; it connects in the background.
func NewClient(cfg ClientConfig) *Client {
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	c := &Client{cfg: cfg, flushes: map[string]*clientFlush{}, changed: make(chan struct{}), done: make(chan struct{})}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	go c.run()
	return c
}

// Close disconnects. Flushes under way stay with the server, which resumes
// them when a client of this node connects again.
func (c *Client) Close() error {
	c.cancel()
	c.mu.Lock()
	if c.nc != nil {
		c.nc.Close()
	}
	c.mu.Unlock()
	<-c.done
	return nil
}

// Announce hands checkpoint name, committed in this node's cache, to the
// server for flushing; it returns at once. ranks are the ranks whose files
// this node's cache holds.
func (c *Client) Announce(name string, encoded []byte, ranks []int) error {
	m, err := manifest.Decode(encoded)
	if err != nil {
		return fmt.Errorf("stage: announce %q: %w", name, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.refused != "" {
		return fmt.Errorf("stage: the staging server refused this client: %s", c.refused)
	}
	if _, ok := c.flushes[name]; !ok {
		c.order = append(c.order, name)
	}
	f := &clientFlush{manifest: encoded, m: m, ranks: slices.Clone(ranks), state: Pending, start: time.Now()}
	c.flushes[name] = f
	c.trimLocked()
	c.notifyLocked()
	if c.nc != nil {
		go c.send(&Announce{Name: name, Manifest: encoded, Ranks: f.ranks})
	}
	return nil
}

// State reports a checkpoint's flush: Pending, Durable (this node's part
// is on the shared tier), Committed or Failed (with the reason); ok is
// false for a name never announced.
func (c *Client) State(name string) (st State, reason string, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f := c.flushes[name]
	if f == nil {
		return 0, "", false
	}
	return f.state, f.reason, true
}

// Latency is how long a finished flush took from its announcement.
func (c *Client) Latency(name string) (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f := c.flushes[name]
	if f == nil || f.end.IsZero() {
		return 0, false
	}
	return f.end.Sub(f.start), true
}

// Busy tells whether a flush of this node is still pending.
func (c *Client) Busy() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.busyLocked()
}

func (c *Client) busyLocked() bool {
	for _, f := range c.flushes {
		if f.state == Pending {
			return true
		}
	}
	return false
}

// WaitIdle waits until no flush of this node is pending.
func (c *Client) WaitIdle(ctx context.Context) error {
	for {
		c.mu.Lock()
		busy, ch, refused := c.busyLocked(), c.changed, c.refused
		c.mu.Unlock()
		if !busy {
			return nil
		}
		if refused != "" {
			return fmt.Errorf("stage: the staging server refused this client: %s", refused)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Pinned tells whether checkpoint name must stay in the cache: its flush
// is pending.
func (c *Client) Pinned(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	f := c.flushes[name]
	return f != nil && f.state == Pending
}

func (c *Client) notifyLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// trimLocked forgets the oldest finished flushes beyond 64.
func (c *Client) trimLocked() {
	for len(c.order) > 64 {
		i := slices.IndexFunc(c.order, func(n string) bool { return c.flushes[n].state != Pending })
		if i < 0 {
			return
		}
		delete(c.flushes, c.order[i])
		c.order = slices.Delete(c.order, i, i+1)
	}
}

func (c *Client) setState(name string, st State, reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f := c.flushes[name]
	if f == nil || f.state == Committed || f.state == Failed || (f.state == Durable && st == Pending) {
		return
	}
	f.state, f.reason = st, reason
	if st != Pending && f.end.IsZero() {
		f.end = time.Now()
	}
	c.notifyLocked()
}

func (c *Client) send(m Msg) error {
	c.mu.Lock()
	nc := c.nc
	c.mu.Unlock()
	if nc == nil {
		return errDisconnected
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	nc.SetWriteDeadline(time.Now().Add(writeTimeout))
	err := WriteMsg(nc, m)
	if err != nil {
		nc.Close()
	}
	return err
}

// run connects, serves, and reconnects with jittered exponential back-off
// until closed or refused.
func (c *Client) run() {
	defer close(c.done)
	backoff := tcp.Backoff{First: 50 * time.Millisecond, Max: 2 * time.Second}
	for c.ctx.Err() == nil {
		served, err := c.session()
		if c.ctx.Err() != nil {
			return
		}
		var ref *refusedError
		if errors.As(err, &ref) {
			c.mu.Lock()
			c.refused = ref.reason
			for _, f := range c.flushes {
				if f.state == Pending {
					f.state, f.reason, f.end = Failed, "refused by the staging server: "+ref.reason, time.Now()
				}
			}
			c.notifyLocked()
			c.mu.Unlock()
			c.cfg.Logf("stage client: %s refused node %q: %s", c.cfg.Addr, c.cfg.Node, ref.reason)
			return
		}
		if served {
			backoff.Reset()
		}
		c.cfg.Logf("stage client: %s: %v; reconnecting", c.cfg.Addr, err)
		if !tcp.Sleep(c.ctx.Done(), backoff.Next(rand.Int64N)) {
			return
		}
	}
}

type refusedError struct{ reason string }

func (e *refusedError) Error() string { return "refused: " + e.reason }

// session is one connection: Hello, Welcome, announcements again, then
// pulls served until the connection ends.
func (c *Client) session() (served bool, err error) {
	d := net.Dialer{Timeout: 10 * time.Second}
	nc, err := d.DialContext(c.ctx, "tcp", c.cfg.Addr)
	if err != nil {
		return false, err
	}
	defer nc.Close()
	// Close ends the handshake too (c.nc is set only after it).
	stop := context.AfterFunc(c.ctx, func() { nc.Close() })
	defer stop()
	tcp.NoDelay(nc)
	if c.cfg.TLS != nil {
		// The handshake runs at the first write, within the Hello's
		// deadline below; Close interrupts it.
		nc = tls.Client(nc, c.cfg.TLS)
	}
	if err := WriteMsg(nc, &Hello{Version: Version, Token: c.cfg.Token, Node: c.cfg.Node}); err != nil {
		return false, err
	}
	br := bufio.NewReaderSize(nc, 64<<10)
	nc.SetReadDeadline(time.Now().Add(30 * time.Second))
	msg, err := ReadMsg(br)
	if err != nil {
		return false, err
	}
	nc.SetReadDeadline(time.Time{})
	switch m := msg.(type) {
	case *Refused:
		return false, &refusedError{m.Reason}
	case *Welcome:
		c.mu.Lock()
		c.nc = nc
		var again []*Announce
		for _, name := range c.order {
			if f := c.flushes[name]; f.state == Pending && f.ranks != nil {
				again = append(again, &Announce{Name: name, Manifest: f.manifest, Ranks: f.ranks})
			}
		}
		c.mu.Unlock()
		// Flushes of this node the server holds from before (this process
		// may be a relaunch): serve them from the cache if it has them.
		for _, name := range m.Pending {
			c.adopt(name)
		}
		for _, a := range again {
			if err := c.send(a); err != nil {
				return true, err
			}
		}
	default:
		return false, fmt.Errorf("%w: expected Welcome, got %s", ErrProtocol, msg.Type())
	}
	defer func() {
		c.mu.Lock()
		c.nc = nil
		c.mu.Unlock()
	}()
	return true, c.serve(nc, br)
}

// adopt takes on a flush the server resumed from its journal.
func (c *Client) adopt(name string) {
	c.mu.Lock()
	_, known := c.flushes[name]
	c.mu.Unlock()
	if known {
		return
	}
	text, err := c.cfg.Source.Manifest(c.ctx, name)
	var m *manifest.Manifest
	if err == nil {
		m, err = manifest.Decode(text)
	}
	if err != nil {
		c.cfg.Logf("stage client: %s: pending at the server but not in this cache: %v", name, err)
		return // its pulls are refused, and the server abandons it
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.flushes[name]; !ok {
		c.order = append(c.order, name)
		c.flushes[name] = &clientFlush{manifest: text, m: m, state: Pending, start: time.Now()}
		c.trimLocked()
		c.notifyLocked()
	}
}

// serve answers the server's frames until the connection ends.
func (c *Client) serve(nc net.Conn, br *bufio.Reader) error {
	for {
		msg, err := ReadMsg(br)
		if err != nil {
			return err
		}
		switch m := msg.(type) {
		case *Pull:
			if err := c.answer(nc, m); err != nil {
				return err
			}
		case *Status:
			c.setState(m.Name, m.State, m.Reason)
		default:
			return fmt.Errorf("%w: unexpected %s from the server", ErrProtocol, msg.Type())
		}
	}
}

// answer serves one Pull: checked against the manifest, then a Data header
// and the bytes straight from the cache file to the socket. A request the
// client cannot serve gets a PullError and the connection goes on.
func (c *Client) answer(nc net.Conn, p *Pull) error {
	if err := c.check(p); err != nil {
		return c.send(&PullError{ID: p.ID, Reason: err.Error()})
	}
	r, err := c.cfg.Source.Open(c.ctx, p.Name, p.Rank, p.File, p.Offset, int64(p.Length))
	if err != nil {
		if c.ctx.Err() != nil {
			// The client is closing (its rank is done, or failing): the
			// cache did not fail. A PullError would fail the flush at
			// the server; dropping the connection leaves it there for
			// a relaunched rank's client to take up again.
			return c.ctx.Err()
		}
		return c.send(&PullError{ID: p.ID, Reason: fmt.Sprintf("%s rank %d %s: %v", p.Name, p.Rank, p.File, err)})
	}
	defer r.Close()
	c.wmu.Lock()
	defer c.wmu.Unlock()
	nc.SetWriteDeadline(time.Now().Add(writeTimeout))
	if err := WriteMsg(nc, &Data{ID: p.ID, Length: p.Length}); err != nil {
		return err
	}
	n, err := io.Copy(nc, r)
	if err == nil && n == int64(p.Length) {
		return nil
	}
	if err == nil {
		err = fmt.Errorf("%s rank %d %s: %d bytes from the cache, want %d", p.Name, p.Rank, p.File, n, p.Length)
	}
	// The header promised Length bytes. If the cache file ended short or
	// failed to read, send zeros for the rest to keep the stream in step:
	// the server's content hash check then fails the flush. (Dropping the
	// connection instead would only make the server pull again, for ever.)
	// A read cut short by Close is no such failure: the connection drops.
	if n < int64(p.Length) && c.ctx.Err() == nil {
		if _, perr := io.CopyN(nc, zeros{}, int64(p.Length)-n); perr == nil {
			c.cfg.Logf("stage client: %v; sent zeros for the rest", err)
			return nil
		}
	}
	nc.Close()
	return err
}

// zeros reads as an endless run of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// check validates a Pull against the checkpoint's manifest: a name this
// node announced, a rank this node holds, a file of that rank, a range
// inside the file.
func (c *Client) check(p *Pull) error {
	c.mu.Lock()
	f := c.flushes[p.Name]
	c.mu.Unlock()
	if f == nil {
		return fmt.Errorf("checkpoint %q was not announced by node %q", p.Name, c.cfg.Node)
	}
	if p.Rank >= f.m.Ranks || f.m.Parts[p.Rank].Node != c.cfg.Node {
		return fmt.Errorf("%s: rank %d's files are not on node %q", p.Name, p.Rank, c.cfg.Node)
	}
	part := f.m.Parts[p.Rank]
	i := slices.IndexFunc(part.Files, func(x manifest.File) bool { return x.Name == p.File })
	if i < 0 {
		return fmt.Errorf("%s: rank %d has no file %q", p.Name, p.Rank, p.File)
	}
	size, _ := part.Files[i].Stored() // pulls read the stored object
	if p.Length == 0 || p.Offset > size || int64(p.Length) > size-p.Offset {
		return fmt.Errorf("%s: rank %d %s: bytes [%d, %d) outside the file's %d", p.Name, p.Rank, p.File, p.Offset, p.Offset+int64(p.Length), size)
	}
	return nil
}
