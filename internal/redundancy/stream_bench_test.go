package redundancy_test

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"testing"

	. "github.com/ckpt/ckpt/internal/redundancy"
	"github.com/ckpt/ckpt/internal/redundancy/inproc"
)

// BenchmarkStreamEncode4x64MiB is the whole in-process streaming encode of a set
// of 4 members × 64 MiB with the default block size: reads from memory,
// messages through package inproc (one copy in Send, one in Recv), the
// codec, parity written to io.Discard. SetBytes counts the checkpoint
// bytes of the whole set; the members run as goroutines on every core.
func BenchmarkStreamEncode4x64MiB(b *testing.B) {
	const n, size = 4, 64 << 20
	rng := rand.New(rand.NewPCG(1, 2))
	data := make([][]byte, n)
	for i := range data {
		data[i] = make([]byte, size)
		for j := 0; j < size; j += 8 {
			v := rng.Uint64()
			for k := range 8 {
				data[i][j+k] = byte(v >> (8 * k))
			}
		}
	}
	for _, scheme := range []string{"partner", "xor:4", "rs:2+2", "rs:3+1"} {
		b.Run(scheme, func(b *testing.B) {
			l := layoutOf(b, scheme)
			b.SetBytes(int64(l.Members()) * size)
			b.ReportAllocs()
			for b.Loop() {
				errs := inproc.New(l.Members()).Run(context.Background(), func(ctx context.Context, me int, ep *inproc.Endpoint) error {
					return Encode(ctx, l, me, ep, bytes.NewReader(data[me]), size, size, io.Discard)
				})
				for i, err := range errs {
					if err != nil {
						b.Fatal(i, err)
					}
				}
			}
			ReportVsMemcopy(b, int64(l.Members())*size)
		})
	}
}
