package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

var (
	// ErrMalformed is wrapped by every error about a frame or message that
	// breaks the encoding: truncated, trailing bytes, unknown type, a field
	// over its limit, a non-canonical value. Append wraps it too when asked
	// to encode a message that could not be decoded.
	ErrMalformed = errors.New("malformed message")
	// ErrTooLarge is wrapped by ReadFrame's error for a frame whose length
	// exceeds the reader's limit. The payload is left unread.
	ErrTooLarge = errors.New("frame too large")
)

// Encode returns m's frame.
func Encode(m Msg) ([]byte, error) { return Append(nil, m) }

// Append appends m's frame to buf. On error buf is returned unchanged.
func Append(buf []byte, m Msg) ([]byte, error) {
	start := len(buf)
	buf = append(buf, 0, 0, 0, 0, byte(m.Type()))
	buf, err := m.appendPayload(buf)
	if err != nil {
		return buf[:start], fmt.Errorf("wire: encode %s: %w", m.Type(), err)
	}
	n := len(buf) - start - HeaderSize
	if uint64(n) > math.MaxUint32 {
		return buf[:start], fmt.Errorf("wire: encode %s: %w: payload of %d bytes", m.Type(), ErrMalformed, n)
	}
	binary.LittleEndian.PutUint32(buf[start:], uint32(n))
	return buf, nil
}

// Decode decodes one whole frame (header and payload). Byte slices of the
// message alias frame.
func Decode(frame []byte) (Msg, error) {
	if len(frame) < HeaderSize {
		return nil, fmt.Errorf("wire: %w: frame of %d bytes is shorter than its header", ErrMalformed, len(frame))
	}
	n := binary.LittleEndian.Uint32(frame)
	if uint64(n) != uint64(len(frame)-HeaderSize) {
		return nil, fmt.Errorf("wire: %w: header says %d payload bytes, frame has %d", ErrMalformed, n, len(frame)-HeaderSize)
	}
	return decodePayload(Type(frame[4]), frame[HeaderSize:])
}

func decodePayload(t Type, p []byte) (Msg, error) {
	d := decoder{b: p}
	var m Msg
	switch t {
	case TypeHello:
		h := &Hello{}
		h.Token = d.str("token", MaxToken)
		h.Incarnation = d.uvarint("incarnation")
		h.Node = d.str("node", MaxNode)
		h.Ranks = d.ranks("ranks")
		m = h
	case TypeWelcome:
		w := &Welcome{}
		w.Size = d.int32("size")
		w.Incarnation = d.uvarint("incarnation")
		w.Nodes = d.int32("nodes")
		m = w
	case TypeRefused:
		m = &Refused{Reason: d.str("reason", MaxReason)}
	case TypeCollective:
		c := &Collective{}
		c.Seq = d.uvarint("seq")
		c.Kind = d.kind()
		// A contribution takes at least two bytes: rank and data length.
		if n := d.count("contributions", 2); n > 0 {
			c.Contribs = make([]Contrib, n)
			for i := range c.Contribs {
				c.Contribs[i].Rank = d.int32("contribution rank")
				c.Contribs[i].Data = d.bytes("contribution data", math.MaxInt)
			}
		}
		m = c
	case TypeResult:
		r := &Result{}
		r.Seq = d.uvarint("seq")
		r.Kind = d.kind()
		if n := d.count("data", 1); n > 0 {
			r.Data = make([][]byte, n)
			for i := range r.Data {
				r.Data[i] = d.bytes("data", math.MaxInt)
			}
		}
		m = r
	case TypePublish:
		pm := &Publish{}
		pm.Req = d.uvarint("req")
		pm.Key = d.str("key", MaxKey)
		pm.Value = d.bytes("value", MaxValue)
		m = pm
	case TypeLookup:
		l := &Lookup{}
		l.Req = d.uvarint("req")
		l.Key = d.str("key", MaxKey)
		l.Wait = d.bool("wait")
		m = l
	case TypeValue:
		v := &Value{}
		v.Req = d.uvarint("req")
		v.Key = d.str("key", MaxKey)
		v.Found = d.bool("found")
		if v.Found {
			v.Value = d.bytes("value", MaxValue)
		}
		m = v
	case TypeAck:
		m = &Ack{Req: d.uvarint("req")}
	case TypeHeartbeat:
		m = &Heartbeat{}
	case TypeLeave:
		m = &Leave{Ranks: d.ranks("ranks")}
	case TypeFail:
		f := &Fail{}
		f.Ranks = d.ranks("ranks")
		f.Reason = d.str("reason", MaxReason)
		m = f
	case TypeAbort:
		m = &Abort{Reason: d.str("reason", MaxReason)}
	case TypeError:
		e := &Error{}
		e.Req = d.uvarint("req")
		e.Reason = d.str("reason", MaxReason)
		m = e
	default:
		return nil, fmt.Errorf("wire: %w: unknown message type %d", ErrMalformed, uint8(t))
	}
	if d.err == nil && d.off != len(d.b) {
		d.fail("", "%d trailing bytes", len(d.b)-d.off)
	}
	if d.err != nil {
		return nil, fmt.Errorf("wire: decode %s: %w", t, d.err)
	}
	return m, nil
}

