package uncoord

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"

	"github.com/ckpt/ckpt/internal/fields"
	"github.com/ckpt/ckpt/internal/msglog"
)

// Snapshot is the driver's part of a rank's checkpoint, taken between
// events (msglog's obligation 5): the Receiver's delivery point, the
// Sender's state, and the messages delivered to the application and not
// yet received by it (they are behind the point, so the log will not
// replay them, and the application's state does not hold them yet).
type Snapshot struct {
	Point   msglog.Point
	Sender  msglog.SenderState
	Pending map[int][][]byte
}

const snapMagic = "ckU1"

// Bytes encodes the snapshot, to be saved with the application's state.
func (s Snapshot) Bytes() []byte {
	b := []byte(snapMagic)
	b = fields.AppendBytes(b, msglog.AppendPoint(nil, s.Point))
	b = fields.AppendBytes(b, msglog.AppendSenderState(nil, s.Sender))
	froms := slices.Sorted(maps.Keys(s.Pending))
	n := 0
	for _, f := range froms {
		if len(s.Pending[f]) > 0 {
			n++
		}
	}
	b = binary.AppendUvarint(b, uint64(n))
	for _, f := range froms {
		q := s.Pending[f]
		if len(q) == 0 {
			continue
		}
		b = binary.AppendUvarint(b, uint64(f))
		b = binary.AppendUvarint(b, uint64(len(q)))
		for _, m := range q {
			b = fields.AppendBytes(b, m)
		}
	}
	return b
}

// DecodeSnapshot decodes what Bytes wrote, all of b, for rank self.
func DecodeSnapshot(b []byte, self int) (Snapshot, error) {
	if !bytes.HasPrefix(b, []byte(snapMagic)) {
		return Snapshot{}, fmt.Errorf("uncoord: snapshot: not a snapshot (no %q)", snapMagic)
	}
	d := fields.NewDecoder(b[len(snapMagic):])
	pb := d.Bytes("point", len(b))
	sb := d.Bytes("sender", len(b))
	var s Snapshot
	var err error
	if d.Err() == nil {
		if s.Point, err = msglog.DecodePoint(pb); err != nil {
			return Snapshot{}, err
		}
		if s.Sender, err = msglog.DecodeSenderState(sb, self); err != nil {
			return Snapshot{}, err
		}
	}
	s.Pending = map[int][][]byte{}
	n := d.Count("sources", 2)
	for range n {
		from := int(d.Uvarint("rank", 1<<30))
		k := d.Count("messages", 1)
		if d.Err() != nil {
			break
		}
		q := make([][]byte, 0, k)
		for range k {
			q = append(q, bytes.Clone(d.Bytes("message", maxData)))
		}
		s.Pending[from] = q
	}
	if err := d.End(); err != nil {
		return Snapshot{}, fmt.Errorf("uncoord: snapshot: %w", err)
	}
	return s, nil
}
