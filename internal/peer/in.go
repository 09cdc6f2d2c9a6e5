package peer

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/ckpt/ckpt/internal/redundancy"
)

// readBufSize is the inbound reader's buffer: small frames are read many
// per system call; a large payload bypasses it and is read straight into
// its destination.
const readBufSize = 64 << 10

// aLongTimeAgo is a deadline that has passed: setting it interrupts a
// blocked read or write at once.
var aLongTimeAgo = time.Unix(1, 0)

// Entry kinds of an inbound queue.
const (
	entData   = iota
	entMarker // a drain marker; only Drain removes it
	entEOF    // a connection from the peer ended; Recv reports err once
)

type entry struct {
	kind uint8
	tag  uint64
	data []byte
	ic   *inConn // where the credit goes; nil for injected messages
	err  error   // entEOF
}

// States of a posted receive buffer.
const (
	postWaiting   = iota // Recv waits; the reader may claim buf
	postFilling          // the reader reads a message into buf
	postDone             // buf holds the message (n bytes, tag)
	postFailed           // the connection died while filling
	postAbandoned        // Recv gave up while filling: the reader moves the message to the queue
)

// posted is the buffer a waiting Recv offers to the reader. The reader
// signals done exactly once for every fill it claims, when it no longer
// touches buf.
type posted struct {
	buf   []byte
	state uint8
	n     int
	tag   uint64
	ic    *inConn // the connection that claimed it
	done  chan struct{}
}

// inSlot is the receiving end of one peer's stream on a channel: a queue
// fed by the readers of the peer's connections (one, unless the peer was
// relaunched) and by Inject.
type inSlot struct {
	ch   *channel
	from int

	mu      sync.Mutex
	q       []entry
	conns   []*inConn // live connections
	notify  chan struct{}
	post    posted
	posting bool // post is offered by a waiting Recv
	free    [][]byte
	freeCap int // bytes held by free
}

// next is the index of the first entry Recv may take (markers are
// Drain's), or -1.
func (s *inSlot) next() int {
	for i, e := range s.q {
		if e.kind != entMarker {
			return i
		}
	}
	return -1
}

func (s *inSlot) take(i int) entry {
	e := s.q[i]
	if i == 0 {
		s.q[0] = entry{}
		s.q = s.q[1:]
	} else {
		s.q = slices.Delete(s.q, i, i+1)
	}
	return e
}

func (s *inSlot) pushLocked(e entry) {
	s.q = append(s.q, e)
	s.wakeLocked()
}

func (s *inSlot) pushFrontLocked(es ...entry) {
	s.q = slices.Insert(s.q, 0, es...)
	s.wakeLocked()
}

// waitChLocked returns a channel closed at the slot's next change.
func (s *inSlot) waitChLocked() chan struct{} {
	if s.notify == nil {
		s.notify = make(chan struct{})
	}
	return s.notify
}

func (s *inSlot) wakeLocked() {
	if s.notify != nil {
		close(s.notify)
		s.notify = nil
	}
}

func (s *inSlot) wake() {
	s.mu.Lock()
	s.wakeLocked()
	s.mu.Unlock()
}

func (s *inSlot) getBufLocked(n int) []byte {
	for i := len(s.free) - 1; i >= 0; i-- {
		if b := s.free[i]; cap(b) >= n {
			s.free = slices.Delete(s.free, i, i+1)
			s.freeCap -= cap(b)
			return b[:n]
		}
	}
	return make([]byte, n)
}

// putBufLocked keeps a buffer for reuse, up to a window's worth of them.
func (s *inSlot) putBufLocked(b []byte) {
	if cap(b) == 0 {
		return
	}
	for len(s.free) > 0 && (len(s.free) >= s.ch.n.o.depth || s.freeCap+cap(b) > s.ch.n.o.window) {
		s.freeCap -= cap(s.free[0])
		s.free[0] = nil
		s.free = s.free[1:]
	}
	if cap(b) <= s.ch.n.o.window {
		s.free = append(s.free, b[:0])
		s.freeCap += cap(b)
	}
}

// consumedLocked records that the application (or Drain) took a message
// of size bytes that came over ic, and returns the credit to send back
// now, if any: at once when the sender waits for it, else in batches of
// half the window.
func (s *inSlot) consumedLocked(ic *inConn, size int) (msgs, bytes int64) {
	if ic == nil || ic.dead {
		return 0, 0
	}
	ic.retMsgs++
	ic.retBytes += int64(size)
	if ic.want || 2*ic.retMsgs >= ic.win.depth || 2*ic.retBytes >= ic.win.bytes {
		return ic.takeCreditLocked()
	}
	return 0, 0
}

