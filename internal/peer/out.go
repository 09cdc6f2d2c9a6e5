package peer

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/ckpt/ckpt/internal/redundancy"
)

// smallMsg: messages up to this size are copied behind their header and
// written with one system call; larger ones are written in place, header
// and message together with writev.
const smallMsg = 32 << 10

// outSlot is the sending end of the stream to one peer on a channel.
type outSlot struct {
	ch *channel
	to int
	mu sync.Mutex // serializes the stream's writers: Send, Drain's marker, dialling

	marked bool // under mu: the last Drain sent a marker

	smu     sync.Mutex // guards the fields below
	oc      *outConn   // the current connection, possibly dead
	failed  error      // the last dial failed; cleared by the next Send
	probing bool
	closing bool // the channel is closing: no new connections
}

// conn returns the live connection, dialling if there is none. A dead
// connection is reported once, to this call, and forgotten: the next
// Send dials again, which reaches a relaunched peer at its new address.
func (s *outSlot) conn(ctx context.Context) (*outConn, error) {
	s.smu.Lock()
	oc := s.oc
	s.smu.Unlock()
	if oc != nil {
		if err := oc.deadErr(); err != nil {
			s.smu.Lock()
			if s.oc == oc {
				s.oc = nil
			}
			s.smu.Unlock()
			return nil, err
		}
		return oc, nil
	}
	return s.connect(ctx)
}

// connect dials the peer and records the outcome; s.mu is held.
func (s *outSlot) connect(ctx context.Context) (*outConn, error) {
	oc, err := s.dial(ctx)
	s.smu.Lock()
	if err == nil && s.closing {
		oc.c.Close() // its credit reader untracks it
		oc, err = nil, redundancy.ErrClosed
	}
	s.oc = oc
	s.failed = nil
	if err != nil && ctx.Err() == nil && !s.ch.isClosed() {
		s.failed = err
	}
	s.smu.Unlock()
	if err != nil {
		s.ch.in[s.to].wake()
	}
	return oc, err
}

// liveness is for a Recv that waits for a peer with no inbound
// connection: nil while the peer may still send (an outbound connection
// lives or is being made; one is started if none exists), the error that
// shows it is gone otherwise.
func (s *outSlot) liveness() error {
	s.smu.Lock()
	defer s.smu.Unlock()
	switch {
	case s.oc != nil:
		return s.oc.deadErr()
	case s.failed != nil:
		return s.failed
	case s.probing || s.closing:
		return nil
	}
	n := s.ch.n
	if !n.goAdd() {
		return nil // closing: the caller sees it
	}
	s.probing = true
	go func() {
		defer n.wg.Done()
		s.mu.Lock()
		s.smu.Lock()
		need := s.oc == nil
		s.smu.Unlock()
		if need {
			s.connect(s.ch.ctx)
		}
		s.mu.Unlock()
		s.smu.Lock()
		s.probing = false
		s.smu.Unlock()
		s.ch.in[s.to].wake()
	}()
	return nil
}

// closeWrite half-closes the stream: the peer reads what was sent, then
// EOF. The connection closes when the peer closes its end (or the Node
// closes).
func (s *outSlot) closeWrite() {
	s.smu.Lock()
	s.closing = true
	oc := s.oc
	s.smu.Unlock()
	if oc != nil {
		oc.c.CloseWrite()
	}
}

// outConn is one outbound connection and its flow control: credit in
// messages and bytes, as announced by the receiver and returned by it as
// the application consumes.
type outConn struct {
	slot                    *outSlot
	c                       conn
	depth, window, maxFrame int64

	mu      sync.Mutex
	msgs    int64 // messages we may send
	bytes   int64 // bytes we may send (negative after a message larger than the window)
	blocked bool  // we told the receiver we wait for credit
	err     error
	dead    chan struct{} // closed with err set
	wake    chan struct{} // credit arrived

	hdr     [hdrLen]byte
	scratch []byte
}

