package uncoord

import (
	"sync"
	"testing"

	"github.com/ckpt/ckpt/internal/peer"
)

var _ Net = (*peer.Node)(nil)

// peerNet runs the ranks over internal/peer's Nodes on loopback TCP: a
// failed rank's Node is closed, and its new incarnation listens on a new
// port and publishes it, as a relaunched rank publishes its virtual
// address at the coordinator.
type peerNet struct {
	t     *testing.T
	res   *peer.MapResolver
	mu    sync.Mutex
	nodes map[int]*peer.Node
}

func newPeerNet(t *testing.T) testNet {
	n := &peerNet{t: t, res: peer.NewMapResolver(), nodes: map[int]*peer.Node{}}
	t.Cleanup(func() {
		n.mu.Lock()
		defer n.mu.Unlock()
		for _, nd := range n.nodes {
			nd.Close()
		}
	})
	return n
}

func (n *peerNet) endpoint(rank int) (Net, error) {
	nd, err := peer.Listen(rank, gridW*gridH, "token", n.res, peer.WithListenAddr("127.0.0.1:0"))
	if err != nil {
		return nil, err
	}
	n.mu.Lock()
	n.nodes[rank] = nd
	n.mu.Unlock()
	n.res.Publish(rank, nd.Addr())
	return nd, nil
}

func (n *peerNet) kill(rank int) {
	n.mu.Lock()
	nd := n.nodes[rank]
	delete(n.nodes, rank)
	n.mu.Unlock()
	nd.Close()
}

func TestOverPeerNodesRankKilledRecoversAlone(t *testing.T) {
	const victim = 4
	j := newJob(t, crashOnce(victim, 25, nil))
	j.newNet = newPeerNet
	got := j.run(testCtx(t))
	same(t, got, sequential())
	if j.whole != 0 || j.alone != 1 {
		t.Fatalf("%d whole-job restarts (%v), %d recovered alone; want 0 and 1", j.whole, j.cannot, j.alone)
	}
	for r, n := range j.starts {
		if want := 1 + boolInt(r == victim); n != want {
			t.Errorf("rank %d started %d times, want %d", r, n, want)
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