// attach adds a connection that passed the handshake; false if the
// channel has closed.
func (s *inSlot) attach(ic *inConn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch.isClosed() {
		return false
	}
	s.conns = append(s.conns, ic)
	return true
}

// closeAll closes the slot's connections (the channel is closing).
func (s *inSlot) closeAll() {
	s.mu.Lock()
	for _, ic := range s.conns {
		ic.c.Close()
	}
	s.wakeLocked()
	s.mu.Unlock()
}

// await waits for the posted receive to complete, the slot to change,
// ctx, or the channel to close. It returns with s.mu held: postDone
// (buf holds a message), another state (look at the queue again), or an
// error after withdrawing the posted buffer.
func (s *inSlot) await(ctx context.Context, notify chan struct{}) (uint8, error) {
	p := &s.post
	for {
		select {
		case <-p.done:
			s.mu.Lock()
			s.posting = false
			p.buf = nil
			return p.state, nil
		case <-notify:
			s.mu.Lock()
			if p.state == postWaiting {
				s.posting = false
				p.buf = nil
				return postWaiting, nil
			}
			// The reader has claimed buf: only its signal matters now.
			notify = nil
			s.mu.Unlock()
		case <-ctx.Done():
			return s.withdraw(ctx.Err())
		case <-s.ch.closed:
			return s.withdraw(redundancy.ErrClosed)
		}
	}
}

// withdraw takes the posted buffer back from the reader, interrupting a
// fill in progress, so that the caller's memory is never touched after
// Recv returns. A message that was complete is delivered after all.
func (s *inSlot) withdraw(err error) (uint8, error) {
	p := &s.post
	s.mu.Lock()
	switch p.state {
	case postWaiting:
	case postFilling:
		p.state = postAbandoned
		c := p.ic.c
		s.mu.Unlock()
		c.SetReadDeadline(aLongTimeAgo)
		<-p.done
		s.mu.Lock()
		if p.state == postDone { // finished before it saw the abandonment
			err = nil
		}
	default:
		s.mu.Unlock()
		<-p.done
		s.mu.Lock()
		if p.state == postDone {
			err = nil
		}
	}
	s.posting = false
	p.buf = nil
	if err == nil {
		return postDone, nil
	}
	return p.state, err
}

// claimLocked hands the posted buffer to a reader about to read a
// message of size bytes, if a Recv waits with room for it and nothing is
// queued ahead of it.
func (s *inSlot) claimLocked(ic *inConn, size int) *posted {
	p := &s.post
	if !s.posting || p.state != postWaiting || len(s.q) != 0 || cap(p.buf) < size {
		return nil
	}
	p.state = postFilling
	p.ic = ic
	return p
}

// inConn is one inbound connection: its reader and its flow control.
type inConn struct {
	slot *inSlot
	c    conn
	br   *bufio.Reader

	// Under slot.mu.
	win               window
	retMsgs, retBytes int64 // consumed, not yet credited
	want              bool  // the sender waits for credit
	dead              bool

	wmu  sync.Mutex
	cbuf [hdrLen]byte
}

func newInConn(s *inSlot, c conn) *inConn {
	o := s.ch.n.o
	return &inConn{
		slot: s, c: c, br: bufio.NewReaderSize(c, readBufSize),
		win: window{depth: int64(o.depth), bytes: int64(o.window)},
	}
}

func (ic *inConn) takeCreditLocked() (msgs, bytes int64) {
	msgs, bytes = ic.retMsgs, ic.retBytes
	ic.retMsgs, ic.retBytes = 0, 0
	ic.win.release(msgs, bytes)
	ic.want = false
	return msgs, bytes
}

// sendCredit returns credit to the sender. Errors are left to the reader,
// which sees the connection fail too.
func (ic *inConn) sendCredit(msgs, bytes int64) {
	if ic == nil || msgs == 0 && bytes == 0 {
		return
	}
	ic.wmu.Lock()
	putHeader(ic.cbuf[:], header{typ: frameCredit, a: uint32(msgs), b: uint64(bytes)})
	ic.c.Write(ic.cbuf[:])
	ic.wmu.Unlock()
}

// run reads the connection until it ends, then queues its end.
func (ic *inConn) run() {
	ic.end(ic.loop())
}

