// Package coordnet is the network driver of package coord: a TCP server
// that runs the coordinator's state machine (or a node's sub-coordinator,
// with its connection to the coordinator), and the client a rank uses to
// talk to either.
//
// The driver keeps coord's obligations (see coord's package documentation):
// one goroutine, the loop, owns the state machine and hands it every event
// in the order it happened; one reader goroutine per connection decodes
// frames and posts them to the loop; one writer goroutine per connection
// writes what the machine sends, in order, then closes the connection when
// the machine asks. A message the machine sends to many connections (the
// result of a collective) is encoded once. Sockets have Nagle's algorithm
// off: every message is a turn of a protocol someone waits for.
package coordnet

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"time"

	"github.com/ckpt/ckpt/internal/coord"
	"github.com/ckpt/ckpt/internal/jobtls"
	"github.com/ckpt/ckpt/internal/tcp"
	"github.com/ckpt/ckpt/internal/wire"
)

// Options tune a Server. Zero fields take the defaults said.
type Options struct {
	// Tick is the period of the state machine's Tick (failure detection,
	// heartbeats). Default 250ms.
	Tick time.Duration
	// ReadLimit bounds the frames read from clients. Default
	// wire.DefaultLimit; a relay's upstream reads results of up to
	// UpstreamLimit.
	ReadLimit     int
	UpstreamLimit int
	// QueueFrames bounds the frames waiting to be written to one
	// connection; a client that lets more pile up is not reading and is
	// disconnected. Default 4096.
	QueueFrames int
	// OnNotice, if set, is called in the loop for every notice.
	OnNotice func(coord.Notice)
	// Upstream makes the server a relay: the address of the coordinator
	// it dials (with jittered back-off, once the relay wants it: see
	// dialIfWanted) and speaks for its node to.
	Upstream string
	// Rand jitters the back-off; default a random source.
	Rand *rand.Rand
	// TLS, if set, makes every connection mutual TLS with the job's
	// certificate (package jobtls): the clients' and, for a relay, the
	// one to the coordinator. A client that does not complete the TLS
	// handshake completes no frame either, and is dropped as silent.
	TLS *jobtls.Config
	// Dial, if set, makes a relay's connection to Upstream (from the
	// relay's host, when hosts are network namespaces: package netns);
	// default a plain TCP dial.
	Dial DialFunc
}

// DialFunc connects to a coordinator's address.
type DialFunc func(ctx context.Context, addr string) (net.Conn, error)

// Server runs a coord.StateMachine on a listener.
type Server struct {
	ln     net.Listener
	sm     coord.StateMachine
	opts   Options
	start  time.Time
	events chan event
	calls  chan func()
	quit   chan struct{}
	wg     sync.WaitGroup
	closed sync.Once

	// Owned by the loop.
	conns     map[coord.ConnID]*netConn
	nextID    uint64
	upDialing bool // a dialUpstream is under way
	// upBackoff spaces the dials after the first: a coordinator that
	// accepts and hangs up at once must not be dialled in a tight loop
	// while the relay waits for it. Reset by a frame from it.
	upBackoff tcp.Backoff
	upDialled bool                // the first dial was made
	frames    map[wire.Msg][]byte // frames encoded in the current batch
}

// event is something that happened to a connection, posted by its reader
// (or by the loop itself, for a writer that fell behind).
type event struct {
	kind int // evConnect, evReceive, evDisconnect
	c    *netConn
	msg  wire.Msg
	err  error
}

const (
	evConnect = iota
	evReceive
	evDisconnect
)

// netConn is one connection's writing side; the loop owns the map that
// holds it, the writer goroutine owns the socket's writes.
type netConn struct {
	id     coord.ConnID
	nc     net.Conn
	out    chan []byte // frames to write; closed to close the connection
	closed bool        // out closed (loop only)
}

