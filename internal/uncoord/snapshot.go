package uncoord

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/ckpt/ckpt/internal/fields"
	"github.com/ckpt/ckpt/internal/msglog"
)

// Snapshot is the driver's part of a rank's checkpoint, taken between
// events (msglog's obligation 5): the Receiver's delivery point, the
// Sender's state, and the messages delivered to the application and not
// yet received by it, in their delivery order (they are behind the point,
// so the log will not replay them, and the application's state does not
// hold them yet).
type Snapshot struct {
	Point   msglog.Point
	Sender  msglog.SenderState
	Pending []Message
}

// Message is a message delivered to the application: its sender and data.
type Message struct {
	From int
	Data []byte
}

const snapMagic = "ckU1"

// Bytes encodes the snapshot, to be saved with the application's state.
func (s Snapshot) Bytes() []byte {
	b := []byte(snapMagic)
	b = fields.AppendBytes(b, msglog.AppendPoint(nil, s.Point))
	b = fields.AppendBytes(b, msglog.AppendSenderState(nil, s.Sender))
	b = binary.AppendUvarint(b, uint64(len(s.Pending)))
	for _, m := range s.Pending {
		b = binary.AppendUvarint(b, uint64(m.From))
		b = fields.AppendBytes(b, m.Data)
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
	n := d.Count("messages", 2)
	for range n {
		from := int(d.Uvarint("rank", 1<<30))
		data := d.Bytes("message", maxData)
		if d.Err() != nil {
			break
		}
		s.Pending = append(s.Pending, Message{From: from, Data: bytes.Clone(data)})
	}
	if err := d.End(); err != nil {
		return Snapshot{}, fmt.Errorf("uncoord: snapshot: %w", err)
	}
	return s, nil
}
