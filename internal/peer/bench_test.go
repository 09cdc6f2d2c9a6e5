package peer_test

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/jobtls/jobtlstest"
	"github.com/ckpt/ckpt/internal/peer"
	"github.com/ckpt/ckpt/internal/testwait"
)

// rawPair returns the two ends of a loopback TCP connection, Nagle off.
func rawPair(tb testing.TB) (*net.TCPConn, *net.TCPConn) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	acc := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		acc <- c
	}()
	a, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		tb.Fatal(err)
	}
	b := testwait.Recv(tb, acc, "the accepted connection")
	if b == nil {
		tb.Fatal("accept failed")
	}
	a.(*net.TCPConn).SetNoDelay(true)
	b.(*net.TCPConn).SetNoDelay(true)
	return a.(*net.TCPConn), b.(*net.TCPConn)
}

// rawLoopbackRate is bytes/s of a plain loopback TCP copy in blocks of
// size: one goroutine writes, the other reads each block whole into one
// buffer. It is the ceiling of what a transport over TCP can do here.
func rawLoopbackRate(tb testing.TB, size int, d time.Duration) float64 {
	w, r := rawPair(tb)
	defer w.Close()
	defer r.Close()
	stop := make(chan struct{})
	go func() {
		msg := make([]byte, size)
		for {
			select {
			case <-stop:
				w.Close()
				return
			default:
			}
			if _, err := w.Write(msg); err != nil {
				return
			}
		}
	}()
	buf := make([]byte, size)
	io.ReadFull(r, buf) // warm up
	start, n := time.Now(), 0
	for time.Since(start) < d {
		if _, err := io.ReadFull(r, buf); err != nil {
			tb.Fatal(err)
		}
		n++
	}
	rate := float64(n*size) / time.Since(start).Seconds()
	close(stop)
	io.Copy(io.Discard, r)
	return rate
}