// dial looks the peer up, connects and shakes hands; the result's credit
// reader is running.
func (s *outSlot) dial(ctx context.Context) (*outConn, error) {
	ch, n := s.ch, s.ch.n
	rank := ch.rank(s.to)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(ch.ctx, cancel)()
	fail := func(err error) error {
		if ch.isClosed() {
			return redundancy.ErrClosed
		}
		return err
	}
	addr, err := n.res.Lookup(ctx, rank)
	if err != nil {
		return nil, fail(fmt.Errorf("look up rank %d: %w", rank, err))
	}
	d := net.Dialer{Timeout: n.o.dialTimeout}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fail(fmt.Errorf("dial rank %d at %s: %w", rank, addr, ctx.Err()))
		}
		return nil, fail(fmt.Errorf("%w: dial rank %d at %s: %v", redundancy.ErrPeerClosed, rank, addr, err))
	}
	var tc conn = c.(*net.TCPConn)
	c.(*net.TCPConn).SetNoDelay(true)
	if n.o.tls != nil {
		tc = tls.Client(c, n.o.tls.Client) // handshakes at the first write, in handshake's deadline
	}
	if !n.track(tc, true) {
		tc.Close()
		return nil, redundancy.ErrClosed
	}
	rep, err := s.handshake(ctx, tc, rank)
	if err == nil {
		switch rep.status {
		case statusRefused:
			err = fmt.Errorf("%w: rank %d at %s refused the handshake (wrong token, rank or set)", ErrRefused, rank, addr)
		case statusClosed:
			err = fmt.Errorf("%w: rank %d at %s has closed the channel", redundancy.ErrPeerClosed, rank, addr)
		}
	}
	if err != nil {
		n.untrack(tc)
		tc.Close()
		if ctx.Err() != nil {
			err = fmt.Errorf("handshake with rank %d: %w", rank, ctx.Err())
		}
		return nil, fail(err)
	}
	oc := &outConn{
		slot: s, c: tc,
		depth: int64(rep.depth), window: int64(rep.window), maxFrame: int64(rep.maxFrame),
		msgs: int64(rep.depth), bytes: int64(rep.window),
		dead: make(chan struct{}), wake: make(chan struct{}, 1),
	}
	if !n.goAdd() {
		n.untrack(tc)
		tc.Close()
		return nil, redundancy.ErrClosed
	}
	go oc.readCredits()
	return oc, nil
}

// handshake sends the hello and reads the reply, within the handshake
// timeout and ctx.
func (s *outSlot) handshake(ctx context.Context, c conn, rank int) (reply, error) {
	ch, n := s.ch, s.ch.n
	h := hello{kind: kindApp, token: n.token, from: n.rank, to: rank}
	if ch.members != nil {
		h.kind, h.epoch, h.members = kindSet, ch.key.epoch, ch.members
	}
	c.SetDeadline(time.Now().Add(n.o.handshakeTimeout))
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(aLongTimeAgo) })
	defer stop()
	if _, err := c.Write(appendHello(nil, h)); err != nil {
		return reply{}, fmt.Errorf("%w: handshake with rank %d: %v", redundancy.ErrPeerClosed, rank, err)
	}
	var b [replyLen]byte
	if _, err := io.ReadFull(c, b[:]); err != nil {
		return reply{}, fmt.Errorf("%w: handshake with rank %d: %v", redundancy.ErrPeerClosed, rank, err)
	}
	r, err := parseReply(b)
	if err != nil {
		n.protocolError(c, err)
		return r, err
	}
	if !stop() {
		return r, ctx.Err()
	}
	c.SetDeadline(time.Time{})
	return r, nil
}

// deadErr is the error that ended the connection, or nil.
func (oc *outConn) deadErr() error {
	oc.mu.Lock()
	defer oc.mu.Unlock()
	return oc.err
}

// fail marks the connection dead (the first error sticks) and wakes a
// Recv that watches the peer through it.
func (oc *outConn) fail(err error) {
	oc.mu.Lock()
	first := oc.err == nil
	if first {
		oc.err = err
		close(oc.dead)
	}
	oc.mu.Unlock()
	if first {
		oc.slot.ch.in[oc.slot.to].wake()
	}
}

