package uncoord

import (
	"encoding/binary"
	"fmt"

	"github.com/ckpt/ckpt/internal/fields"
)

// Tag is the tag of every frame on the application channel.
const Tag uint64 = 0x636b7055 // "ckpU"

type kind byte

const (
	kData kind = iota + 1
	kAck
	kHello
	kReply
	kRefuse
)

// maxData bounds a message's length in a frame the decoder accepts.
const maxData = 1 << 31

type frame struct {
	kind kind
	seq  uint64
	data []byte
}

func (f frame) append(b []byte) []byte {
	b = append(b, byte(f.kind))
	switch f.kind {
	case kData:
		b = binary.AppendUvarint(b, f.seq)
		b = fields.AppendBytes(b, f.data)
	case kAck, kHello, kReply:
		b = binary.AppendUvarint(b, f.seq)
	}
	return b
}

func decodeFrame(b []byte) (frame, error) {
	d := fields.NewDecoder(b)
	f := frame{kind: kind(d.Byte("kind"))}
	switch f.kind {
	case kData:
		f.seq = d.Uvarint("seq", 1<<63)
		f.data = d.Bytes("data", maxData)
	case kAck, kHello, kReply:
		f.seq = d.Uvarint("seq", 1<<63)
	case kRefuse:
	default:
		if d.Err() == nil {
			d.Failf("kind", "unknown frame kind %d", f.kind)
		}
	}
	if err := d.End(); err != nil {
		return frame{}, fmt.Errorf("uncoord: frame: %w", err)
	}
	return f, nil
}