// end removes the connection from its slot and queues err (which wraps
// ErrPeerClosed) for Recv, unless the channel itself is closing.
func (ic *inConn) end(err error) {
	s := ic.slot
	s.mu.Lock()
	if i := slices.Index(s.conns, ic); i >= 0 {
		s.conns = slices.Delete(s.conns, i, i+1)
	}
	if !ic.dead {
		ic.dead = true
		if !s.ch.isClosed() {
			s.pushLocked(entry{kind: entEOF, err: err})
		}
	}
	s.wakeLocked()
	s.mu.Unlock()
	ic.c.Close()
}

func isTimeout(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }

// readFull reads len(p) bytes. A deadline error is an interruption meant
// for a posted fill that has already ended: clear it and go on.
func (ic *inConn) readFull(p []byte) (int, error) {
	got := 0
	for got < len(p) {
		m, err := ic.br.Read(p[got:])
		got += m
		if err != nil {
			if isTimeout(err) {
				ic.c.SetReadDeadline(time.Time{})
				continue
			}
			return got, err
		}
	}
	return got, nil
}

// streamErr turns a read error into what Recv reports: the peer closed
// (cleanly between frames, or cut off in the middle of one).
func streamErr(err error, midFrame bool) error {
	if errors.Is(err, io.EOF) && !midFrame {
		return fmt.Errorf("%w: the peer closed the stream", redundancy.ErrPeerClosed)
	}
	return fmt.Errorf("%w: %v", redundancy.ErrPeerClosed, err)
}

// loop reads frames until the connection fails or breaks the protocol.
func (ic *inConn) loop() error {
	s := ic.slot
	n := s.ch.n
	var hb [hdrLen]byte
	for {
		if got, err := ic.readFull(hb[:]); err != nil {
			return streamErr(err, got > 0)
		}
		h, err := parseInbound(hb[:], n.o.maxFrame)
		if err != nil {
			n.protocolError(ic.c, err)
			return fmt.Errorf("%w: %w", redundancy.ErrPeerClosed, err)
		}
		switch h.typ {
		case frameData:
			size := int(h.a)
			s.mu.Lock()
			if err := ic.win.admit(int64(size)); err != nil {
				s.mu.Unlock()
				n.protocolError(ic.c, err)
				return fmt.Errorf("%w: %w", redundancy.ErrPeerClosed, err)
			}
			if p := s.claimLocked(ic, size); p != nil {
				s.mu.Unlock()
				if err := ic.fill(p, size, h.b); err != nil {
					return err
				}
				continue
			}
			buf := s.getBufLocked(size)
			s.mu.Unlock()
			if _, err := ic.readFull(buf); err != nil {
				return streamErr(err, true)
			}
			s.mu.Lock()
			s.pushLocked(entry{kind: entData, tag: h.b, data: buf, ic: ic})
			s.mu.Unlock()
		case frameMarker:
			s.mu.Lock()
			s.pushLocked(entry{kind: entMarker})
			s.mu.Unlock()
		case frameBlocked:
			s.mu.Lock()
			ic.want = true
			var m, b int64
			if ic.retMsgs > 0 {
				m, b = ic.takeCreditLocked()
			}
			s.mu.Unlock()
			ic.sendCredit(m, b)
		}
	}
}

// fill reads a message straight into a waiting Recv's buffer. If the
// Recv gives up meanwhile (it sets a read deadline to interrupt us), the
// message moves to a queue buffer and goes to the head of the queue.
func (ic *inConn) fill(p *posted, size int, tag uint64) error {
	s := ic.slot
	dst := p.buf[:size]
	got := 0
	for {
		abandoned := false
		if got < size {
			m, err := ic.br.Read(dst[got:])
			got += m
			if err != nil && !isTimeout(err) {
				s.mu.Lock()
				p.state = postFailed
				s.mu.Unlock()
				p.done <- struct{}{}
				return streamErr(err, true)
			}
			if err != nil {
				ic.c.SetReadDeadline(time.Time{})
				s.mu.Lock()
				abandoned = p.state == postAbandoned
				s.mu.Unlock()
			}
			if !abandoned && got < size {
				continue
			}
		}
		s.mu.Lock()
		if p.state == postAbandoned {
			buf := s.getBufLocked(size)
			copy(buf, dst[:got])
			s.mu.Unlock()
			p.done <- struct{}{} // dst is the caller's again
			if _, err := ic.readFull(buf[got:]); err != nil {
				return streamErr(err, true)
			}
			s.mu.Lock()
			s.pushFrontLocked(entry{kind: entData, tag: tag, data: buf, ic: ic})
			s.mu.Unlock()
			return nil
		}
		p.state, p.n, p.tag = postDone, size, tag
		s.mu.Unlock()
		p.done <- struct{}{}
		return nil
	}
}
