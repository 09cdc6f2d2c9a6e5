package peer_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/peer"
	"github.com/ckpt/ckpt/internal/redundancy"
	"github.com/ckpt/ckpt/internal/testwait"
)

const token = "job-token"

// testTimeout bounds every operation of a test: a hang fails the test.
// Generous: the package's tests share a busy machine under the race
// detector, where a whole test's operations can take many seconds.
const testTimeout = 2 * time.Minute

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// cluster starts the Nodes of a job of n ranks on loopback, publishes
// their addresses, and closes them at the end of the test.
func cluster(t testing.TB, n int, opts ...peer.Option) ([]*peer.Node, *peer.MapResolver) {
	t.Helper()
	res := peer.NewMapResolver()
	nodes := make([]*peer.Node, n)
	for i := range nodes {
		nodes[i] = start(t, i, n, res, opts...)
	}
	return nodes, res
}

// start starts (or relaunches) rank's Node and publishes its address.
func start(t testing.TB, rank, size int, res *peer.MapResolver, opts ...peer.Option) *peer.Node {
	t.Helper()
	nd, err := peer.Listen(rank, size, token, res, append([]peer.Option{peer.WithLogger(quiet)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nd.Close() })
	res.Publish(rank, nd.Addr())
	return nd
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// runSet runs fn for every member of a set channel on its own goroutine,
// closing the member's endpoint when fn returns (as inproc.Run does), and
// returns the errors by member.
func runSet(ctx context.Context, t testing.TB, nodes []*peer.Node, members []int, epoch uint64,
	fn func(ctx context.Context, me int, tr redundancy.Transport) error) []error {
	t.Helper()
	errs := make([]error, len(members))
	var wg sync.WaitGroup
	for i, r := range members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tr, closer, err := nodes[r].OpenSet(ctx, members, epoch)
			if err != nil {
				errs[i] = err
				return
			}
			defer closer.Close()
			errs[i] = fn(ctx, i, tr)
		}()
	}
	testwait.Group(t, &wg, "the members")
	return errs
}
