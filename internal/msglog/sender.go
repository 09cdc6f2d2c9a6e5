package msglog

import "slices"

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

// Resend returns, after an Ack from a receiver that restarted (its ack
// says what its log kept), the messages to send it again: those sent and
// not durable there, in sequence order. The slice is a copy.
func (s *Sender) Resend(to int) []Msg { return slices.Clone(s.unacked[to]) }

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
