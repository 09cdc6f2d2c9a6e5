package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/ckpt/ckpt/internal/fields"
	"github.com/ckpt/ckpt/internal/framing"
)

var (
	// ErrMalformed is wrapped by every error about a frame or message that
	// breaks the encoding: truncated, trailing bytes, unknown type, a field
	// over its limit, a non-canonical value. Append wraps it too when asked
	// to encode a message that could not be decoded.
	ErrMalformed = errors.New("malformed message")
	// ErrTooLarge is wrapped by ReadFrame's error for a frame whose length
	// exceeds the reader's limit. The payload is left unread.
	ErrTooLarge = framing.ErrTooLarge
)

// Encode returns m's frame.
func Encode(m Msg) ([]byte, error) { return Append(nil, m) }

// Append appends m's frame to buf. On error buf is returned unchanged.
func Append(buf []byte, m Msg) ([]byte, error) {
	start := len(buf)
	buf = framing.Begin(buf, uint8(m.Type()))
	buf, err := m.appendPayload(buf)
	if err != nil {
		return buf[:start], fmt.Errorf("wire: encode %s: %w", m.Type(), err)
	}
	if !framing.End(buf, start) {
		return buf[:start], fmt.Errorf("wire: encode %s: %w: payload of %d bytes", m.Type(), ErrMalformed, len(buf)-start-HeaderSize)
	}
	return buf, nil
}

// Decode decodes one whole frame (header and payload). Byte slices of the
// message alias frame.
func Decode(frame []byte) (Msg, error) {
	t, p, err := framing.Split[Type](frame)
	if err != nil {
		return nil, fmt.Errorf("wire: %w: %v", ErrMalformed, err)
	}
	return decodePayload(t, p)
}

func decodePayload(t Type, p []byte) (Msg, error) {
	d := fields.NewDecoder(p)
	var m Msg
	switch t {
	case TypeHello:
		h := &Hello{}
		h.Token = d.String("token", MaxToken)
		h.Incarnation = d.Uvarint("incarnation", math.MaxUint64)
		h.Node = d.String("node", MaxNode)
		h.Ranks = ranks(d, "ranks")
		m = h
	case TypeWelcome:
		w := &Welcome{}
		w.Size = int32Field(d, "size")
		w.Incarnation = d.Uvarint("incarnation", math.MaxUint64)
		w.Nodes = int32Field(d, "nodes")
		m = w
	case TypeRefused:
		m = &Refused{Reason: d.String("reason", MaxReason)}
	case TypeCollective:
		c := &Collective{}
		c.Seq = d.Uvarint("seq", math.MaxUint64)
		c.Kind = kind(d)
		// A contribution takes at least two bytes: rank and data length.
		if n := d.Count("contributions", 2); n > 0 {
			c.Contribs = make([]Contrib, n)
			for i := range c.Contribs {
				c.Contribs[i].Rank = int32Field(d, "contribution rank")
				c.Contribs[i].Data = d.Bytes("contribution data", math.MaxInt)
			}
		}
		m = c
	case TypeResult:
		r := &Result{}
		r.Seq = d.Uvarint("seq", math.MaxUint64)
		r.Kind = kind(d)
		if n := d.Count("data", 1); n > 0 {
			r.Data = make([][]byte, n)
			for i := range r.Data {
				r.Data[i] = d.Bytes("data", math.MaxInt)
			}
		}
		m = r
	case TypePublish:
		pm := &Publish{}
		pm.Req = d.Uvarint("req", math.MaxUint64)
		pm.Key = d.String("key", MaxKey)
		pm.Value = d.Bytes("value", MaxValue)
		m = pm
	case TypeLookup:
		l := &Lookup{}
		l.Req = d.Uvarint("req", math.MaxUint64)
		l.Key = d.String("key", MaxKey)
		l.Wait = d.Bool("wait")
		m = l
	case TypeValue:
		v := &Value{}
		v.Req = d.Uvarint("req", math.MaxUint64)
		v.Key = d.String("key", MaxKey)
		v.Found = d.Bool("found")
		if v.Found {
			v.Value = d.Bytes("value", MaxValue)
		}
		m = v
	case TypeAck:
		m = &Ack{Req: d.Uvarint("req", math.MaxUint64)}
	case TypeHeartbeat:
		m = &Heartbeat{}
	case TypeLeave:
		m = &Leave{Ranks: ranks(d, "ranks")}
	case TypeFail:
		f := &Fail{}
		f.Ranks = ranks(d, "ranks")
		f.Reason = d.String("reason", MaxReason)
		m = f
	case TypeAbort:
		m = &Abort{Reason: d.String("reason", MaxReason)}
	case TypeError:
		e := &Error{}
		e.Req = d.Uvarint("req", math.MaxUint64)
		e.Reason = d.String("reason", MaxReason)
		m = e
	default:
		return nil, fmt.Errorf("wire: %w: unknown message type %d", ErrMalformed, uint8(t))
	}
	if err := d.End(); err != nil {
		return nil, fmt.Errorf("wire: decode %s: %w: %v", t, ErrMalformed, err)
	}
	return m, nil
}

// int32Field reads a uvarint that fits an int32 (ranks, sizes).
func int32Field(d *fields.Decoder, field string) int32 {
	return int32(d.Uvarint(field, math.MaxInt32))
}

func kind(d *fields.Decoder) Kind {
	k := Kind(d.Byte("kind"))
	if d.Err() == nil && !k.valid() {
		d.Failf("kind", "unknown collective kind %d", uint8(k))
	}
	return k
}

func ranks(d *fields.Decoder, field string) []int32 {
	n := d.Count(field, 1)
	if n == 0 {
		return nil
	}
	rs := make([]int32, n)
	for i := range rs {
		rs[i] = int32Field(d, field)
	}
	return rs
}