// BenchmarkRawLoopback1MiB is the plain TCP copy alone.
func BenchmarkRawLoopback1MiB(b *testing.B) {
	w, r := rawPair(b)
	defer r.Close()
	msg := make([]byte, 1<<20)
	go func() {
		defer w.Close()
		for range b.N {
			if _, err := w.Write(msg); err != nil {
				return
			}
		}
	}()
	buf := make([]byte, 1<<20)
	b.SetBytes(1 << 20)
	for range b.N {
		if _, err := io.ReadFull(r, buf); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppThroughput1MiB streams 1 MiB messages from one rank to
// another on the application channel, and reports beside it the raw
// loopback copy measured right after in the same run (raw-MB/s) and the
// ratio (x-raw): on a shared machine, rates drift between runs.
func BenchmarkAppThroughput1MiB(b *testing.B) {
	const size = 1 << 20
	nodes, _ := cluster(b, 2)
	msg, buf := connectStream(b, nodes, size)
	b.SetBytes(size)
	b.ReportAllocs()
	b.ResetTimer()
	rate := streamRate(b, nodes, msg, buf, b.N)
	b.StopTimer()
	raw := rawLoopbackRate(b, size, max(300*time.Millisecond, b.Elapsed()/2))
	b.ReportMetric(raw/1e6, "raw-MB/s")
	b.ReportMetric(rate/raw, "x-raw")
}

// BenchmarkRoundTrip8B is the latency of a small message there and back
// on the application channel (ns/op is one round trip), beside a raw TCP
// ping-pong measured in the same run (raw-ns/rt).
func BenchmarkRoundTrip8B(b *testing.B) {
	nodes, _ := cluster(b, 2)
	ctx := context.Background()
	msg := make([]byte, 8)
	errc := make(chan error, 1)
	go func() {
		buf := make([]byte, 0, 8)
		for {
			got, err := nodes[1].Recv(ctx, 0, 1, buf)
			if err != nil {
				errc <- nil
				return
			}
			if err := nodes[1].Send(ctx, 0, 2, got); err != nil {
				errc <- err
				return
			}
		}
	}()
	buf := make([]byte, 0, 8)
	pingPong := func() {
		if err := nodes[0].Send(ctx, 1, 1, msg); err != nil {
			b.Fatal(err)
		}
		if _, err := nodes[0].Recv(ctx, 1, 2, buf); err != nil {
			b.Fatal(err)
		}
	}
	pingPong() // connect both ways
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		pingPong()
	}
	b.StopTimer()
	b.ReportMetric(rawRoundTrip(b, 8, 300*time.Millisecond).Seconds()*1e9, "raw-ns/rt")
	nodes[0].Close()
	nodes[1].Close()
	testwait.Recv(b, errc, "the echo")
}

func rawRoundTrip(tb testing.TB, size int, d time.Duration) time.Duration {
	a, c := rawPair(tb)
	defer a.Close()
	go func() {
		defer c.Close()
		buf := make([]byte, size)
		for {
			if _, err := io.ReadFull(c, buf); err != nil {
				return
			}
			if _, err := c.Write(buf); err != nil {
				return
			}
		}
	}()
	buf := make([]byte, size)
	start, n := time.Now(), 0
	for time.Since(start) < d {
		a.Write(buf)
		if _, err := io.ReadFull(a, buf); err != nil {
			tb.Fatal(err)
		}
		n++
	}
	return time.Since(start) / time.Duration(n)
}

// connectStream connects nodes[0] to nodes[1] on the application
// channel with one message of size, and returns a message of that size
// and a buffer for it.
func connectStream(b *testing.B, nodes []*peer.Node, size int) (msg, buf []byte) {
	ctx := context.Background()
	msg, buf = make([]byte, size), make([]byte, 0, size)
	if err := nodes[0].Send(ctx, 1, 0, msg); err != nil {
		b.Fatal(err)
	}
	if _, err := nodes[1].Recv(ctx, 0, 0, buf); err != nil {
		b.Fatal(err)
	}
	return msg, buf
}

// streamRate is bytes/s of n messages msg sent from nodes[0] to nodes[1]
// on the application channel (tag 1), received into buf.
func streamRate(b *testing.B, nodes []*peer.Node, msg, buf []byte, n int) float64 {
	ctx := context.Background()
	errc := make(chan error, 1)
	start := time.Now()
	go func() {
		for range n {
			if err := nodes[0].Send(ctx, 1, 1, msg); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	for range n {
		if _, err := nodes[1].Recv(ctx, 0, 1, buf); err != nil {
			b.Fatal(err)
		}
	}
	if err := testwait.Recv(b, errc, "the receiver"); err != nil {
		b.Fatal(err)
	}
	return float64(len(msg)) * float64(n) / time.Since(start).Seconds()
}

// BenchmarkAppThroughputTLS1MiB streams 1 MiB messages on the
// application channel over the job's TLS (ns/op, MB/s), and reports the
// same stream over plain TCP measured right after in the same run
// (plain-MB/s) and the ratio (x-plain): the cost of ckpt run --tls on the
// peer channel.
func BenchmarkAppThroughputTLS1MiB(b *testing.B) {
	const size = 1 << 20
	secure, _ := cluster(b, 2, peer.WithTLS(jobtlstest.New(b)))
	plain, _ := cluster(b, 2)
	msg, buf := connectStream(b, secure, size)
	connectStream(b, plain, size)
	b.SetBytes(size)
	b.ResetTimer()
	rate := streamRate(b, secure, msg, buf, b.N)
	b.StopTimer()
	plainRate := streamRate(b, plain, msg, buf, max(b.N, 64))
	b.ReportMetric(plainRate/1e6, "plain-MB/s")
	b.ReportMetric(rate/plainRate, "x-plain")
}

// BenchmarkRoundTripTLS8B is a small message there and back on the
// application channel over TLS (ns/op), beside the same over plain TCP in
// the same run (plain-ns/rt).
func BenchmarkRoundTripTLS8B(b *testing.B) {
	secure, _ := cluster(b, 2, peer.WithTLS(jobtlstest.New(b)))
	plain, _ := cluster(b, 2)
	b.ReportAllocs()
	b.ResetTimer()
	roundTrips(b, secure, b.N)
	b.StopTimer()
	n := max(b.N, 1000)
	start := time.Now()
	roundTrips(b, plain, n)
	plainRT := time.Since(start) / time.Duration(n)
	b.ReportMetric(float64(plainRT.Nanoseconds()), "plain-ns/rt")
	b.ReportMetric(float64(b.Elapsed())/float64(b.N)/float64(plainRT), "x-plain")
}

// roundTrips makes n round trips of 8 bytes from nodes[0] to nodes[1]
// and back, after one that connects both ways.
func roundTrips(b *testing.B, nodes []*peer.Node, n int) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		buf := make([]byte, 0, 8)
		for {
			got, err := nodes[1].Recv(ctx, 0, 1, buf)
			if err != nil {
				return
			}
			if err := nodes[1].Send(ctx, 0, 2, got); err != nil {
				return
			}
		}
	}()
	msg, buf := make([]byte, 8), make([]byte, 0, 8)
	for range n + 1 {
		if err := nodes[0].Send(ctx, 1, 1, msg); err != nil {
			b.Fatal(err)
		}
		if _, err := nodes[0].Recv(ctx, 1, 2, buf); err != nil {
			b.Fatal(err)
		}
	}
}
