package fields

import (
	"bytes"
	"encoding/binary"
	"math"
	"strings"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	var b []byte
	b = binary.AppendUvarint(b, 0)
	b = binary.AppendUvarint(b, math.MaxUint64)
	b = binary.AppendVarint(b, math.MinInt64)
	b = binary.AppendVarint(b, -1)
	b = binary.AppendUvarint(b, 2) // count of 2 strings
	b = AppendString(b, "")
	b = AppendString(b, "rank-3")
	b = AppendBytes(b, []byte{0, 1, 2})
	b = append(b, 7, 1, 0)
	b = append(b, "tail"...)

	d := NewDecoder(b)
	if v := d.Uvarint("zero", 0); v != 0 {
		t.Errorf("zero: %d", v)
	}
	if v := d.Uvarint("max", math.MaxUint64); v != math.MaxUint64 {
		t.Errorf("max: %d", v)
	}
	if v := d.Varint("min"); v != math.MinInt64 {
		t.Errorf("min: %d", v)
	}
	if v := d.Varint("minus one"); v != -1 {
		t.Errorf("minus one: %d", v)
	}
	n := d.Count("strings", 1)
	var got []string
	for range n {
		got = append(got, d.String("s", 16))
	}
	if len(got) != 2 || got[0] != "" || got[1] != "rank-3" {
		t.Errorf("strings %q", got)
	}
	if v := d.Bytes("bytes", 3); !bytes.Equal(v, []byte{0, 1, 2}) {
		t.Errorf("bytes %v", v)
	}
	if c, t1, f := d.Byte("byte"), d.Bool("true"), d.Bool("false"); c != 7 || !t1 || f {
		t.Errorf("byte %d, bools %v %v", c, t1, f)
	}
	if d.Rest() != 4 || string(d.Fixed("tail", 4)) != "tail" {
		t.Errorf("tail")
	}
	if err := d.End(); err != nil {
		t.Fatal(err)
	}
}

func TestRefuses(t *testing.T) {
	uv := func(v uint64) []byte { return binary.AppendUvarint(nil, v) }
	cases := []struct {
		name string
		in   []byte
		read func(d *Decoder)
		want string
	}{
		{"empty uvarint", nil, func(d *Decoder) { d.Uvarint("id", 9) }, "id: truncated at byte 0"},
		{"cut uvarint", []byte{0x80}, func(d *Decoder) { d.Uvarint("id", 9) }, "id: truncated"},
		{"overflow", bytes.Repeat([]byte{0xff}, 11), func(d *Decoder) { d.Uvarint("id", math.MaxUint64) }, "overflows 64 bits"},
		{"padded", []byte{0x81, 0x00}, func(d *Decoder) { d.Uvarint("id", 9) }, "id: non-minimal varint"},
		{"padded zigzag", []byte{0x82, 0x80, 0x00}, func(d *Decoder) { d.Varint("step") }, "step: non-minimal varint"},
		{"over max", uv(10), func(d *Decoder) { d.Uvarint("rank", 9) }, "rank: 10 exceeds 9"},
		{"count lies", append(uv(5), 1, 2, 3, 4), func(d *Decoder) { d.Count("ranks", 1) }, "count 5 exceeds what 4 remaining bytes"},
		{"count of wide items", append(uv(3), make([]byte, 5)...), func(d *Decoder) { d.Count("pairs", 2) }, "count 3 exceeds"},
		{"length over limit", append(uv(5), "hello"...), func(d *Decoder) { d.Bytes("token", 4) }, "token: length 5 exceeds limit 4"},
		{"length over rest", append(uv(5), "hell"...), func(d *Decoder) { d.String("token", 64) }, "length 5 exceeds 4 remaining bytes"},
		{"fixed short", []byte{1, 2}, func(d *Decoder) { d.Fixed("epoch", 8) }, "epoch: truncated: 8 bytes, 2 left"},
		{"no byte", nil, func(d *Decoder) { d.Byte("state") }, "state: truncated"},
		{"bool 2", []byte{2}, func(d *Decoder) { d.Bool("wait") }, "wait: boolean byte 2"},
		{"trailing", []byte{0, 9, 9}, func(d *Decoder) { d.Uvarint("x", 1) }, "2 trailing bytes at byte 1"},
		{"first error sticks", []byte{0x80}, func(d *Decoder) {
			d.Uvarint("first", 1)
			d.Uvarint("second", 1)
			d.Failf("third", "later")
		}, "first: truncated"},
	}
	for _, c := range cases {
		d := NewDecoder(c.in)
		c.read(d)
		err := d.End()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
	// After an error every read is a zero value.
	d := NewDecoder([]byte{0x80, 1, 1})
	d.Uvarint("bad", 1)
	if d.Uvarint("x", 9) != 0 || d.Bytes("b", 9) != nil || d.Fixed("f", 1) != nil || d.Byte("c") != 0 || d.Count("n", 1) != 0 {
		t.Error("reads after an error returned values")
	}
}

// FuzzDecoder reads arbitrary input with every kind of field: no panic,
// never past the input, and whatever it accepts encodes back to the same
// bytes (one value, one encoding).
func FuzzDecoder(f *testing.F) {
	f.Add([]byte{0}, uint8(0))
	f.Add(AppendString(binary.AppendUvarint(nil, 300), "abc"), uint8(3))
	f.Add([]byte{0x81, 0x00}, uint8(1))
	f.Fuzz(func(t *testing.T, in []byte, plan uint8) {
		d := NewDecoder(in)
		var out []byte
		for i := 0; d.Err() == nil && d.Rest() > 0 && i < 64; i++ {
			switch (int(plan) + i) % 5 {
			case 0:
				v := d.Uvarint("u", math.MaxUint64)
				if d.Err() == nil {
					out = binary.AppendUvarint(out, v)
				}
			case 1:
				v := d.Varint("v")
				if d.Err() == nil {
					out = binary.AppendVarint(out, v)
				}
			case 2:
				v := d.Bytes("b", 1<<20)
				if d.Err() == nil {
					out = AppendBytes(out, v)
				}
			case 3:
				v := d.Byte("c")
				if d.Err() == nil {
					out = append(out, v)
				}
			case 4:
				n := d.Count("n", 1)
				if d.Err() == nil {
					if n > d.Rest() {
						t.Fatalf("count %d beyond %d remaining bytes", n, d.Rest())
					}
					out = binary.AppendUvarint(out, uint64(n))
				}
			}
		}
		if d.Err() == nil && !bytes.Equal(out, in[:len(in)-d.Rest()]) {
			t.Fatalf("accepted %x but encodes back as %x", in[:len(in)-d.Rest()], out)
		}
	})
}