// Encoding. Each appendPayload checks the limits its decoder checks.

func appendStr(b []byte, field, s string, max int) ([]byte, error) {
	if len(s) > max {
		return b, fmt.Errorf("%w: %s of %d bytes exceeds limit %d", ErrMalformed, field, len(s), max)
	}
	return fields.AppendString(b, s), nil
}

func appendBytes(b []byte, field string, v []byte, max int) ([]byte, error) {
	if len(v) > max {
		return b, fmt.Errorf("%w: %s of %d bytes exceeds limit %d", ErrMalformed, field, len(v), max)
	}
	return fields.AppendBytes(b, v), nil
}

func appendInt32(b []byte, field string, v int32) ([]byte, error) {
	if v < 0 {
		return b, fmt.Errorf("%w: %s %d is negative", ErrMalformed, field, v)
	}
	return binary.AppendUvarint(b, uint64(v)), nil
}

func appendRanks(b []byte, field string, rs []int32) ([]byte, error) {
	b = binary.AppendUvarint(b, uint64(len(rs)))
	var err error
	for _, r := range rs {
		if b, err = appendInt32(b, field, r); err != nil {
			return b, err
		}
	}
	return b, nil
}

func appendKind(b []byte, k Kind) ([]byte, error) {
	if !k.valid() {
		return b, fmt.Errorf("%w: unknown collective kind %d", ErrMalformed, uint8(k))
	}
	return append(b, byte(k)), nil
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

func (m *Hello) appendPayload(b []byte) ([]byte, error) {
	b, err := appendStr(b, "token", m.Token, MaxToken)
	if err != nil {
		return b, err
	}
	b = binary.AppendUvarint(b, m.Incarnation)
	if b, err = appendStr(b, "node", m.Node, MaxNode); err != nil {
		return b, err
	}
	if len(m.Ranks) > MaxHelloRanks {
		return b, fmt.Errorf("%w: Hello of %d ranks exceeds %d", ErrMalformed, len(m.Ranks), MaxHelloRanks)
	}
	return appendRanks(b, "rank", m.Ranks)
}

func (m *Welcome) appendPayload(b []byte) ([]byte, error) {
	b, err := appendInt32(b, "size", m.Size)
	if err != nil {
		return b, err
	}
	b = binary.AppendUvarint(b, m.Incarnation)
	return appendInt32(b, "nodes", m.Nodes)
}

func (m *Refused) appendPayload(b []byte) ([]byte, error) {
	return appendStr(b, "reason", m.Reason, MaxReason)
}

// appendRound appends what a Collective and a Result start with: the
// sequence number, the kind and the count of the entries that follow.
func appendRound(b []byte, seq uint64, k Kind, n int) ([]byte, error) {
	b = binary.AppendUvarint(b, seq)
	b, err := appendKind(b, k)
	if err != nil {
		return b, err
	}
	return binary.AppendUvarint(b, uint64(n)), nil
}

func (m *Collective) appendPayload(b []byte) ([]byte, error) {
	b, err := appendRound(b, m.Seq, m.Kind, len(m.Contribs))
	if err != nil {
		return b, err
	}
	for _, c := range m.Contribs {
		if b, err = appendInt32(b, "contribution rank", c.Rank); err != nil {
			return b, err
		}
		b = fields.AppendBytes(b, c.Data)
	}
	return b, nil
}

func (m *Result) appendPayload(b []byte) ([]byte, error) {
	b, err := appendRound(b, m.Seq, m.Kind, len(m.Data))
	if err != nil {
		return b, err
	}
	for _, d := range m.Data {
		b = fields.AppendBytes(b, d)
	}
	return b, nil
}

func (m *Publish) appendPayload(b []byte) ([]byte, error) {
	b = binary.AppendUvarint(b, m.Req)
	b, err := appendStr(b, "key", m.Key, MaxKey)
	if err != nil {
		return b, err
	}
	return appendBytes(b, "value", m.Value, MaxValue)
}

func (m *Lookup) appendPayload(b []byte) ([]byte, error) {
	b = binary.AppendUvarint(b, m.Req)
	b, err := appendStr(b, "key", m.Key, MaxKey)
	if err != nil {
		return b, err
	}
	return appendBool(b, m.Wait), nil
}

func (m *Value) appendPayload(b []byte) ([]byte, error) {
	b = binary.AppendUvarint(b, m.Req)
	b, err := appendStr(b, "key", m.Key, MaxKey)
	if err != nil {
		return b, err
	}
	b = appendBool(b, m.Found)
	if !m.Found {
		if len(m.Value) > 0 {
			return b, fmt.Errorf("%w: value of %d bytes for a key not found", ErrMalformed, len(m.Value))
		}
		return b, nil
	}
	return appendBytes(b, "value", m.Value, MaxValue)
}

func (m *Ack) appendPayload(b []byte) ([]byte, error) {
	return binary.AppendUvarint(b, m.Req), nil
}

func (*Heartbeat) appendPayload(b []byte) ([]byte, error) { return b, nil }

func (m *Leave) appendPayload(b []byte) ([]byte, error) { return appendRanks(b, "rank", m.Ranks) }

func (m *Fail) appendPayload(b []byte) ([]byte, error) {
	b, err := appendRanks(b, "rank", m.Ranks)
	if err != nil {
		return b, err
	}
	return appendStr(b, "reason", m.Reason, MaxReason)
}

func (m *Abort) appendPayload(b []byte) ([]byte, error) {
	return appendStr(b, "reason", m.Reason, MaxReason)
}

func (m *Error) appendPayload(b []byte) ([]byte, error) {
	b = binary.AppendUvarint(b, m.Req)
	return appendStr(b, "reason", m.Reason, MaxReason)
}
