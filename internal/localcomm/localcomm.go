// Package localcomm connects the ranks of a job that run as goroutines of
// one process: collective calls through group.Local, and the transports of
// redundancy sets through in-process channels (redundancy/inproc). It is
// the one in-process communicator: the root's LocalJob hands it to
// applications, the benchmarks drive the engine with it, and the test
// harness internal/cluster builds its ranks on it.
//
// A Network is the job's connections. Besides the Comms it has the faults
// a test needs: Fail (a rank crashes: every collective and every transport
// of its sets fails instead of waiting for it) and Partition/Heal (the
// ranks on the two sides of a cut cannot reach each other).
package localcomm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/ckpt/ckpt/internal/group"
	"github.com/ckpt/ckpt/internal/redundancy"
	"github.com/ckpt/ckpt/internal/redundancy/inproc"
)

// ErrPartitioned is wrapped by the errors of calls that would cross a
// partition. Transport errors also wrap redundancy.ErrPeerClosed, which is
// what a peer that cannot be reached looks like to the redundancy code.
var ErrPartitioned = errors.New("localcomm: network partitioned")

// Comm is one rank's connection to the others of its local job.
type Comm struct {
	*group.Member
	nw *Network
}

// Network holds the connections of one job (one incarnation): its
// collective group and the in-process networks of its sets, one per set
// and epoch, created by the first member that asks for it.
type Network struct {
	comms []*Comm

	mu   sync.Mutex
	nets map[string]*setNet
	dead []bool // ranks that failed: their endpoints are closed
	// side is nil when the network is whole; otherwise side[r] says on
	// which side of the cut rank r is.
	side []bool
	// cut is cancelled at every Partition, so that transport calls blocked
	// across the new cut give up (see faultEndpoint).
	cut       context.Context
	cancelCut context.CancelFunc
}

// setNet is the network of one set and epoch; members are job ranks.
type setNet struct {
	members []int
	nw      *inproc.Network
}

// NewNetwork returns the network of a job of n ranks.
func NewNetwork(n int) *Network {
	nw := &Network{nets: map[string]*setNet{}, dead: make([]bool, n)}
	nw.cut, nw.cancelCut = context.WithCancel(context.Background())
	for _, m := range group.Local(n) {
		nw.comms = append(nw.comms, &Comm{Member: m, nw: nw})
	}
	return nw
}

// Comms returns the job's Comms, rank i using the i-th.
func (nw *Network) Comms() []*Comm { return nw.comms }

// Job returns the Comms of a new job of n ranks, rank i using the i-th.
func Job(n int) []*Comm { return NewNetwork(n).Comms() }

// Fail makes rank fail as its crash would: every pending and later
// collective call of every rank fails (wrapping group.ErrFailed), and the
// rank's endpoints in every set, present and future, are closed, so its
// peers' transport calls fail instead of waiting for it.
func (nw *Network) Fail(rank int, reason error) {
	nw.comms[rank].Member.Fail(reason)
	nw.mu.Lock()
	defer nw.mu.Unlock()
	nw.dead[rank] = true
	for _, s := range nw.nets {
		if i := slices.Index(s.members, rank); i >= 0 {
			s.nw.Endpoint(i).Close()
		}
	}
}

// Fail makes this rank fail; see Network.Fail.
func (c *Comm) Fail(reason error) { c.nw.Fail(c.Rank(), reason) }

// Partition cuts the network in two: the ranks listed on one side, the
// others on the other. A collective needs every rank, so the job's group
// fails at once (as the coordinator of a real job fails it when ranks stop
// answering); transport calls between the two sides fail, those within a
// side go on. The group stays failed after Heal: a new Network (a new
// incarnation of the job) is whole again.
func (nw *Network) Partition(side []int) {
	nw.mu.Lock()
	nw.side = make([]bool, len(nw.comms))
	for _, r := range side {
		nw.side[r] = true
	}
	nw.cancelCut()
	nw.cut, nw.cancelCut = context.WithCancel(context.Background())
	nw.mu.Unlock()
	// Fail the group in a rank's name from the listed side, so that the
	// message names a rank that lost its peers.
	at := 0
	if len(side) > 0 {
		at = side[0]
	}
	nw.comms[at].Member.Fail(fmt.Errorf("%w from ranks not in %v", ErrPartitioned, side))
}