// decoder reads fields from a payload. The first error sticks: later reads
// return zero values, so decodePayload reads straight through and checks
// once.
type decoder struct {
	b   []byte
	off int
	err error
}

func (d *decoder) fail(field, format string, args ...any) {
	if d.err != nil {
		return
	}
	msg := fmt.Sprintf(format, args...)
	if field != "" {
		msg = field + ": " + msg
	}
	d.err = fmt.Errorf("%w: %s at offset %d", ErrMalformed, msg, d.off)
}

func (d *decoder) rest() int { return len(d.b) - d.off }

func (d *decoder) uvarint(field string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b[d.off:])
	switch {
	case n == 0:
		d.fail(field, "truncated")
		return 0
	case n < 0:
		d.fail(field, "varint overflows 64 bits")
		return 0
	case n > 1 && d.b[d.off+n-1] == 0:
		// A minimal varint never ends in a zero byte (except 0 itself).
		d.fail(field, "non-minimal varint")
		return 0
	}
	d.off += n
	return v
}

func (d *decoder) int32(field string) int32 {
	v := d.uvarint(field)
	if v > math.MaxInt32 {
		d.fail(field, "%d exceeds %d", v, math.MaxInt32)
		return 0
	}
	return int32(v)
}

// count reads an element count and checks that the rest of the payload can
// hold that many elements of at least min bytes each, so a hostile count
// cannot make the caller allocate more than the frame justifies.
func (d *decoder) count(field string, min int) int {
	v := d.uvarint(field)
	if d.err != nil {
		return 0
	}
	if v > uint64(d.rest()/min) {
		d.fail(field, "count %d exceeds what %d remaining bytes can hold", v, d.rest())
		return 0
	}
	return int(v)
}

func (d *decoder) bytes(field string, max int) []byte {
	v := d.uvarint(field)
	if d.err != nil {
		return nil
	}
	if v > uint64(max) {
		d.fail(field, "length %d exceeds limit %d", v, max)
		return nil
	}
	if v > uint64(d.rest()) {
		d.fail(field, "length %d exceeds %d remaining bytes", v, d.rest())
		return nil
	}
	b := d.b[d.off : d.off+int(v) : d.off+int(v)]
	d.off += int(v)
	return b
}

func (d *decoder) str(field string, max int) string { return string(d.bytes(field, max)) }

func (d *decoder) byte1(field string) byte {
	if d.err != nil {
		return 0
	}
	if d.rest() < 1 {
		d.fail(field, "truncated")
		return 0
	}
	c := d.b[d.off]
	d.off++
	return c
}

func (d *decoder) bool(field string) bool {
	c := d.byte1(field)
	if c > 1 {
		d.fail(field, "boolean byte %d is neither 0 nor 1", c)
	}
	return c == 1
}

func (d *decoder) kind() Kind {
	k := Kind(d.byte1("kind"))
	if d.err == nil && !k.valid() {
		d.fail("kind", "unknown collective kind %d", uint8(k))
	}
	return k
}

func (d *decoder) ranks(field string) []int32 {
	n := d.count(field, 1)
	if n == 0 {
		return nil
	}
	rs := make([]int32, n)
	for i := range rs {
		rs[i] = d.int32(field)
	}
	return rs
}

// Encoding. Each appendPayload checks the limits its decoder checks.

func appendStr(b []byte, field, s string, max int) ([]byte, error) {
	if len(s) > max {
		return b, fmt.Errorf("%w: %s of %d bytes exceeds limit %d", ErrMalformed, field, len(s), max)
	}
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...), nil
}

func appendBytes(b []byte, field string, v []byte, max int) ([]byte, error) {
	if len(v) > max {
		return b, fmt.Errorf("%w: %s of %d bytes exceeds limit %d", ErrMalformed, field, len(v), max)
	}
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...), nil
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

func (m *Collective) appendPayload(b []byte) ([]byte, error) {
	b = binary.AppendUvarint(b, m.Seq)
	b, err := appendKind(b, m.Kind)
	if err != nil {
		return b, err
	}
	b = binary.AppendUvarint(b, uint64(len(m.Contribs)))
	for _, c := range m.Contribs {
		if b, err = appendInt32(b, "contribution rank", c.Rank); err != nil {
			return b, err
		}
		b = binary.AppendUvarint(b, uint64(len(c.Data)))
		b = append(b, c.Data...)
	}
	return b, nil
}

func (m *Result) appendPayload(b []byte) ([]byte, error) {
	b = binary.AppendUvarint(b, m.Seq)
	b, err := appendKind(b, m.Kind)
	if err != nil {
		return b, err
	}
	b = binary.AppendUvarint(b, uint64(len(m.Data)))
	for _, d := range m.Data {
		b = binary.AppendUvarint(b, uint64(len(d)))
		b = append(b, d...)
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
