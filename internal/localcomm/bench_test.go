package localcomm_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/ckpt/ckpt/internal/localcomm"
	"github.com/ckpt/ckpt/internal/redundancy"
	"github.com/ckpt/ckpt/internal/redundancy/inproc"
)

// BenchmarkTransport measures what the partition guard of a set's
// transport costs per message: a bare inproc endpoint against the one
// SetTransport returns, for a small message and a redundancy block.
func BenchmarkTransport(b *testing.B) {
	for _, size := range []int{64, redundancy.DefaultBlockSize} {
		b.Run(fmt.Sprint("inproc/", size), func(b *testing.B) {
			nw := inproc.New(2)
			oneWay(b, nw.Endpoint(0), nw.Endpoint(1), size)
		})
		b.Run(fmt.Sprint("localcomm/", size), func(b *testing.B) {
			comms := localcomm.Job(2)
			trs := make([]redundancy.Transport, 2)
			for r, c := range comms {
				tr, closer, err := c.SetTransport(context.Background(), []int{0, 1}, 1)
				if err != nil {
					b.Fatal(err)
				}
				defer closer.Close()
				trs[r] = tr
			}
			oneWay(b, trs[0], trs[1], size)
		})
	}
}

// oneWay sends b.N messages of size bytes from a to c, which receives them
// in a goroutine of its own.
func oneWay(b *testing.B, a, c redundancy.Transport, size int) {
	ctx := context.Background()
	errc := make(chan error, 1)
	go func() {
		buf := make([]byte, size)
		var err error
		for i := 0; i < b.N && err == nil; i++ {
			buf, err = c.Recv(ctx, 0, 1, buf[:0])
		}
		errc <- err
	}()
	msg := make([]byte, size)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if err := a.Send(ctx, 1, 1, msg); err != nil {
			b.Fatal(err)
		}
	}
	if err := <-errc; err != nil {
		b.Fatal(err)
	}
}
