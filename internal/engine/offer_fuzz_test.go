package engine

import (
	"encoding/binary"
	"reflect"
	"testing"
)

// FuzzParseOffer: an offer of any bytes (a rank sending garbage, a
// corrupt message) is refused or parsed, never a panic or an allocation
// beyond its size, and what parses parses back the same once written
// (not necessarily to the same bytes: a length may be a non-minimal
// uvarint).
func FuzzParseOffer(f *testing.F) {
	f.Add(appendOffer(nil, offer{Node: "node0", Cache: [][]byte{[]byte("a"), []byte("bc")}, Shared: [][]byte{[]byte("d")}}))
	f.Add([]byte{})
	// A length of 2^63 and an overflowing uvarint, where a text's
	// length or a list's count is read.
	huge := binary.AppendUvarint(nil, 1<<63)
	f.Add(huge)
	f.Add(append([]byte{0}, huge...))
	f.Add(append([]byte{0, 1}, huge...))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Add([]byte{0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		o, err := parseOffer(b)
		if err != nil {
			return
		}
		if n := len(o.Cache) + len(o.Shared); n > len(b) {
			t.Fatalf("%d texts from %d bytes", n, len(b))
		}
		back, err := parseOffer(appendOffer(nil, o))
		if err != nil || !reflect.DeepEqual(back, o) {
			t.Fatalf("parsed %x as %+v; written and parsed again: %+v, %v", b, o, back, err)
		}
	})
}
