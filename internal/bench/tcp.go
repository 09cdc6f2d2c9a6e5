package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/ckpt/ckpt/internal/peer"
	"github.com/ckpt/ckpt/internal/redundancy"
)

// The whole encode of a set over the network transport (package peer),
// against plain loopback TCP carrying the same bytes between the same
// pairs.

// EncodeTraffic returns the bytes redundancy.Encode sends over the
// transport when every member of a set of layout l holds size bytes:
// out[i][j] from member i to member j. In each of the m parity passes
// every member sends its k chunks, each to the row's parity holder, less
// the zero padding beyond its size (which travels as short messages): so
// each member sends m·size bytes in all, spread over the other members.
func EncodeTraffic(l redundancy.Layout, size int64) [][]int64 {
	n, k, m := l.Members(), l.DataShards(), l.ParityShards()
	chunk := l.ChunkSize(size)
	out := make([][]int64, n)
	for i := range out {
		out[i] = make([]int64, n)
	}
	for p := range m {
		for row := range n {
			for c := range k {
				b := max(0, min(chunk, size-int64(c)*chunk))
				out[l.DataMember(row, c)][l.ParityHolder(row, p)] += b
			}
		}
	}
	return out
}

// TrafficBytes is the sum of a traffic matrix: the bytes that cross the
// network.
func TrafficBytes(traffic [][]int64) int64 {
	var sum int64
	for _, row := range traffic {
		for _, b := range row {
			sum += b
		}
	}
	return sum
}

// LoopbackMesh copies traffic over plain loopback TCP (TCP_NODELAY, as
// package peer sets): one connection per ordered pair that carries bytes,
// all at once, each with a goroutine that writes blocks of blockSize from
// one buffer and one that reads each block whole into a buffer of its
// own. It returns the seconds from the first write to the last read; the
// connections are made before. This is the limit of any transport over
// TCP for that traffic on this machine.
func LoopbackMesh(ctx context.Context, traffic [][]int64, blockSize int) (float64, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	type pair struct {
		w, r  net.Conn
		bytes int64
	}
	var pairs []pair
	defer func() {
		for _, p := range pairs {
			p.w.Close()
			p.r.Close()
		}
	}()
	for _, row := range traffic {
		for _, b := range row {
			if b == 0 {
				continue
			}
			w, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				return 0, err
			}
			r, err := ln.Accept()
			if err != nil {
				w.Close()
				return 0, err
			}
			pairs = append(pairs, pair{w, r, b})
			w.(*net.TCPConn).SetNoDelay(true)
			r.(*net.TCPConn).SetNoDelay(true)
		}
	}
	stop := context.AfterFunc(ctx, func() {
		for _, p := range pairs {
			p.w.Close()
			p.r.Close()
		}
	})
	defer stop()
	src := make([]byte, blockSize)
	errs := make([]error, 2*len(pairs))
	var wg sync.WaitGroup
	start := time.Now()
	for i, p := range pairs {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for n := int64(0); n < p.bytes; n += int64(blockSize) {
				if _, err := p.w.Write(src[:min(int64(blockSize), p.bytes-n)]); err != nil {
					errs[2*i] = err
					p.r.Close() // the reader must not wait for the rest
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			buf := make([]byte, blockSize)
			for n := int64(0); n < p.bytes; n += int64(blockSize) {
				if _, err := io.ReadFull(p.r, buf[:min(int64(blockSize), p.bytes-n)]); err != nil {
					errs[2*i+1] = err
					p.w.Close() // nor the writer for a reader
					return
				}
			}
		}()
	}
	wg.Wait()
	d := time.Since(start).Seconds()
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return d, errors.Join(errs...)
}

// Cyclic is an io.ReaderAt of unbounded length that repeats its bytes: a
// member's data in memory, at the cost of one copy per read (as
// bytes.Reader), without holding a whole checkpoint.
type Cyclic []byte

// ReadAt fills p with the bytes at off.
func (c Cyclic) ReadAt(p []byte, off int64) (int, error) {
	n := 0
	for n < len(p) {
		n += copy(p[n:], c[(off+int64(n))%int64(len(c)):])
	}
	return n, nil
}

// EncodeSet runs redundancy.Encode of one set on nodes (ranks 0..n−1, in
// member order) as the set (members, epoch), every member at once with
// size bytes of data from its reader and its parity discarded, and returns
// the seconds from the start until the last member has finished (opening
// the set and dialling its connections included).
func EncodeSet(ctx context.Context, l redundancy.Layout, nodes []*peer.Node, epoch uint64, data []io.ReaderAt, size int64, opts ...redundancy.Option) (float64, error) {
	members := make([]int, len(nodes))
	for i := range members {
		members[i] = i
	}
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	start := time.Now()
	for i, nd := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tr, closer, err := nd.OpenSet(ctx, members, epoch)
			if err != nil {
				errs[i] = err
				return
			}
			// On error, closing fails the peers instead of leaving them waiting.
			defer closer.Close()
			errs[i] = redundancy.Encode(ctx, l, i, tr, data[i], size, size, io.Discard, opts...)
		}()
	}
	wg.Wait()
	d := time.Since(start).Seconds()
	for i, err := range errs {
		if err != nil {
			return 0, fmt.Errorf("member %d: %w", i, err)
		}
	}
	return d, nil
}

// encodeTCPTimeout bounds one encode or loopback copy: a hang fails the
// bench instead of stalling it.
const encodeTCPTimeout = 2 * time.Minute

// encodeTCP measures the whole XOR encode of a set of 4 members × size
// bytes over the network transport: 4 peer Nodes in this process on
// loopback, default options, 1 MiB blocks, every member's data read from
// memory and its parity discarded. It returns the set's checkpoint bytes
// per second — for XOR also the bytes that cross the network per second,
// since each member sends its whole data once — and the rate of a plain
// loopback TCP copy of the same bytes between the same pairs; each is the
// best of runs, the two alternating so that the machine's drift touches
// both.
func encodeTCP(ctx context.Context, size int64, src []byte, runs int) (enc, raw float64, err error) {
	l, err := redundancy.NewLayout(4, 1)
	if err != nil {
		return 0, 0, err
	}
	const token = "ckpt-bench"
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	res := peer.NewMapResolver()
	nodes := make([]*peer.Node, l.Members())
	for i := range nodes {
		nd, err := peer.Listen(i, len(nodes), token, res, peer.WithLogger(quiet))
		if err != nil {
			return 0, 0, err
		}
		defer nd.Close()
		res.Publish(i, nd.Addr())
		nodes[i] = nd
	}
	// The members read one buffer of up to 64 MiB, over and over: larger
	// than the caches, as a checkpoint read from the page cache is.
	pattern := make([]byte, min(size, 64<<20))
	for off := 0; off < len(pattern); off += len(src) {
		copy(pattern[off:], src)
		pattern[off] = byte(off / len(src))
	}
	data := make([]io.ReaderAt, len(nodes))
	for i := range data {
		data[i] = Cyclic(pattern)
	}
	traffic := EncodeTraffic(l, size)
	sent := float64(TrafficBytes(traffic))
	for run := range runs {
		ctx, cancel := context.WithTimeout(ctx, encodeTCPTimeout)
		d, err := EncodeSet(ctx, l, nodes, uint64(run+1), data, size, redundancy.WithBlockSize(block))
		if err == nil {
			enc = max(enc, float64(len(nodes))*float64(size)/d)
			d, err = LoopbackMesh(ctx, traffic, block)
			raw = max(raw, sent/d)
		}
		cancel()
		if err != nil {
			return 0, 0, err
		}
	}
	return enc, raw, nil
}
