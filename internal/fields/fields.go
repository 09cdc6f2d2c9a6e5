// Package fields reads and writes the fields of ckpt's binary encodings:
// the coordinator protocol (internal/wire), the staging protocol
// (internal/stage), the peer handshake (internal/peer) and the policy's
// reports (internal/policy). Integers are minimal varints (encoding/binary;
// one value, one encoding), byte strings are length-prefixed, and every
// length and count is checked against a limit and against what is left of
// the input before anything is allocated for it, so a hostile length
// cannot make a reader allocate more than the input justifies.
//
// A Decoder's first error sticks: later reads return zero values, so a
// decoder reads a whole payload straight through and checks the error
// once, at End.
package fields

import (
	"encoding/binary"
	"fmt"
)

// Decoder reads fields from a byte slice. The zero value reads nothing;
// use NewDecoder. Byte slices it returns alias the input.
type Decoder struct {
	b   []byte
	off int
	err error
}

// NewDecoder returns a Decoder of b.
func NewDecoder(b []byte) *Decoder { return &Decoder{b: b} }

// Err is the first error recorded, or nil. Its text names the field and
// the byte offset; callers wrap it in their own sentinel.
func (d *Decoder) Err() error { return d.err }

// Rest is the number of bytes not read yet.
func (d *Decoder) Rest() int { return len(d.b) - d.off }

// Failf records an error about field (which may be empty) unless one is
// recorded already: "field: message at byte N".
func (d *Decoder) Failf(field, format string, args ...any) {
	if d.err != nil {
		return
	}
	msg := fmt.Sprintf(format, args...)
	if field != "" {
		msg = field + ": " + msg
	}
	d.err = fmt.Errorf("%s at byte %d", msg, d.off)
}

// End records an error if bytes are left over and returns Err.
func (d *Decoder) End() error {
	if d.err == nil && d.off != len(d.b) {
		d.Failf("", "%d trailing bytes", len(d.b)-d.off)
	}
	return d.err
}

// varint reads one minimal varint's bytes: the raw unsigned value.
func (d *Decoder) varint(field string) (uint64, bool) {
	if d.err != nil {
		return 0, false
	}
	v, n := binary.Uvarint(d.b[d.off:])
	switch {
	case n == 0:
		d.Failf(field, "truncated")
		return 0, false
	case n < 0:
		d.Failf(field, "varint overflows 64 bits")
		return 0, false
	case n > 1 && d.b[d.off+n-1] == 0:
		// A minimal varint never ends in a zero byte (but 0 itself).
		d.Failf(field, "non-minimal varint")
		return 0, false
	}
	d.off += n
	return v, true
}

// Uvarint reads an unsigned varint of at most max.
func (d *Decoder) Uvarint(field string, max uint64) uint64 {
	v, ok := d.varint(field)
	if ok && v > max {
		d.Failf(field, "%d exceeds %d", v, max)
		return 0
	}
	return v
}

// Varint reads a signed (zigzag) varint, as binary.AppendVarint writes it.
func (d *Decoder) Varint(field string) int64 {
	u, _ := d.varint(field)
	return int64(u>>1) ^ -int64(u&1)
}

// Count reads the number of elements that follow, each at least min ≥ 1
// bytes long: at most what the rest of the input can hold.
func (d *Decoder) Count(field string, min int) int {
	v, ok := d.varint(field)
	if ok && v > uint64(d.Rest()/min) {
		d.Failf(field, "count %d exceeds what %d remaining bytes can hold", v, d.Rest())
		return 0
	}
	return int(v)
}

// Bytes reads a length of at most max and that many bytes.
func (d *Decoder) Bytes(field string, max int) []byte {
	n, ok := d.varint(field)
	switch {
	case !ok:
		return nil
	case n > uint64(max):
		d.Failf(field, "length %d exceeds limit %d", n, max)
		return nil
	case n > uint64(d.Rest()):
		d.Failf(field, "length %d exceeds %d remaining bytes", n, d.Rest())
		return nil
	}
	return d.take(int(n))
}

// String is Bytes as a string (a copy).
func (d *Decoder) String(field string, max int) string { return string(d.Bytes(field, max)) }

// Fixed reads n bytes.
func (d *Decoder) Fixed(field string, n int) []byte {
	if d.err != nil {
		return nil
	}
	if n > d.Rest() {
		d.Failf(field, "truncated: %d bytes, %d left", n, d.Rest())
		return nil
	}
	return d.take(n)
}

func (d *Decoder) take(n int) []byte {
	v := d.b[d.off : d.off+n : d.off+n]
	d.off += n
	return v
}

// Byte reads one byte.
func (d *Decoder) Byte(field string) byte {
	if b := d.Fixed(field, 1); b != nil {
		return b[0]
	}
	return 0
}

// Bool reads a byte that must be 0 or 1.
func (d *Decoder) Bool(field string) bool {
	c := d.Byte(field)
	if c > 1 {
		d.Failf(field, "boolean byte %d is neither 0 nor 1", c)
		return false
	}
	return c == 1
}

// AppendBytes appends v with its length, as Bytes reads it.
func AppendBytes(b, v []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

// AppendString appends s with its length, as String reads it.
func AppendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}
