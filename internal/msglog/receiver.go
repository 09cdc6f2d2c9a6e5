package msglog

import (
	"errors"
	"fmt"
	"time"
)

// Ready is the batch of actions one event causes, in the manner of etcd
// raft's Ready. The driver carries them out in this order: Persist, then
// Acks (they report what an earlier Persisted made durable), Deliver,
// Truncate. The slices are fresh for every event: the driver owns them.
type Ready struct {
	// Persist are records to append to the protector's log, in order.
	// When every record up to some index is durable there, the driver
	// calls Persisted with that index.
	Persist []Record
	// Deliver are messages to hand to the application, in this order:
	// the receiver's delivery order, which a replay reproduces. A receive
	// from any source takes the oldest message delivered and not yet
	// consumed.
	Deliver []Record
	// Acks tell senders the last sequence number of their channel that
	// is durable at the protector: they may forget those messages.
	Acks []Ack
	// Truncate, when not zero, says the protector may drop every record
	// whose index is at most Truncate.
	Truncate uint64
}

// Empty reports whether r holds no action.
func (r Ready) Empty() bool {
	return len(r.Persist)+len(r.Deliver)+len(r.Acks) == 0 && r.Truncate == 0
}

// Ack tells rank To that the receiver has every message of To's channel up
// to Seq durable in its log. The driver sends it to rank To, whose driver
// gives it to Sender.Ack with the receiving rank's number.
type Ack struct {
	To  int
	Seq uint64
}

// Stats are the receiver's counters since NewReceiver, for the runtime to
// report (Fialho et al. 2011's Δ_lp and Δ_lr among them). Times are in the
// driver's clock, as passed to the events.
type Stats struct {
	// RecordsLogged and BytesLogged count the records handed to Persist
	// and their payload bytes.
	RecordsLogged, BytesLogged uint64
	// Delivered counts messages delivered, replayed ones included.
	Delivered uint64
	// Duplicates counts messages dropped because their channel already
	// had them (logged, replayed or buffered).
	Duplicates uint64
	// BeyondWindow counts messages dropped because they were too far
	// ahead of their channel's next one to be buffered (see WithWindow):
	// their senders send them again.
	BeyondWindow uint64
	// PersistWait is the time during which some logged message waited
	// for its record to be durable before it could be delivered: the
	// delay pessimistic logging adds to delivery (Δ_lp, Fialho et al.
	// 2011 §3.2, fig. 2). Overlapping waits count once.
	PersistWait time.Duration
	// Replayed counts records delivered by replay; ReplayTime is the
	// time from BeginReplay to EndReplay (Δ_lr).
	Replayed   uint64
	ReplayTime time.Duration
	// TruncatedTo is the index up to which the protector was last told
	// to drop records (indexes count from the rank's first message, so
	// this is also how many records were dropped in the rank's life).
	TruncatedTo uint64
}

// ErrOutOfOrder is wrapped by the error of a replayed record that does not
// follow the previous one: its index is not the next, or its sequence
// number is not its channel's next.
var ErrOutOfOrder = errors.New("record out of order")

// ErrFailed is wrapped by what a receiver whose replay failed returns for
// every later replay call: nothing more may be delivered from its log.
var ErrFailed = errors.New("replay failed earlier")

// ReplayError is a replay's failure, naming the record: the one after
// index After in the log, and what it says it is (which, for a corrupt
// record, may be part of the damage).
type ReplayError struct {
	After uint64
	Index uint64 // the index the record carried
	From  int
	Seq   uint64
	Err   error // wraps ErrCorrupt or ErrOutOfOrder
}

func (e *ReplayError) Error() string {
	return fmt.Sprintf("msglog: replaying the log record after index %d (it says index %d, rank %d seq %d): %v", e.After, e.Index, e.From, e.Seq, e.Err)
}

func (e *ReplayError) Unwrap() error { return e.Err }

type mode uint8

const (
	live mode = iota
	replaying
	failed
)

