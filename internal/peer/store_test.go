package peer_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/ckpt/ckpt/internal/peer"
	"github.com/ckpt/ckpt/internal/redundancy"
	"github.com/ckpt/ckpt/internal/redundancy/inproc"
)

// The store's Encode and Rebuild, run by 4 Nodes over TCP set channels,
// write exactly the parity and rebuilt files of the in-process run.

func layoutOf(t testing.TB, scheme string) redundancy.Layout {
	t.Helper()
	s, err := redundancy.ParseScheme(scheme)
	if err != nil {
		t.Fatal(err)
	}
	l, err := s.Layout()
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// memberData returns n members' data of different sizes (one empty, one
// of a single byte, the others a few blocks and odd), all bytes non-zero.
func memberData(seed uint64, n, bs int) [][]byte {
	rng := rand.New(rand.NewPCG(seed, seed+1))
	pattern := []int{3*bs + 17, 0, 1, 2*bs - 1, bs, 777}
	out := make([][]byte, n)
	for i := range out {
		out[i] = make([]byte, pattern[i%len(pattern)])
		for j := range out[i] {
			out[i][j] = byte(rng.IntN(255) + 1)
		}
	}
	return out
}

func maxLen(data [][]byte) int64 {
	m := 0
	for _, d := range data {
		m = max(m, len(d))
	}
	return int64(m)
}

// encode is one member's part of a checkpoint's redundancy: the parity of
// its data, with maxSize the largest data size in the set (the runtime
// knows it from the members' manifests).
func encode(ctx context.Context, l redundancy.Layout, me int, tr redundancy.Transport, data []byte, maxSize int64, bs int, parity *bytes.Buffer) error {
	return redundancy.Encode(ctx, l, me, tr, bytes.NewReader(data), int64(len(data)), maxSize, parity, redundancy.WithBlockSize(bs))
}

func encodeInproc(t *testing.T, l redundancy.Layout, data [][]byte, bs int) [][]byte {
	out := make([]bytes.Buffer, l.Members())
	errs := inproc.New(l.Members()).Run(ctxT(t), func(ctx context.Context, me int, ep *inproc.Endpoint) error {
		return encode(ctx, l, me, ep, data[me], maxLen(data), bs, &out[me])
	})
	parity := make([][]byte, len(out))
	for i := range out {
		if errs[i] != nil {
			t.Fatalf("inproc encode, member %d: %v", i, errs[i])
		}
		parity[i] = out[i].Bytes()
	}
	return parity
}

func TestEncodeRebuildOverTCP(t *testing.T) {
	nodes, _ := cluster(t, 4, peer4Opts...)
	// Set members in an order other than the ranks'.
	members := []int{2, 0, 3, 1}
	epoch := uint64(100)
	for _, tc := range []struct {
		scheme string
		bs     int
	}{
		{"xor:4", 4 << 10},
		{"rs:2+2", 64 << 10},
		{"xor:4", redundancy.DefaultBlockSize},
		{"rs:3+1", redundancy.DefaultBlockSize},
	} {
		t.Run(fmt.Sprintf("%s/%d", tc.scheme, tc.bs), func(t *testing.T) {
			l := layoutOf(t, tc.scheme)
			data := memberData(uint64(tc.bs), 4, tc.bs)
			want := encodeInproc(t, l, data, tc.bs)
			out := make([]bytes.Buffer, 4)
			epoch++
			errs := runSet(ctxT(t), t, nodes, members, epoch, func(ctx context.Context, me int, tr redundancy.Transport) error {
				return encode(ctx, l, me, tr, data[me], maxLen(data), tc.bs, &out[me])
			})
			for i, err := range errs {
				if err != nil {
					t.Fatalf("member %d: %v", i, err)
				}
				if !bytes.Equal(out[i].Bytes(), want[i]) {
					t.Fatalf("member %d: parity over TCP (%d bytes) differs from inproc (%d bytes)", i, out[i].Len(), len(want[i]))
				}
			}
			for lost := range l.ParityShards() + 1 {
				lost := []int{lost % 4, (lost + 2) % 4}[:min(lost+1, l.ParityShards())]
				epoch++
				dataOut := make([]bytes.Buffer, 4)
				parityOut := make([]bytes.Buffer, 4)
				errs := runSet(ctxT(t), t, nodes, members, epoch, func(ctx context.Context, me int, tr redundancy.Transport) error {
					local := redundancy.Local{Size: int64(len(data[me]))}
					if slices.Contains(lost, me) {
						local.DataOut, local.ParityOut = &dataOut[me], &parityOut[me]
					} else {
						local.Data, local.Parity = bytes.NewReader(data[me]), bytes.NewReader(want[me])
					}
					return redundancy.Rebuild(ctx, l, lost, me, tr, local, maxLen(data), redundancy.WithBlockSize(tc.bs))
				})
				for i, err := range errs {
					if err != nil {
						t.Fatalf("rebuild of %v: member %d: %v", lost, i, err)
					}
				}
				for _, x := range lost {
					if !bytes.Equal(dataOut[x].Bytes(), data[x]) || !bytes.Equal(parityOut[x].Bytes(), want[x]) {
						t.Fatalf("rebuild of %v: member %d rebuilt wrong", lost, x)
					}
				}
			}
		})
	}
}

// Small windows so that the store's 1 MiB blocks exercise flow control.
var peer4Opts = []peer.Option{peer.WithWindow(2 << 20), peer.WithDepth(4)}

// killedReader calls kill before its n-th read.
type killedReader struct {
	r     *bytes.Reader
	reads *atomic.Int64
	at    int64
	kill  func()
}

func (k killedReader) ReadAt(p []byte, off int64) (int, error) {
	if k.reads.Add(1) == k.at {
		k.kill()
	}
	return k.r.ReadAt(p, off)
}

// A member whose Node dies in the middle of Encode: every member fails,
// none hangs.
func TestEncodeMemberKilled(t *testing.T) {
	for _, at := range []int64{1, 5, 12} {
		t.Run(fmt.Sprint(at), func(t *testing.T) {
			nodes, _ := cluster(t, 4)
			l := layoutOf(t, "rs:2+2")
			const bs = 16 << 10
			data := memberData(3, 4, bs)
			for i := range data {
				data[i] = bytes.Repeat(data[0], 1+i%2) // everyone has blocks to send
			}
			const victim = 1
			var reads atomic.Int64
			ctx := ctxT(t)
			errs := runSet(ctx, t, nodes, []int{0, 1, 2, 3}, 1, func(ctx context.Context, me int, tr redundancy.Transport) error {
				var r interface {
					ReadAt([]byte, int64) (int, error)
				} = bytes.NewReader(data[me])
				if me == victim {
					r = killedReader{r: bytes.NewReader(data[me]), reads: &reads, at: at, kill: func() { nodes[victim].Close() }}
				}
				var parity bytes.Buffer
				return redundancy.Encode(ctx, l, me, tr, r, int64(len(data[me])), maxLen(data), &parity, redundancy.WithBlockSize(bs))
			})
			for i, err := range errs {
				switch {
				case errors.Is(err, context.DeadlineExceeded):
					t.Fatalf("member %d hung: %v", i, err)
				case i == victim && !errors.Is(err, redundancy.ErrClosed):
					t.Errorf("the killed member: %v, want ErrClosed", err)
				case i != victim && !errors.Is(err, redundancy.ErrPeerClosed):
					t.Errorf("member %d: %v, want ErrPeerClosed", i, err)
				}
			}
		})
	}
}
