package peer

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/ckpt/ckpt/internal/fields"
	"github.com/ckpt/ckpt/internal/group"
	"github.com/ckpt/ckpt/internal/redundancy"
)

// Pending is an application message that was in flight at a checkpoint:
// sent by rank From, received by the transport, not yet by the
// application. Drain returns them, the caller saves them with the
// checkpoint, and Inject delivers them again after a restart.
type Pending struct {
	From int
	Tag  uint64
	Data []byte
}

// ErrDrainAborted: some rank could not complete the drain (a peer failed,
// or its context ended); every rank's Drain fails, and the checkpoint
// must not be taken.
var ErrDrainAborted = errors.New("peer: drain aborted")

// Drain collects the application messages in flight to this rank, for a
// checkpoint. It is a collective call: every rank of g (the job's group;
// g.Rank() and g.Size() must match the Node) calls it at the same point,
// after it has stopped sending application messages and with no Send or
// Recv of the application channel in progress. Each rank sends a marker
// on every outbound application connection, the ranks exchange (through
// g.AllGather) which peers each sent a marker to, and each rank reads
// every inbound stream that carries one up to its marker. The messages
// before the markers that the application has not received are removed
// from the receive queues and returned, grouped by sender in rank order,
// each sender's in the order sent; Data belongs to the caller. After
// Drain the application channel works as before; messages sent after a
// peer's Drain stay queued behind its marker.
//
// Every failure returns an error wrapping ErrDrainAborted and leaves the
// receive queues as they were but for the markers: nothing is lost. A
// failure before the all-gather (a dead connection, a closed Node) fails
// every rank's Drain; one after it (a peer dying while this rank reads
// its marker) only the ranks that see it, so the caller must still agree
// with the others before it commits the checkpoint (group.AllAgree). An
// error of the all-gather itself is returned as is.
func (n *Node) Drain(ctx context.Context, g group.Group) ([]Pending, error) {
	if g.Rank() != n.rank || g.Size() != n.size {
		return nil, fmt.Errorf("peer: rank %d of %d: drain with a group of rank %d of %d", n.rank, n.size, g.Rank(), g.Size())
	}
	ch := n.app
	contrib := make([]byte, 1+(n.size+7)/8)
	var failure error
	for to := range n.size {
		if to == n.rank {
			continue
		}
		if err := ch.out[to].mark(ctx); err != nil {
			failure = errors.Join(failure, fmt.Errorf("marker to rank %d: %w", to, err))
		} else if ch.out[to].marked {
			contrib[1+to/8] |= 1 << (to % 8)
		}
	}
	if failure != nil {
		contrib[0] = 1
	}
	all, err := g.AllGather(ctx, contrib)
	if err != nil {
		return nil, fmt.Errorf("peer: rank %d: drain: %w", n.rank, err)
	}
	if len(all) != n.size {
		return nil, fmt.Errorf("peer: rank %d: drain: %d contributions for %d ranks", n.rank, len(all), n.size)
	}
	abort := failure != nil
	var failed []int
	for r, c := range all {
		if len(c) != len(contrib) {
			return nil, fmt.Errorf("peer: rank %d: drain: rank %d's contribution has %d bytes, want %d", n.rank, r, len(c), len(contrib))
		}
		if c[0] != 0 {
			abort = true
			failed = append(failed, r)
		}
	}
	var pending []Pending
	for from := range n.size {
		c := all[from]
		if from == n.rank || c[1+n.rank/8]&(1<<(n.rank%8)) == 0 {
			continue
		}
		got, err := ch.in[from].drain(ctx, !abort)
		if err != nil {
			failure = errors.Join(failure, fmt.Errorf("drain from rank %d: %w", from, err))
			if !abort {
				// Give back what was taken so far: nothing is lost.
				n.requeue(pending)
				pending, abort = nil, true
			}
			continue
		}
		pending = append(pending, got...)
	}
	switch {
	case failure != nil:
		return nil, ch.errf("%w: %w", ErrDrainAborted, failure)
	case abort:
		return nil, ch.errf("%w: ranks %v failed to drain", ErrDrainAborted, failed)
	}
	return pending, nil
}

// requeue puts messages Drain took back at the head of their queues.
func (n *Node) requeue(msgs []Pending) {
	by := map[int][]entry{}
	for _, p := range msgs {
		by[p.From] = append(by[p.From], entry{kind: entData, tag: p.Tag, data: p.Data})
	}
	for from, es := range by {
		s := n.app.in[from]
		s.mu.Lock()
		s.pushFrontLocked(es...)
		s.mu.Unlock()
	}
}

// mark sends the drain marker if the stream has a connection, recording
// in s.marked whether it did. A connection found dead may have lost
// messages: that is an error.
func (s *outSlot) mark(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.marked = false
	s.smu.Lock()
	oc := s.oc
	s.smu.Unlock()
	if oc == nil {
		return nil
	}
	if err := oc.deadErr(); err != nil {
		return err
	}
	if err := oc.write(ctx, header{typ: frameMarker}, nil); err != nil {
		return err
	}
	s.marked = true
	return nil
}

