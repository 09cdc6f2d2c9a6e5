package msglog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/ckpt/ckpt/internal/fields"
	"github.com/zeebo/xxh3"
)

// Msg is a message on the channel From → the receiver, the Seq-th the
// sender sent on that channel (numbered from 1).
type Msg struct {
	From int
	Seq  uint64
	Data []byte
}

// Record is one log record: the message delivered Index-th at this
// receiver (numbered from 1 over the life of the rank, across every
// channel), and its hash. Index is what makes a replay reproduce the
// receive order across channels (MPI_ANY_SOURCE), not only the order
// within each channel.
type Record struct {
	Index uint64
	From  int
	Seq   uint64
	Data  []byte
	// Sum is Hash of the other fields, computed by the receiver when it
	// made the record and checked when the record is replayed: the
	// record is covered from the receiver's memory to the protector's
	// disk and back.
	Sum uint64
}

// ErrCorrupt is wrapped by the error of a record whose Sum does not match
// its contents.
var ErrCorrupt = errors.New("record corrupt: hash mismatch")

// Hash is the XXH3-64 of a record's index, channel, sequence number and
// data, each number as 8 bytes little endian.
func Hash(index uint64, from int, seq uint64, data []byte) uint64 {
	var h [24]byte
	binary.LittleEndian.PutUint64(h[0:], index)
	binary.LittleEndian.PutUint64(h[8:], uint64(from))
	binary.LittleEndian.PutUint64(h[16:], seq)
	d := xxh3.New()
	d.Write(h[:])
	d.Write(data)
	return d.Sum64()
}

// Verify checks the record's Sum against its contents.
func (r Record) Verify() error {
	if got := Hash(r.Index, r.From, r.Seq, r.Data); got != r.Sum {
		return fmt.Errorf("%w (stored %016x, computed %016x)", ErrCorrupt, r.Sum, got)
	}
	return nil
}

func (r Record) String() string {
	return fmt.Sprintf("record %d (rank %d seq %d, %d bytes)", r.Index, r.From, r.Seq, len(r.Data))
}

// Point is a receiver's delivery point: how many messages it delivered
// (Index, the last record's index) and, per sending rank, the last
// sequence number delivered on that channel. A checkpoint records the
// point of the state it saved; a restart replays the records after it and
// the log is truncated up to it once the checkpoint is protected.
type Point struct {
	Index uint64
	Seqs  map[int]uint64
}

// Clone returns a copy of p that shares nothing with it.
func (p Point) Clone() Point { return Point{Index: p.Index, Seqs: maps.Clone(p.Seqs)} }

// maxRank bounds the rank numbers a decoder accepts.
const maxRank = 1 << 30

// AppendPoint appends p's encoding, to be saved beside the checkpoint it
// describes: the index, the number of channels, then each sending rank
// and its sequence number in rank order (so equal points encode alike).
func AppendPoint(b []byte, p Point) []byte {
	b = binary.AppendUvarint(b, p.Index)
	b = binary.AppendUvarint(b, uint64(len(p.Seqs)))
	for _, from := range slices.Sorted(maps.Keys(p.Seqs)) {
		b = binary.AppendUvarint(b, uint64(from))
		b = binary.AppendUvarint(b, p.Seqs[from])
	}
	return b
}

// DecodePoint decodes what AppendPoint wrote, all of b.
func DecodePoint(b []byte) (Point, error) {
	d := fields.NewDecoder(b)
	p := Point{Index: d.Uvarint("index", maxSeq)}
	n := d.Count("channels", 2)
	p.Seqs = make(map[int]uint64, n)
	prev := -1
	for range n {
		from := int(d.Uvarint("rank", maxRank))
		seq := d.Uvarint("seq", maxSeq)
		if d.Err() != nil {
			break
		}
		if from <= prev {
			d.Failf("rank", "rank %d after %d: not in increasing order", from, prev)
			break
		}
		if seq == 0 {
			d.Failf("seq", "rank %d: nothing delivered", from)
			break
		}
		prev = from
		p.Seqs[from] = seq
	}
	if err := d.End(); err != nil {
		return Point{}, fmt.Errorf("msglog: delivery point: %w", err)
	}
	return p, nil
}

// maxSeq bounds the sequence numbers and indexes a decoder accepts.
const maxSeq = 1 << 63

// AppendSenderState appends s's encoding, to be saved beside the
// checkpoint it belongs to: the receiving ranks in order, each with its
// last sequence number used, its last acknowledged, and its unacknowledged
// messages (sequence number and data; From is the sender, which the
// decoder is told).
func AppendSenderState(b []byte, s SenderState) []byte {
	tos := map[int]bool{}
	for to := range s.Next {
		tos[to] = true
	}
	for to := range s.Acked {
		tos[to] = true
	}
	for to := range s.Unacked {
		tos[to] = true
	}
	b = binary.AppendUvarint(b, uint64(len(tos)))
	for _, to := range sortedKeys(tos) {
		b = binary.AppendUvarint(b, uint64(to))
		b = binary.AppendUvarint(b, s.Next[to])
		b = binary.AppendUvarint(b, s.Acked[to])
		b = binary.AppendUvarint(b, uint64(len(s.Unacked[to])))
		for _, m := range s.Unacked[to] {
			b = binary.AppendUvarint(b, m.Seq)
			b = fields.AppendBytes(b, m.Data)
		}
	}
	return b
}

// DecodeSenderState decodes what AppendSenderState wrote, all of b, for
// the sending rank from. It checks what a sender's state must be: the
// acknowledged sequence number at most the last used, the unacknowledged
// messages in increasing order between the two.
func DecodeSenderState(b []byte, from int) (SenderState, error) {
	d := fields.NewDecoder(b)
	s := SenderState{Next: map[int]uint64{}, Acked: map[int]uint64{}, Unacked: map[int][]Msg{}}
	n := d.Count("receivers", 4)
	prev := -1
	for range n {
		to := int(d.Uvarint("rank", maxRank))
		next := d.Uvarint("next", maxSeq)
		acked := d.Uvarint("acked", maxSeq)
		if d.Err() == nil && to <= prev {
			d.Failf("rank", "rank %d after %d: not in increasing order", to, prev)
		}
		if d.Err() == nil && next == 0 {
			d.Failf("next", "rank %d: nothing sent", to)
		}
		if d.Err() == nil && acked > next {
			d.Failf("acked", "rank %d acknowledged %d beyond the last sent, %d", to, acked, next)
		}
		prev = to
		last := acked
		k := d.Count("unacked", 2)
		var ms []Msg
		for range k {
			seq := d.Uvarint("seq", maxSeq)
			data := d.Bytes("data", math.MaxInt32)
			if d.Err() == nil && (seq <= last || seq > next) {
				d.Failf("seq", "rank %d: unacknowledged seq %d not in (%d, %d]", to, seq, last, next)
			}
			if d.Err() != nil {
				break
			}
			last = seq
			m := Msg{From: from, Seq: seq}
			if len(data) > 0 {
				m.Data = bytes.Clone(data)
			}
			ms = append(ms, m)
		}
		if d.Err() != nil {
			break
		}
		s.Next[to] = next
		if acked > 0 {
			s.Acked[to] = acked
		}
		if len(ms) > 0 {
			s.Unacked[to] = ms
		}
	}
	if err := d.End(); err != nil {
		return SenderState{}, fmt.Errorf("msglog: sender state: %w", err)
	}
	return s, nil
}
