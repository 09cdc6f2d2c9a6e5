package peer

import (
	"context"
	"fmt"
	"sync"

	"github.com/ckpt/ckpt/internal/redundancy"
)

// channel is the application channel or one set channel of a Node: one
// outbound and one inbound stream slot per peer index.
type channel struct {
	n       *Node
	key     setKey
	members []int // job ranks by index; nil for the application channel
	me      int   // this Node's index
	size    int   // number of indices
	prefix  string
	opened  bool // under n.mu: the owner holds it (app, or OpenSet called)
	out     []*outSlot
	in      []*inSlot

	ctx       context.Context // done when the channel closes: stops dials and probes
	cancel    context.CancelFunc
	closed    chan struct{}
	closeOnce sync.Once
}

func newChannel(n *Node, members []int, me, size int, key setKey) *channel {
	ch := &channel{n: n, key: key, members: members, me: me, size: size, closed: make(chan struct{})}
	if members == nil {
		ch.prefix = fmt.Sprintf("peer: rank %d: ", n.rank)
	} else {
		ch.prefix = fmt.Sprintf("peer: rank %d, set epoch %d member %d: ", n.rank, key.epoch, me)
	}
	ch.ctx, ch.cancel = context.WithCancel(n.ctx)
	ch.out = make([]*outSlot, size)
	ch.in = make([]*inSlot, size)
	for i := range size {
		ch.out[i] = &outSlot{ch: ch, to: i}
		ch.in[i] = &inSlot{ch: ch, from: i}
	}
	return ch
}

// rank maps an index of the channel to a job rank.
func (ch *channel) rank(i int) int {
	if ch.members == nil {
		return i
	}
	return ch.members[i]
}

func (ch *channel) errf(format string, args ...any) error {
	return fmt.Errorf(ch.prefix+format, args...)
}

func (ch *channel) isClosed() bool {
	select {
	case <-ch.closed:
		return true
	default:
		return false
	}
}

func (ch *channel) checkPeer(op string, i int) error {
	if i < 0 || i >= ch.size || i == ch.me {
		return ch.errf("%s %d: not a peer (%d indices, this is %d)", op, i, ch.size, ch.me)
	}
	return nil
}

// close ends the channel: outbound streams are half-closed (peers read
// what was sent, then EOF), inbound ones closed (peers' sends fail), and
// every pending call returns ErrClosed.
func (ch *channel) close() {
	ch.closeOnce.Do(func() {
		close(ch.closed)
		ch.cancel()
		for _, s := range ch.out {
			s.closeWrite()
		}
		for _, s := range ch.in {
			s.closeAll()
		}
	})
}

// send is Transport.Send on this channel.
func (ch *channel) send(ctx context.Context, to int, tag uint64, msg []byte) error {
	if err := ch.checkPeer("send to", to); err != nil {
		return err
	}
	if ch.isClosed() {
		return ch.errf("send to %d: %w", to, redundancy.ErrClosed)
	}
	s := ch.out[to]
	s.mu.Lock()
	defer s.mu.Unlock()
	oc, err := s.conn(ctx)
	if err == nil && int64(len(msg)) > oc.maxFrame {
		return ch.errf("send to %d: %w: %d bytes, the limit is %d", to, ErrTooLarge, len(msg), oc.maxFrame)
	}
	if err == nil {
		err = oc.acquire(ctx, int64(len(msg)))
	}
	if err == nil {
		err = oc.write(ctx, header{typ: frameData, a: uint32(len(msg)), b: tag}, msg)
	}
	if err != nil {
		if ch.isClosed() {
			err = redundancy.ErrClosed
		}
		return ch.errf("send to %d: %w", to, err)
	}
	return nil
}

// recv is Transport.Recv on this channel.
func (ch *channel) recv(ctx context.Context, from int, tag uint64, buf []byte) ([]byte, error) {
	if err := ch.checkPeer("receive from", from); err != nil {
		return nil, err
	}
	s := ch.in[from]
	s.mu.Lock()
	for {
		if ch.isClosed() {
			s.mu.Unlock()
			return nil, ch.errf("receive from %d: %w", from, redundancy.ErrClosed)
		}
		if i := s.next(); i >= 0 {
			e := s.take(i)
			if e.kind == entEOF {
				s.mu.Unlock()
				return nil, ch.errf("receive from %d: %w", from, e.err)
			}
			out := e.data
			if cap(buf) >= len(e.data) {
				out = append(buf[:0], e.data...)
				s.putBufLocked(e.data)
			} // else the queue's buffer becomes the caller's
			m, b := s.consumedLocked(e.ic, len(e.data))
			s.mu.Unlock()
			e.ic.sendCredit(m, b)
			return ch.checkTag(from, e.tag, tag, out)
		}
		if len(s.conns) == 0 {
			// Nothing can arrive until the peer connects: make sure we
			// notice if it is dead.
			if err := ch.out[from].liveness(); err != nil {
				s.mu.Unlock()
				return nil, ch.errf("receive from %d: %w", from, err)
			}
		}
		// Wait, offering buf to the reader so that the next message lands
		// in it directly.
		p := &s.post
		p.buf, p.state = buf, postWaiting
		if p.done == nil {
			p.done = make(chan struct{}, 1)
		}
		s.posting = true
		notify := s.waitChLocked()
		s.mu.Unlock()
		state, err := s.await(ctx, notify)
		// s.mu is held again.
		switch {
		case err != nil:
			s.mu.Unlock()
			return nil, ch.errf("receive from %d: %w", from, err)
		case state == postDone:
			n, ptag, ic := p.n, p.tag, p.ic
			p.ic = nil
			m, b := s.consumedLocked(ic, n)
			s.mu.Unlock()
			ic.sendCredit(m, b)
			return ch.checkTag(from, ptag, tag, buf[:n])
		}
		// Woken by the queue, or the connection died mid-message: look again.
	}
}

func (ch *channel) checkTag(from int, got, want uint64, out []byte) ([]byte, error) {
	if got != want {
		return nil, ch.errf("receive from %d: %w: got %s, want %s", from, redundancy.ErrTagMismatch,
			redundancy.TagString(got), redundancy.TagString(want))
	}
	return out, nil
}