// Receiver is the receiving side of one rank: pessimistic receiver-based
// message logging (Fialho et al. 2011 §3.2). It is not safe for concurrent
// use. See the package documentation for the driver's obligations.
type Receiver struct {
	mode mode
	// logged is, per channel, the last sequence number given a record
	// (or replayed): the next one in order is logged+1. delivered is the
	// last delivered; durable the last known durable.
	logged, delivered, durable map[int]uint64
	// buffered holds messages that arrived ahead of their channel's next
	// one (and, during replay, every live message past the replayed
	// ones), by channel and sequence number.
	buffered map[int]map[uint64][]byte
	// index is the last index given a record; deliveredIndex the last
	// delivered; persistedIndex the last known durable.
	index, deliveredIndex, persistedIndex uint64
	// pending are records given to Persist and not yet known durable, in
	// index order.
	pending []Record
	// waitSince is when pending last became non-empty.
	waitSince   time.Duration
	replayStart time.Duration
	err         error
	stats       Stats
	window      uint64
}

// DefaultWindow is how far ahead of its channel's next message a
// receiver buffers a message unless told otherwise (WithWindow).
const DefaultWindow = 1024

// Option configures a Receiver.
type Option func(*Receiver)

// WithWindow bounds the buffer: a message whose sequence number is more
// than n beyond its channel's next one is dropped rather than kept (a
// sender far ahead, or a replay's live messages, cannot grow the buffer
// without bound); its sender keeps it until acknowledged and sends it
// again. n must be at least 1.
func WithWindow(n uint64) Option {
	if n < 1 {
		panic("msglog: WithWindow(0)")
	}
	return func(r *Receiver) { r.window = n }
}

// NewReceiver returns the receiver of a rank that starts from delivery
// point p: Point{} for a fresh start, or the point its checkpoint
// recorded. A restarted rank calls BeginReplay next.
func NewReceiver(p Point, opts ...Option) *Receiver {
	r := &Receiver{
		window:         DefaultWindow,
		logged:         map[int]uint64{},
		delivered:      map[int]uint64{},
		durable:        map[int]uint64{},
		buffered:       map[int]map[uint64][]byte{},
		index:          p.Index,
		deliveredIndex: p.Index,
		persistedIndex: p.Index,
	}
	for from, seq := range p.Seqs {
		r.logged[from], r.delivered[from], r.durable[from] = seq, seq, seq
	}
	for _, o := range opts {
		o(r)
	}
	return r
}

// Point returns the receiver's delivery point: what a checkpoint of the
// application's state taken now has seen. Records logged but not yet
// delivered lie after it, and are replayed after a restart from it.
func (r *Receiver) Point() Point {
	p := Point{Index: r.deliveredIndex, Seqs: make(map[int]uint64, len(r.delivered))}
	for from, seq := range r.delivered {
		if seq > 0 {
			p.Seqs[from] = seq
		}
	}
	return p
}

// Stats returns the counters so far.
func (r *Receiver) Stats() Stats { return r.stats }

// Err returns the error that ended a failed replay, or nil.
func (r *Receiver) Err() error { return r.err }

// Replaying reports whether the receiver is between BeginReplay and
// EndReplay.
func (r *Receiver) Replaying() bool { return r.mode == replaying }

// Durable returns the last sequence number of channel from that is
// durable in the log (or was delivered before the checkpoint the receiver
// started from): what a restarted sender needs to skip.
func (r *Receiver) Durable(from int) uint64 { return r.durable[from] }