// Serve starts running sm on ln; it returns at once. Close stops it.
func Serve(ln net.Listener, sm coord.StateMachine, opts Options) *Server {
	if opts.Tick <= 0 {
		opts.Tick = 250 * time.Millisecond
	}
	if opts.ReadLimit <= 0 {
		opts.ReadLimit = wire.DefaultLimit
	}
	if opts.UpstreamLimit <= 0 {
		opts.UpstreamLimit = 256 << 20
	}
	if opts.QueueFrames <= 0 {
		opts.QueueFrames = 4096
	}
	if opts.Rand == nil {
		opts.Rand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	s := &Server{
		ln: ln, sm: sm, opts: opts, start: time.Now(),
		events:    make(chan event, 4096),
		calls:     make(chan func()),
		quit:      make(chan struct{}),
		conns:     make(map[coord.ConnID]*netConn),
		frames:    make(map[wire.Msg][]byte),
		upBackoff: tcp.Backoff{First: dialFirst, Max: dialMax},
	}
	s.wg.Add(2)
	go s.accept()
	go s.loop()
	return s
}

// Addr is the listener's address.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Do runs f in the loop, where it may look at the state machine, and waits
// for it. It returns false if the server is closed.
func (s *Server) Do(f func()) bool {
	done := make(chan struct{})
	select {
	case s.calls <- func() { f(); close(done) }:
	case <-s.quit:
		return false
	}
	// The loop took f (calls is unbuffered) and runs it now: wait for it
	// even if the server is closing, or the caller would read what f is
	// still writing.
	<-done
	return true
}

// Close stops the server: the listener and every connection are closed.
func (s *Server) Close() error {
	s.closed.Do(func() {
		close(s.quit)
		s.ln.Close()
	})
	s.wg.Wait()
	return nil
}

func (s *Server) now() time.Duration { return time.Since(s.start) }

func (s *Server) post(ev event) {
	select {
	case s.events <- ev:
	case <-s.quit:
	}
}

func (s *Server) accept() {
	defer s.wg.Done()
	tcp.Accept(s.ln, s.quit, nil, func(nc net.Conn) {
		tcp.NoDelay(nc)
		if s.opts.TLS != nil {
			nc = tls.Server(nc, s.opts.TLS.Server) // handshakes at the reader's first read
		}
		s.post(event{kind: evConnect, c: &netConn{nc: nc, out: make(chan []byte, s.opts.QueueFrames)}})
	})
}

// start begins reading and writing a connection the loop registered.
func (s *Server) start1(c *netConn, limit int) {
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		br := bufio.NewReaderSize(c.nc, connBuffer)
		// A client that has not sent its Hello has not shown the job's
		// token: its frames are held to a Hello's size until it does.
		lim := limit
		if c.id != coord.Upstream {
			lim = min(limit, wire.HelloLimit)
		}
		for {
			msg, err := wire.ReadFrame(br, lim)
			if err != nil {
				if errors.Is(err, io.EOF) {
					err = nil
				}
				s.post(event{kind: evDisconnect, c: c, err: err})
				return
			}
			if _, ok := msg.(*wire.Hello); ok {
				lim = limit
			}
			s.post(event{kind: evReceive, c: c, msg: msg})
		}
	}()
	go func() {
		defer s.wg.Done()
		bw := bufio.NewWriterSize(c.nc, connBuffer)
		defer c.nc.Close()
		for {
			select {
			case f, ok := <-c.out:
				if !ok {
					bw.Flush()
					return
				}
				if _, err := bw.Write(f); err != nil {
					// The reader sees the socket fail and reports it.
					c.nc.Close()
					drain(c.out)
					return
				}
				if len(c.out) == 0 {
					if err := bw.Flush(); err != nil {
						c.nc.Close()
						drain(c.out)
						return
					}
				}
			case <-s.quit:
				return
			}
		}
	}()
}

// drainEvents handles the events queued now.
func (s *Server) drainEvents() {
	for n := len(s.events); n > 0; n-- {
		s.apply(s.handle(<-s.events))
	}
}

func drain(ch chan []byte) {
	for range ch {
	}
}

func (s *Server) loop() {
	defer s.wg.Done()
	tick := time.NewTicker(s.opts.Tick)
	defer tick.Stop()
	defer func() {
		for _, c := range s.conns {
			if !c.closed {
				c.closed = true
				close(c.out)
			}
			c.nc.Close()
		}
	}()
	s.dialIfWanted()
	for {
		var rd coord.Ready
		select {
		case ev := <-s.events:
			rd = s.handle(ev)
		case <-tick.C:
			// What the readers posted before the tick is handled first:
			// under load the queue is long, and a frame waiting in it
			// must not count as silence.
			s.drainEvents()
			rd = s.sm.Tick(s.now())
		case f := <-s.calls:
			f()
			continue
		case <-s.quit:
			return
		}
		s.apply(rd)
	}
}

func (s *Server) handle(ev event) coord.Ready {
	switch ev.kind {
	case evConnect:
		if ev.c.id != coord.Upstream {
			s.nextID++
			ev.c.id = coord.ConnID(s.nextID)
		} else {
			s.upDialing = false
		}
		s.conns[ev.c.id] = ev.c
		limit := s.opts.ReadLimit
		if ev.c.id == coord.Upstream {
			limit = s.opts.UpstreamLimit
		}
		s.start1(ev.c, limit)
		return s.sm.Connect(ev.c.id, s.now())
	case evReceive:
		if s.conns[ev.c.id] != ev.c {
			return coord.Ready{} // closed by the machine; a late frame
		}
		if ev.c.id == coord.Upstream {
			s.upBackoff.Reset() // the coordinator answers
		}
		return s.sm.Receive(ev.c.id, ev.msg, s.now())
	default:
		// Lost from the other side (or the network), not closed here: a
		// connection this server closed itself is no longer registered.
		lost := s.conns[ev.c.id] == ev.c
		if lost {
			s.forget(ev.c)
		} else if ev.c.id == coord.Upstream {
			// The machine closed it and knows; the id may already name
			// the connection dialled since, which this end is not.
			return coord.Ready{}
		}
		// A lost coordinator is dialled again (apply, dialIfWanted) if
		// the relay still wants it.
		return s.sm.Disconnect(ev.c.id, ev.err, s.now())
	}
}

