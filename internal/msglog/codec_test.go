package msglog

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"reflect"
	"testing"
)

func TestSenderStateEncoding(t *testing.T) {
	s := NewSender(SenderState{})
	for i, to := range []int{3, 1, 3, 3, 7} {
		s.Send(5, to, []byte{byte(i), 'x'})
	}
	s.Send(5, 1, nil)
	s.Ack(3, 1)
	s.Ack(7, 1)
	st := s.State()
	got, err := DecodeSenderState(AppendSenderState(nil, st), 5)
	if err != nil {
		t.Fatal(err)
	}
	delete(st.Unacked, 7) // empty lists are not kept
	if !reflect.DeepEqual(got, st) {
		t.Fatalf("round trip = %+v, want %+v", got, st)
	}
	if empty, err := DecodeSenderState(AppendSenderState(nil, SenderState{}), 0); err != nil || len(empty.Next) != 0 {
		t.Fatalf("empty state: %+v, %v", empty, err)
	}
}

func TestSenderStateRefused(t *testing.T) {
	u := func(vs ...uint64) []byte {
		var b []byte
		for _, v := range vs {
			b = binary.AppendUvarint(b, v)
		}
		return b
	}
	for name, b := range map[string][]byte{
		"truncated":          u(1, 2, 3),
		"acked beyond next":  u(1, 2, 3, 4, 0),
		"unacked acked":      u(1, 2, 3, 1, 1, 1, 0),
		"unacked beyond":     u(1, 2, 3, 1, 1, 4, 0),
		"unacked unordered":  u(1, 2, 5, 1, 2, 4, 0, 3, 0),
		"receivers unsorted": u(2, 3, 1, 0, 0, 1, 1, 0, 0),
		"trailing":           u(0, 0),
		"huge count":         u(1 << 40),
	} {
		if _, err := DecodeSenderState(b, 0); err == nil {
			t.Errorf("%s: DecodeSenderState(%x) accepted it", name, b)
		}
	}
}

// Whatever bytes the decoders accept, they encode back to the same bytes:
// one value, one encoding, and nothing accepted that the encoder would
// not write.
func FuzzDecoders(f *testing.F) {
	f.Add(AppendPoint(nil, Point{Index: 3, Seqs: map[int]uint64{1: 2, 4: 1}}))
	f.Add(AppendSenderState(nil, SenderState{Next: map[int]uint64{2: 3}, Acked: map[int]uint64{2: 1},
		Unacked: map[int][]Msg{2: {{Seq: 2, Data: []byte("a")}, {Seq: 3}}}}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		if p, err := DecodePoint(b); err == nil {
			if again := AppendPoint(nil, p); !bytes.Equal(again, b) {
				t.Fatalf("point %x decodes to %+v, which encodes to %x", b, p, again)
			}
		}
		if s, err := DecodeSenderState(b, 1); err == nil {
			again := AppendSenderState(nil, s)
			if !bytes.Equal(again, b) {
				t.Fatalf("sender state %x decodes to %s, which encodes to %x", b, fmt.Sprint(s), again)
			}
		}
	})
}