// Receive handles a message read from the network at time now.
//
// A message its channel already has (logged, replayed, or buffered) is
// dropped. The channel's next message gets a record, and so do the
// buffered ones that then follow in order; a message beyond the next waits
// in the buffer until the gap is filled (by a retransmission). During
// replay, every message past the replayed ones is buffered: the log
// decides the order until EndReplay. A message more than the window
// (WithWindow) beyond its channel's next one is dropped, to be sent again.
// A receiver whose replay failed drops
// everything. The receiver keeps m.Data (in its buffer, then in the
// records it returns): the driver must not change it.
func (r *Receiver) Receive(m Msg, now time.Duration) Ready {
	if m.Seq == 0 {
		panic(fmt.Sprintf("msglog: message from rank %d with sequence number 0", m.From))
	}
	var rd Ready
	switch {
	case r.mode == failed:
		return rd
	case m.Seq <= r.logged[m.From] || r.isBuffered(m.From, m.Seq):
		r.stats.Duplicates++
		return rd
	case m.Seq > r.logged[m.From]+r.window:
		r.stats.BeyondWindow++
		return rd
	case r.mode == replaying || m.Seq > r.logged[m.From]+1:
		r.buffer(m)
		return rd
	}
	r.log(&rd, m.From, m.Seq, m.Data, now)
	r.drain(&rd, m.From, now)
	return rd
}

func (r *Receiver) isBuffered(from int, seq uint64) bool {
	_, ok := r.buffered[from][seq]
	return ok
}

func (r *Receiver) buffer(m Msg) {
	b := r.buffered[m.From]
	if b == nil {
		b = map[uint64][]byte{}
		r.buffered[m.From] = b
	}
	b[m.Seq] = m.Data
}

// log gives the channel's next message its record.
func (r *Receiver) log(rd *Ready, from int, seq uint64, data []byte, now time.Duration) {
	r.index++
	r.logged[from] = seq
	rec := Record{Index: r.index, From: from, Seq: seq, Data: data, Sum: Hash(r.index, from, seq, data)}
	if len(r.pending) == 0 {
		r.waitSince = now
	}
	r.pending = append(r.pending, rec)
	rd.Persist = append(rd.Persist, rec)
	r.stats.RecordsLogged++
	r.stats.BytesLogged += uint64(len(data))
}

// drain logs the buffered messages of channel from that now follow in
// order.
func (r *Receiver) drain(rd *Ready, from int, now time.Duration) {
	b := r.buffered[from]
	for {
		next := r.logged[from] + 1
		data, ok := b[next]
		if !ok {
			break
		}
		delete(b, next)
		r.log(rd, from, next, data, now)
	}
	if len(b) == 0 {
		delete(r.buffered, from)
	}
}

// Persisted reports that every record up to index is durable at the
// protector. Those records are delivered, in index order, and their
// senders acknowledged. An index already reported is ignored; one beyond
// the last record given to Persist is a driver bug and panics.
func (r *Receiver) Persisted(index uint64, now time.Duration) Ready {
	var rd Ready
	if index > r.index {
		panic(fmt.Sprintf("msglog: Persisted(%d) beyond the last record given to Persist (%d)", index, r.index))
	}
	if index <= r.persistedIndex {
		return rd
	}
	r.persistedIndex = index
	n := 0
	acked := map[int]bool{}
	for n < len(r.pending) && r.pending[n].Index <= index {
		rec := r.pending[n]
		r.durable[rec.From] = rec.Seq
		if !acked[rec.From] {
			acked[rec.From] = true
			rd.Acks = append(rd.Acks, Ack{To: rec.From})
		}
		r.deliver(&rd, rec)
		n++
	}
	r.pending = r.pending[n:]
	if len(r.pending) == 0 {
		r.pending = nil
		r.stats.PersistWait += now - r.waitSince
	}
	for i := range rd.Acks {
		rd.Acks[i].Seq = r.durable[rd.Acks[i].To]
	}
	return rd
}

func (r *Receiver) deliver(rd *Ready, rec Record) {
	r.delivered[rec.From] = rec.Seq
	r.deliveredIndex = rec.Index
	rd.Deliver = append(rd.Deliver, rec)
	r.stats.Delivered++
}