// forget drops a connection and lets its writer finish and close it.
func (s *Server) forget(c *netConn) {
	delete(s.conns, c.id)
	if !c.closed {
		c.closed = true
		close(c.out)
	}
}

// apply carries out a batch of actions.
func (s *Server) apply(rd coord.Ready) {
	for _, snd := range rd.Sends {
		c := s.conns[snd.Conn]
		if c == nil || c.closed {
			continue
		}
		f, ok := s.frames[snd.Msg]
		if !ok {
			var err error
			f, err = wire.Encode(snd.Msg)
			if err != nil {
				// A message the machine made but cannot be encoded is a
				// bug; losing the connection is what the peer will see.
				f = nil
			}
			s.frames[snd.Msg] = f
		}
		if f == nil {
			s.forget(c)
			c.nc.Close()
			continue
		}
		select {
		case c.out <- f:
		default:
			// The client does not read: drop it; the machine learns of it
			// as of any lost connection.
			s.forget(c)
			c.nc.Close()
		}
	}
	clear(s.frames)
	for _, cl := range rd.Closes {
		if c := s.conns[cl.Conn]; c != nil {
			s.forget(c)
		}
	}
	s.dialIfWanted()
	if s.opts.OnNotice != nil {
		for _, n := range rd.Notices {
			s.opts.OnNotice(n)
		}
	}
}

// dialUpstream connects a relay to the coordinator, retrying with jittered
// exponential back-off (002 §III-C: thousands of nodes must not dial in
// lockstep).
func (s *Server) dialUpstream(wait time.Duration) {
	defer s.wg.Done()
	if !tcp.Sleep(s.quit, wait) {
		return
	}
	ctx, cancel := s.quitContext()
	defer cancel()
	nc, err := dialBackoff(ctx, s.opts.Dial, s.opts.Upstream, s.opts.Rand)
	if err != nil {
		return
	}
	tcp.NoDelay(nc)
	if s.opts.TLS != nil {
		nc = tls.Client(nc, s.opts.TLS.Client)
	}
	c := &netConn{id: coord.Upstream, nc: nc, out: make(chan []byte, s.opts.QueueFrames)}
	s.post(event{kind: evConnect, c: c})
}

// dialIfWanted starts dialling the coordinator when a relay has no
// connection to it, none is being dialled, and the relay wants one
// (coord.Relay.WantsUpstream): first once its node's ranks have all
// joined, so that its Hello is the first thing on the connection, then
// after the connection is lost or given up while the job still needs it.
// A relay that closed upstream because its job no longer needs it is not
// dialled for: that would hand the coordinator a connection nobody uses.
func (s *Server) dialIfWanted() {
	if s.opts.Upstream == "" || s.upDialing || s.conns[coord.Upstream] != nil {
		return
	}
	if r, ok := s.sm.(interface{ WantsUpstream() bool }); ok && !r.WantsUpstream() {
		return
	}
	select {
	case <-s.quit:
		return
	default:
	}
	var wait time.Duration
	if s.upDialled {
		// No dial goroutine runs now, so the loop may use the Rand.
		wait = s.upBackoff.Next(s.opts.Rand.Int64N)
	}
	s.upDialing, s.upDialled = true, true
	s.wg.Add(1)
	go s.dialUpstream(wait)
}

// quitContext is a context done when the server closes (or cancel is
// called).
func (s *Server) quitContext() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-s.quit:
		case <-ctx.Done():
		}
		cancel()
	}()
	return ctx, cancel
}

// Backoff bounds of dialBackoff.
const (
	dialFirst = 10 * time.Millisecond
	dialMax   = 2 * time.Second
)

// dialBackoff dials addr until it succeeds or ctx is done, waiting a
// jittered, doubling delay between attempts.
func dialBackoff(ctx context.Context, dial DialFunc, addr string, rng *rand.Rand) (net.Conn, error) {
	if dial == nil {
		var d net.Dialer
		dial = func(ctx context.Context, addr string) (net.Conn, error) { return d.DialContext(ctx, "tcp", addr) }
	}
	b := tcp.Backoff{First: dialFirst, Max: dialMax}
	for {
		nc, err := dial(ctx, addr)
		if err == nil {
			return nc, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("dial %s: %w (last error: %v)", addr, ctx.Err(), err)
		}
		if !tcp.Sleep(ctx.Done(), b.Next(rng.Int64N)) {
			return nil, fmt.Errorf("dial %s: %w (last error: %v)", addr, ctx.Err(), err)
		}
	}
}

// connBuffer is the read and write buffer of a connection: requests and
// most answers are small, and a job of 16K ranks has 16K of each on the
// coordinator or a node's sub-coordinator.
const connBuffer = 4 << 10