// readCredits reads the return direction: credit, and the end that tells
// the peer is gone.
func (oc *outConn) readCredits() {
	n := oc.slot.ch.n
	defer n.wg.Done()
	var p [hdrLen]byte
	var err error
	for {
		if _, rerr := io.ReadFull(oc.c, p[:]); rerr != nil {
			err = fmt.Errorf("%w: %v", redundancy.ErrPeerClosed, rerr)
			break
		}
		h, perr := parseCredit(p[:])
		if perr == nil {
			perr = oc.credit(int64(h.a), int64(h.b))
		}
		if perr != nil {
			n.protocolError(oc.c, perr)
			err = fmt.Errorf("%w: %w", redundancy.ErrPeerClosed, perr)
			break
		}
	}
	oc.fail(err)
	oc.c.Close()
	n.untrack(oc.c)
}

func (oc *outConn) credit(msgs, bytes int64) error {
	oc.mu.Lock()
	oc.msgs += msgs
	oc.bytes += bytes
	bad := oc.msgs > oc.depth || oc.bytes > oc.window
	oc.blocked = false
	oc.mu.Unlock()
	if bad {
		return fmt.Errorf("%w: credit beyond the window", ErrMalformed)
	}
	select {
	case oc.wake <- struct{}{}:
	default:
	}
	return nil
}

// acquire takes the credit for a message of size bytes, waiting for it;
// slot.mu is held. A message larger than the window goes when nothing is
// outstanding.
func (oc *outConn) acquire(ctx context.Context, size int64) error {
	for {
		oc.mu.Lock()
		if oc.err != nil {
			err := oc.err
			oc.mu.Unlock()
			return err
		}
		if oc.msgs > 0 && (oc.bytes == oc.window || size <= oc.bytes) {
			oc.msgs--
			oc.bytes -= size
			oc.mu.Unlock()
			return nil
		}
		tell := !oc.blocked
		oc.blocked = true
		oc.mu.Unlock()
		if tell {
			if err := oc.write(ctx, header{typ: frameBlocked}, nil); err != nil {
				return err
			}
		}
		select {
		case <-oc.wake:
		case <-oc.dead:
		case <-ctx.Done():
			return ctx.Err()
		case <-oc.slot.ch.closed:
			return redundancy.ErrClosed
		}
	}
}

// cancelWrite interrupts a write when its context is done.
type cancelWrite struct {
	mu          sync.Mutex
	c           conn
	done, fired bool
}

func (w *cancelWrite) fire() {
	w.mu.Lock()
	if !w.done {
		w.fired = true
		w.c.SetWriteDeadline(aLongTimeAgo)
	}
	w.mu.Unlock()
}

func (w *cancelWrite) finish() (fired bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.done = true
	return w.fired
}

var errCut = errors.New("a cancelled send cut the stream; it is closed")

// write writes one frame: header h and then msg; slot.mu is held.
func (oc *outConn) write(ctx context.Context, h header, msg []byte) error {
	putHeader(oc.hdr[:], h)
	var w *cancelWrite
	var stop func() bool
	if ctx.Done() != nil {
		w = &cancelWrite{c: oc.c}
		stop = context.AfterFunc(ctx, w.fire)
	}
	var err error
	if len(msg) <= smallMsg {
		b := append(append(oc.scratch[:0], oc.hdr[:]...), msg...)
		oc.scratch = b[:0]
		_, err = oc.c.Write(b)
	} else {
		bufs := net.Buffers{oc.hdr[:], msg}
		_, err = bufs.WriteTo(oc.c)
	}
	if w != nil {
		stop()
		if w.finish() {
			if err == nil {
				oc.c.SetWriteDeadline(time.Time{})
			} else {
				// Part of the frame may have gone: the stream cannot go on.
				oc.fail(errCut)
				oc.c.Close()
				return ctx.Err()
			}
		}
	}
	if err != nil {
		if oc.slot.ch.isClosed() {
			return redundancy.ErrClosed
		}
		err = fmt.Errorf("%w: %v", redundancy.ErrPeerClosed, err)
		oc.fail(err)
		oc.c.Close()
		return err
	}
	return nil
}
