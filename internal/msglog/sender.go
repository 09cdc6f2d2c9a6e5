package msglog

import (
	"errors"
	"fmt"
	"slices"
)

// SenderState is what a rank's sending side saves in its checkpoint: per
// receiving rank, the last sequence number used and the last one known
// durable at the receiver, and the messages sent but not known durable.
// Those are kept because a receiver that fails loses what it had not
// logged, and a sender restarted from this checkpoint would not send them
// again.
type SenderState struct {
	Next    map[int]uint64 // last sequence number used, per receiver
	Acked   map[int]uint64 // last known durable at the receiver
	Unacked map[int][]Msg  // per receiver, the messages as sent, in sequence order
}

// Sender is the sending side of one rank: it numbers the messages of
// each channel, keeps those the receiver may still need, and skips, when
// the rank re-executes after a restart, the ones the receiver already has.
// It is not safe for concurrent use.
type Sender struct {
	next, acked map[int]uint64
	unacked     map[int][]Msg
	skipped     uint64
}

// NewSender returns the sending side of a rank starting from state s
// (SenderState{} for a fresh start). s is copied.
func NewSender(s SenderState) *Sender {
	r := &Sender{next: map[int]uint64{}, acked: map[int]uint64{}, unacked: map[int][]Msg{}}
	for to, seq := range s.Next {
		r.next[to] = seq
	}
	for to, seq := range s.Acked {
		r.acked[to] = seq
	}
	for to, ms := range s.Unacked {
		r.unacked[to] = slices.Clone(ms)
	}
	return r
}

// Send numbers the next message to rank to. The returned Msg carries the
// sender's rank in From (which the driver fills in: from) and the
// sequence number; wire is false when the receiver already has the message
// durable (a re-executing rank regenerating what it sent before it
// failed): the driver then does not send it. Otherwise the message is
// kept until acknowledged. data is kept, not copied.
func (s *Sender) Send(from, to int, data []byte) (m Msg, wire bool) {
	s.next[to]++
	m = Msg{From: from, Seq: s.next[to], Data: data}
	if m.Seq <= s.acked[to] {
		s.skipped++
		return m, false
	}
	s.unacked[to] = append(s.unacked[to], m)
	return m, true
}

// Ack records that rank to has every message of the channel up to seq
// durable: those are forgotten. An older ack changes nothing.
func (s *Sender) Ack(to int, seq uint64) {
	if seq <= s.acked[to] {
		return
	}
	s.acked[to] = seq
	ms := s.unacked[to]
	n := 0
	for n < len(ms) && ms[n].Seq <= seq {
		n++
	}
	if n == len(ms) {
		delete(s.unacked, to)
	} else {
		s.unacked[to] = ms[n:]
	}
}

// Resend returns the messages sent to rank to and not known durable
// there, in sequence order: what a retransmission sends. The slice is a
// copy.
func (s *Sender) Resend(to int) []Msg { return slices.Clone(s.unacked[to]) }

// ErrAckedLost is wrapped by Recovered's error when a receiver came back
// without messages it had acknowledged as durable: its log lost them, the
// sender no longer has them, and the rank cannot recover alone.
var ErrAckedLost = errors.New("receiver lost messages it had acknowledged")

// Recovered handles what a receiver that restarted says its log holds
// (durable: the last sequence number of this channel, from its EndReplay
// acks or its Durable): the messages it needs again, in sequence order. A
// receiver can never hold less than it acknowledged, since it
// acknowledges only what its log holds and truncates only behind the
// checkpoint it restarts from; if it does, Recovered fails with
// ErrAckedLost and the runtime must restart the whole job.
func (s *Sender) Recovered(to int, durable uint64) ([]Msg, error) {
	if durable < s.acked[to] {
		return nil, fmt.Errorf("msglog: rank %d came back with seq %d of this channel, having acknowledged %d: %w", to, durable, s.acked[to], ErrAckedLost)
	}
	s.Ack(to, durable)
	return s.Resend(to), nil
}

// Skipped counts the messages Send told the driver not to send.
func (s *Sender) Skipped() uint64 { return s.skipped }

// State returns what a checkpoint taken now saves; it shares nothing with
// the sender.
func (s *Sender) State() SenderState {
	st := SenderState{Next: map[int]uint64{}, Acked: map[int]uint64{}, Unacked: map[int][]Msg{}}
	for to, seq := range s.next {
		st.Next[to] = seq
	}
	for to, seq := range s.acked {
		st.Acked[to] = seq
	}
	for to, ms := range s.unacked {
		st.Unacked[to] = slices.Clone(ms)
	}
	return st
}
