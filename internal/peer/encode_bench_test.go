package peer_test

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/ckpt/ckpt/internal/bench"
	"github.com/ckpt/ckpt/internal/redundancy"
)

// BenchmarkEncodeXOR4TCP is the store's whole encode of an XOR set over
// this transport: 4 Nodes on loopback (default options), each member
// encoding 64 MiB of data from memory with 1 MiB blocks, parity to
// io.Discard; every iteration opens a new set (new connections).
// SetBytes counts one member's checkpoint bytes (the members run at
// once, so MB/s is how fast each member's data is protected).
//
// Each member sends its whole data once (m·size bytes, m = 1), a third
// to each other member, so the network carries 4 × 64 MiB per iteration.
// Beside it: net-MB/s, those network bytes per second of encode;
// raw-MB/s, a plain loopback TCP copy of the same bytes between the same
// pairs (bench.LoopbackMesh), run after every encode (not timed in
// ns/op); and x-raw, their ratio.
func BenchmarkEncodeXOR4TCP(b *testing.B) { benchEncodeTCP(b, "xor:4") }

// BenchmarkEncodeRS22TCP is the same for RS 2+2: each member sends its
// data twice (m = 2), so the network carries 8 × 64 MiB per iteration.
func BenchmarkEncodeRS22TCP(b *testing.B) { benchEncodeTCP(b, "rs:2+2") }

func benchEncodeTCP(b *testing.B, scheme string) {
	const size = 64 << 20
	l := layoutOf(b, scheme)
	nodes, _ := cluster(b, l.Members())
	// One buffer read by every member (through its own reader): the
	// contents do not change the cost.
	buf := make([]byte, size)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	data := make([]io.ReaderAt, l.Members())
	for i := range data {
		data[i] = bytes.NewReader(buf)
	}
	traffic := bench.EncodeTraffic(l, size)
	sent := float64(bench.TrafficBytes(traffic))
	b.SetBytes(size)
	var epoch uint64
	var encSecs, rawSecs float64
	for b.Loop() {
		epoch++
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		d, err := bench.EncodeSet(ctx, l, nodes, epoch, data, size, redundancy.WithBlockSize(redundancy.DefaultBlockSize))
		if err != nil {
			cancel()
			b.Fatal(err)
		}
		encSecs += d
		// The raw copy right after each encode, so that both see the same
		// machine (it is shared, and its speed drifts).
		b.StopTimer()
		d, err = bench.LoopbackMesh(ctx, traffic, redundancy.DefaultBlockSize)
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		rawSecs += d
		b.StartTimer()
	}
	net := sent * float64(epoch) / encSecs
	raw := sent * float64(epoch) / rawSecs
	b.ReportMetric(net/1e6, "net-MB/s")
	b.ReportMetric(raw/1e6, "raw-MB/s")
	b.ReportMetric(net/raw, "x-raw")
}