// drain waits for the slot's first marker and removes it; with capture,
// it also removes the messages queued before it and returns them.
func (s *inSlot) drain(ctx context.Context, capture bool) ([]Pending, error) {
	type credit struct {
		ic   *inConn
		m, b int64
	}
	s.mu.Lock()
	for {
		if s.ch.isClosed() {
			s.mu.Unlock()
			return nil, redundancy.ErrClosed
		}
		i := slices.IndexFunc(s.q, func(e entry) bool { return e.kind == entMarker })
		if i >= 0 {
			if !capture {
				s.take(i)
				s.mu.Unlock()
				return nil, nil
			}
			if j := slices.IndexFunc(s.q[:i], func(e entry) bool { return e.kind == entEOF }); j >= 0 {
				// An earlier connection from the peer failed unreported.
				err := s.q[j].err
				s.take(i)
				s.mu.Unlock()
				return nil, err
			}
			var out []Pending
			var credits []credit
			for _, e := range s.q[:i] {
				if e.kind != entData {
					continue
				}
				out = append(out, Pending{From: s.ch.rank(s.from), Tag: e.tag, Data: e.data})
				if m, b := s.consumedLocked(e.ic, len(e.data)); m != 0 || b != 0 {
					credits = append(credits, credit{ic: e.ic, m: m, b: b})
				}
			}
			clear(s.q[:i+1])
			s.q = s.q[i+1:]
			s.mu.Unlock()
			for _, c := range credits {
				c.ic.sendCredit(c.m, c.b)
			}
			return out, nil
		}
		if len(s.conns) == 0 {
			s.mu.Unlock()
			return nil, fmt.Errorf("%w: the stream ended before its drain marker", redundancy.ErrPeerClosed)
		}
		notify := s.waitChLocked()
		s.mu.Unlock()
		select {
		case <-notify:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-s.ch.closed:
		}
		s.mu.Lock()
	}
}

// Inject puts messages saved by Drain back at the head of the
// application channel's receive queues, so that Recv delivers them
// first, each sender's in the given order. Call it after a restart,
// before the application receives. Inject takes ownership of the Data
// slices.
func (n *Node) Inject(msgs []Pending) error {
	for _, p := range msgs {
		if p.From < 0 || p.From >= n.size || p.From == n.rank {
			return fmt.Errorf("peer: rank %d: inject a message from rank %d: not a peer in a job of %d", n.rank, p.From, n.size)
		}
	}
	if n.app.isClosed() {
		return fmt.Errorf("peer: rank %d: inject: %w", n.rank, redundancy.ErrClosed)
	}
	n.requeue(msgs)
	return nil
}

// The encoding of a []Pending: magic, version, count, then per message
// the sender's rank, the tag and the data.
const (
	pendingMagic   = "ckpM"
	pendingVersion = 1
	minPendingLen  = 1 + 8 + 1 // rank, tag, length: the smallest message
)

// MarshalPending encodes msgs for saving with a checkpoint.
func MarshalPending(msgs []Pending) []byte {
	size := len(pendingMagic) + 1 + binary.MaxVarintLen64
	for _, p := range msgs {
		size += 2*binary.MaxVarintLen64 + 8 + len(p.Data)
	}
	b := make([]byte, 0, size)
	b = append(b, pendingMagic...)
	b = append(b, pendingVersion)
	b = binary.AppendUvarint(b, uint64(len(msgs)))
	for _, p := range msgs {
		b = binary.AppendUvarint(b, uint64(p.From))
		b = binary.LittleEndian.AppendUint64(b, p.Tag)
		b = fields.AppendBytes(b, p.Data)
	}
	return b
}

// UnmarshalPending decodes what MarshalPending encoded. The result does
// not alias b.
func UnmarshalPending(b []byte) ([]Pending, error) {
	d := fields.NewDecoder(b)
	if string(d.Fixed("magic", len(pendingMagic))) != pendingMagic || d.Err() != nil {
		return nil, fmt.Errorf("peer: pending messages: bad magic")
	}
	if v := d.Byte("version"); d.Err() == nil && v != pendingVersion {
		return nil, fmt.Errorf("peer: pending messages: version %d, want %d", v, pendingVersion)
	}
	count := d.Count("message count", minPendingLen)
	if err := d.Err(); err != nil {
		return nil, fmt.Errorf("peer: pending messages: %w", err)
	}
	out := make([]Pending, 0, count)
	for range count {
		var p Pending
		p.From = int(d.Uvarint("rank", maxRank))
		if t := d.Fixed("tag", 8); t != nil {
			p.Tag = binary.LittleEndian.Uint64(t)
		}
		p.Data = slices.Clone(d.Bytes("message", math.MaxInt))
		if err := d.Err(); err != nil {
			return nil, fmt.Errorf("peer: pending messages: message %d: %w", len(out), err)
		}
		out = append(out, p)
	}
	if err := d.End(); err != nil {
		return nil, fmt.Errorf("peer: pending messages: %w", err)
	}
	return out, nil
}