// BeginReplay starts the replay of the log after the receiver's point:
// the driver reads the protector's records with index above Point().Index
// in order and hands each to Replay, then calls EndReplay. It may be
// called only on a receiver that has logged nothing since NewReceiver.
func (r *Receiver) BeginReplay(now time.Duration) {
	if r.mode != live || r.index != r.deliveredIndex {
		panic("msglog: BeginReplay on a receiver that has logged messages")
	}
	r.mode = replaying
	r.replayStart = now
}

// Replay delivers one record read back from the log. The record must be
// intact (its hash), the next index, and its channel's next sequence
// number; otherwise nothing of it is delivered, the replay fails and the
// error (a *ReplayError) names the record: the rank cannot recover from
// this log, and every later Replay or EndReplay returns the error again.
// Live messages the record makes duplicates are dropped from the buffer.
func (r *Receiver) Replay(rec Record, now time.Duration) (Ready, error) {
	var rd Ready
	switch r.mode {
	case failed:
		return rd, fmt.Errorf("%w: %w", ErrFailed, r.err)
	case live:
		panic("msglog: Replay without BeginReplay")
	}
	var err error
	if err = rec.Verify(); err != nil {
	} else if rec.Index != r.index+1 {
		err = fmt.Errorf("%w: index %d, want %d", ErrOutOfOrder, rec.Index, r.index+1)
	} else if want := r.logged[rec.From] + 1; rec.Seq != want {
		err = fmt.Errorf("%w: rank %d seq %d, want seq %d", ErrOutOfOrder, rec.From, rec.Seq, want)
	}
	if err != nil {
		r.fail(&ReplayError{After: r.index, Index: rec.Index, From: rec.From, Seq: rec.Seq, Err: err})
		return rd, r.err
	}
	r.index = rec.Index
	r.persistedIndex = rec.Index
	r.logged[rec.From] = rec.Seq
	r.durable[rec.From] = rec.Seq
	if b := r.buffered[rec.From]; b != nil {
		if _, ok := b[rec.Seq]; ok {
			delete(b, rec.Seq)
			r.stats.Duplicates++
			if len(b) == 0 {
				delete(r.buffered, rec.From)
			}
		}
	}
	r.deliver(&rd, rec)
	r.stats.Replayed++
	return rd, nil
}

func (r *Receiver) fail(err error) {
	r.mode = failed
	r.err = err
	r.buffered = map[int]map[uint64][]byte{}
}

// EndReplay ends the replay once the log has no more records. Every
// channel's sender is told what the log holds (so that it re-sends what
// the receiver lost and skips the rest), and the live messages buffered
// meanwhile are handled as if they arrived now, in channel order.
func (r *Receiver) EndReplay(now time.Duration) (Ready, error) {
	var rd Ready
	switch r.mode {
	case failed:
		return rd, fmt.Errorf("%w: %w", ErrFailed, r.err)
	case live:
		panic("msglog: EndReplay without BeginReplay")
	}
	r.mode = live
	r.stats.ReplayTime += now - r.replayStart
	for _, from := range sortedKeys(r.durable) {
		rd.Acks = append(rd.Acks, Ack{To: from, Seq: r.durable[from]})
	}
	for _, from := range sortedKeys(r.buffered) {
		b := r.buffered[from]
		for seq := range b {
			if seq <= r.logged[from] {
				delete(b, seq)
				r.stats.Duplicates++
			}
		}
		r.drain(&rd, from, now)
	}
	return rd, nil
}

// Protected reports that the checkpoint taken at delivery point p is
// committed at the protector: the log's records up to p.Index are needed
// no more (a restart starts from p at the oldest), and the protector is
// told to drop them. A point no newer than one protected before changes
// nothing.
func (r *Receiver) Protected(p Point) Ready {
	var rd Ready
	if p.Index > r.deliveredIndex {
		panic(fmt.Sprintf("msglog: Protected at index %d beyond the delivered %d", p.Index, r.deliveredIndex))
	}
	if p.Index > r.stats.TruncatedTo {
		rd.Truncate = p.Index
		r.stats.TruncatedTo = p.Index
	}
	return rd
}
