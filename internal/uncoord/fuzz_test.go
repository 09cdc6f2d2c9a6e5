package uncoord

import (
	"bytes"
	"testing"

	"github.com/ckpt/ckpt/internal/msglog"
)

// FuzzDecoders: whatever the snapshot's and the frames' decoders accept
// encodes back to the same bytes (the encodings are canonical, so a
// decoder cannot accept what the encoder would not write).
func FuzzDecoders(f *testing.F) {
	f.Add(Snapshot{}.Bytes())
	f.Add(Snapshot{Point: msglog.Point{Index: 3, Seqs: map[int]uint64{1: 2}},
		Sender:  msglog.SenderState{Next: map[int]uint64{1: 4}, Acked: map[int]uint64{1: 3}, Unacked: map[int][]msglog.Msg{1: {{Seq: 4, Data: []byte("u")}}}},
		Pending: []Message{{From: 1, Data: []byte("p")}}}.Bytes())
	for _, fr := range []frame{{kind: kData, seq: 9, data: []byte("abc")}, {kind: kAck, seq: 3}, {kind: kHello, seq: 1}, {kind: kReply, seq: 2}, {kind: kRefuse}} {
		f.Add(fr.append(nil))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if s, err := DecodeSnapshot(b, 0); err == nil {
			if got := s.Bytes(); !bytes.Equal(got, b) {
				t.Errorf("snapshot %x decoded and encoded as %x", b, got)
			}
		}
		if fr, err := decodeFrame(b); err == nil {
			if got := fr.append(nil); !bytes.Equal(got, b) {
				t.Errorf("frame %x decoded and encoded as %x", b, got)
			}
		}
	})
}
