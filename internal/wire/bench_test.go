package wire

import (
	"fmt"
	"testing"
)

// collective64 is what a relay sends for a node of 64 ranks: one
// contribution of 64 bytes per rank.
func collective64() *Collective {
	c := &Collective{Seq: 12345, Kind: AllGather, Contribs: make([]Contrib, 64)}
	for i := range c.Contribs {
		c.Contribs[i] = Contrib{Rank: int32(1000 + i), Data: []byte(fmt.Sprintf("%064d", i))}
	}
	return c
}

func BenchmarkEncodeCollective64(b *testing.B) {
	c := collective64()
	buf, _ := Encode(c)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = Append(buf[:0], c); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeCollective64(b *testing.B) {
	buf, _ := Encode(collective64())
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(buf); err != nil {
			b.Fatal(err)
		}
	}
}