// Heal makes the network whole again for transports; see Partition.
func (nw *Network) Heal() {
	nw.mu.Lock()
	nw.side = nil
	nw.mu.Unlock()
}

// crosses reports whether a and b are on different sides of a cut, and
// returns the context that the next Partition cancels.
func (nw *Network) crosses(a, b int) (bool, context.Context) {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	return nw.side != nil && nw.side[a] != nw.side[b], nw.cut
}

// SetTransport connects this rank to the other members of a set; every
// member calls it with the same members and epoch.
func (c *Comm) SetTransport(ctx context.Context, members []int, epoch uint64) (redundancy.Transport, io.Closer, error) {
	me := slices.Index(members, c.Rank())
	if me < 0 {
		return nil, nil, fmt.Errorf("rank %d is not a member of set %v", c.Rank(), members)
	}
	key := fmt.Sprint(epoch, members)
	nw := c.nw
	nw.mu.Lock()
	s, ok := nw.nets[key]
	if !ok {
		s = &setNet{members: slices.Clone(members), nw: inproc.New(len(members))}
		nw.nets[key] = s
		// Members that died before the set was formed never answer.
		for i, r := range members {
			if nw.dead[r] {
				s.nw.Endpoint(i).Close()
			}
		}
	}
	nw.mu.Unlock()
	ep := s.nw.Endpoint(me)
	return &faultEndpoint{Endpoint: ep, nw: nw, rank: c.Rank(), members: s.members}, ep, nil
}

// faultEndpoint is a set member's endpoint that honours the network's
// partition: calls to a peer across the cut fail, at once or, if they
// were blocked when the cut came, as soon as it comes.
type faultEndpoint struct {
	*inproc.Endpoint
	nw      *Network
	rank    int
	members []int // job ranks of the set's members
}

func (e *faultEndpoint) Send(ctx context.Context, to int, tag uint64, msg []byte) error {
	return e.guard(ctx, to, func(ctx context.Context) error { return e.Endpoint.Send(ctx, to, tag, msg) })
}

func (e *faultEndpoint) Recv(ctx context.Context, from int, tag uint64, buf []byte) (out []byte, err error) {
	err = e.guard(ctx, from, func(ctx context.Context) error {
		out, err = e.Endpoint.Recv(ctx, from, tag, buf)
		return err
	})
	return out, err
}

// guard runs call unless peer is across a cut, and cancels it if a cut
// between the two comes while it runs.
func (e *faultEndpoint) guard(ctx context.Context, peer int, call func(context.Context) error) error {
	if peer < 0 || peer >= len(e.members) {
		return call(ctx) // the endpoint reports the bad peer
	}
	other := e.members[peer]
	crossed := func() error {
		return fmt.Errorf("localcomm: rank %d to rank %d: %w: %w", e.rank, other, ErrPartitioned, redundancy.ErrPeerClosed)
	}
	across, cut := e.nw.crosses(e.rank, other)
	if across {
		return crossed()
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(cut, func() {
		if across, _ := e.nw.crosses(e.rank, other); across {
			cancel(ErrPartitioned)
		}
	})
	defer stop()
	err := call(ctx)
	if err != nil && errors.Is(context.Cause(ctx), ErrPartitioned) {
		return crossed()
	}
	return err
}

// Solo is the Comm of a single process: collectives return at once, and
// there are no set peers.
type Solo struct{ group.Solo }

func (Solo) SetTransport(ctx context.Context, members []int, epoch uint64) (redundancy.Transport, io.Closer, error) {
	return nil, nil, fmt.Errorf("a single process has no redundancy set peers (members %v)", members)
}
