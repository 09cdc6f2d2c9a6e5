package peer_test

import (
	"context"
	"slices"
	"testing"

	"github.com/ckpt/ckpt/internal/peer"
	"github.com/ckpt/ckpt/internal/peer/transporttest"
	"github.com/ckpt/ckpt/internal/redundancy"
	"github.com/ckpt/ckpt/internal/redundancy/inproc"
)

// The suite itself passes against the in-process transport.
func TestContractInproc(t *testing.T) {
	transporttest.Run(t, func(t *testing.T, n, depth int) transporttest.Net {
		nw := inproc.New(n, inproc.WithDepth(depth))
		t.Cleanup(nw.Close)
		eps := make([]redundancy.Transport, n)
		for i := range eps {
			eps[i] = nw.Endpoint(i)
		}
		return transporttest.Net{Endpoints: eps, Close: func(i int) error { return nw.Endpoint(i).Close() }}
	})
}

// The application channel: one Node per rank, ranks as indices.
func TestContractApp(t *testing.T) {
	transporttest.Run(t, func(t *testing.T, n, depth int) transporttest.Net {
		nodes, _ := cluster(t, n, peer.WithDepth(depth))
		eps := make([]redundancy.Transport, n)
		for i := range eps {
			eps[i] = nodes[i]
		}
		return transporttest.Net{Endpoints: eps, Close: func(i int) error { return nodes[i].Close() }}
	})
}

// A set channel whose members are not the ranks: a job of n+1 ranks, the
// set made of ranks n, n−1, …, 1 in that order.
func TestContractSet(t *testing.T) {
	transporttest.Run(t, func(t *testing.T, n, depth int) transporttest.Net {
		nodes, _ := cluster(t, n+1, peer.WithDepth(depth))
		members := make([]int, n)
		for i := range members {
			members[i] = n - i
		}
		eps := make([]redundancy.Transport, n)
		closers := make([]func() error, n)
		for i, r := range members {
			tr, c, err := nodes[r].OpenSet(context.Background(), slices.Clone(members), 7)
			if err != nil {
				t.Fatal(err)
			}
			eps[i], closers[i] = tr, c.Close
			t.Cleanup(func() { c.Close() })
		}
		return transporttest.Net{Endpoints: eps, Close: func(i int) error { return closers[i]() }}
	})
}
