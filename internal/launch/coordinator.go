package launch

import (
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ckpt/ckpt/internal/coord"
	"github.com/ckpt/ckpt/internal/coordnet"
	"github.com/ckpt/ckpt/internal/jobtls"
	"github.com/ckpt/ckpt/internal/policy"
)

// Coordinators makes the coordinator of each attempt of a job on this
// machine: ckpt's coordinator on loopback (and, in tree mode, one
// sub-coordinator per node), deciding checkpoints by Policy with what the
// ranks measured. What the policy learns (the checkpoint cost, the
// failures and run time that estimate the MTTI) carries over from one
// attempt to the next.
type Coordinators struct {
	Ranks, Nodes     int
	Policy           policy.Policy
	HeartbeatTimeout time.Duration
	// JoinTimeout bounds how long the ranks of an attempt may take to
	// join; the attempt then fails naming the ranks missing. Default
	// coord.DefaultJoinTimeout.
	JoinTimeout time.Duration
	// Tree gives every node a sub-coordinator its ranks connect to.
	Tree bool
	// Listen is the coordinator's address (default "127.0.0.1:0": this
	// machine only, any port).
	Listen string
	// Listener, if set, makes the coordinator's listener on Listen, and
	// the sub-coordinators' beside it: on a host of the job's (OnHosts).
	Listener func(addr string) (net.Listener, error)
	// Dial, if set, is how the sub-coordinators reach the coordinator
	// (from its host: OnHosts).
	Dial coordnet.DialFunc
	// OnCommit, if set, is called with the incarnation and the name of
	// every checkpoint the job commits (from the coordinator's loop).
	OnCommit func(inc uint64, name string)
	// OnNotice, if set, is called with every notice of the coordinator of
	// attempt inc (from its loop): joins, ranks dropped before the start,
	// the start, the end.
	OnNotice func(inc uint64, n coord.Notice)
	// OnDecision, if set, is told the step and the answer of every
	// decision round (from the coordinator's loop).
	OnDecision func(step int64, d policy.Decision)
	// TLS, if set, is the job's TLS (Job.TLS): the coordinator and the
	// relays take only clients with the job's certificate.
	TLS *jobtls.Config
	// Uncoordinated makes coordinators that let a rank lost while the job
	// runs rejoin it (coord.Config.Uncoordinated; Config.Uncoordinated).
	// Not with Tree.
	Uncoordinated bool

	mu       sync.Mutex
	state    policy.State
	attempts int
	started  time.Time // of the current attempt
	halt     atomic.Bool
	now      atomic.Bool // a checkpoint was asked for (CheckpointNow)
}

// CheckpointNow asks the job to checkpoint at its next decision round,
// without stopping ('ckpt checkpoint'). Policy None holds no rounds: the
// request waits forever.
func (f *Coordinators) CheckpointNow() { f.now.Store(true) }

// State is what the policy learned so far.
func (f *Coordinators) State() policy.State {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.state
}

// New starts the coordinator of attempt inc; it is Config.NewCoordinator.
func (f *Coordinators) New(inc uint64, token string) (Coordinator, error) {
	f.mu.Lock()
	if f.attempts > 0 {
		// The attempt before ended in a failure, or this one would not be.
		f.state = f.state.NextLaunch(time.Since(f.started), true)
	}
	f.attempts++
	f.started = time.Now()
	f.mu.Unlock()
	cfg := coord.Config{Size: f.Ranks, Token: token, Incarnation: inc,
		HeartbeatTimeout: f.HeartbeatTimeout, JoinTimeout: f.JoinTimeout, Decide: f.decide,
		Relays:        f.Tree, // a relay cut off by the network dials again and resumes
		Uncoordinated: f.Uncoordinated}
	listen := f.Listen
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	a := &attemptCoord{f: f, joined: map[int32]bool{}}
	opts := coordnet.Options{TLS: f.TLS, OnNotice: func(n coord.Notice) {
		if n.Kind == coord.NoticeJoined || n.Kind == coord.NoticeDropped || n.Kind == coord.NoticeLost {
			a.mu.Lock()
			for _, r := range n.Ranks {
				a.joined[r] = n.Kind == coord.NoticeJoined
			}
			a.mu.Unlock()
		}
		if n.Kind == coord.NoticeCommitted {
			a.mu.Lock()
			a.committed++
			a.newest = n.Name
			a.mu.Unlock()
			if f.OnCommit != nil {
				f.OnCommit(inc, n.Name)
			}
		}
		if f.OnNotice != nil {
			f.OnNotice(inc, n)
		}
	}}
	ln, err := f.listen(listen)
	if err != nil {
		return nil, err
	}
	co, err := coordnet.StartCoordinatorOn(ln, cfg, opts)
	if err != nil {
		return nil, err
	}
	a.Coordinator = co
	if f.Tree {
		for n := range f.Nodes {
			var ranks []int32
			for r := range f.Ranks {
				if NodeOf(r, f.Ranks, f.Nodes) == n {
					ranks = append(ranks, int32(r))
				}
			}
			relay, err := coord.NewRelay(coord.RelayConfig{Token: token, Incarnation: inc,
				Node: fmt.Sprintf("node%d", n), Ranks: ranks, HeartbeatTimeout: f.HeartbeatTimeout})
			if err != nil {
				a.Close()
				return nil, err
			}
			ln, err := f.listen(f.relayAddr(listen))
			if err != nil {
				a.Close()
				return nil, err
			}
			a.relays = append(a.relays, coordnet.Serve(ln, relay, coordnet.Options{Upstream: co.Addr(), TLS: f.TLS, Dial: f.Dial}))
		}
	}
	return a, nil
}

// decide is the coordinator's policy: it runs in the coordinator's loop.
// It follows the policy package's protocol: every report is decoded and
// checked (CheckReports) before Decide sees it, and a report that is
// malformed or out of range is a protocol error that aborts the attempt
// naming the rank and the bad value (a *coord.RankError). Deciding on it
// anyway would hand every rank an answer computed from garbage (a
// negative cost shrinks Auto's interval to nothing, a zeroed report is
// for the wrong step).
func (f *Coordinators) decide(_ uint64, contribs [][]byte) ([]byte, error) {
	reports := make([]policy.Report, len(contribs))
	for r, b := range contribs {
		if err := reports[r].UnmarshalBinary(b); err != nil {
			return nil, &coord.RankError{Rank: r, Err: fmt.Errorf("decision report: %w", err)}
		}
		if err := reports[r].Validate(); err != nil {
			return nil, &coord.RankError{Rank: r, Err: fmt.Errorf("decision report: %w", err)}
		}
	}
	// What is left for CheckReports: a round with no reports, or ranks at
	// different steps.
	if err := policy.CheckReports(reports); err != nil {
		return nil, fmt.Errorf("decision reports: %w", err)
	}
	if f.halt.Load() {
		reports[0].Halt = true
	}
	decide := policy.Decide
	if f.now.Swap(false) {
		decide = policy.DecideNow
	}
	f.mu.Lock()
	d, st := decide(f.Policy, f.state, reports)
	f.state = st
	f.mu.Unlock()
	if f.OnDecision != nil {
		f.OnDecision(reports[0].Step, d)
	}
	return d.MarshalBinary()
}

// attemptCoord is one attempt's coordinator and sub-coordinators.
type attemptCoord struct {
	*coordnet.Coordinator
	f      *Coordinators
	relays []*coordnet.Server

	mu        sync.Mutex
	committed int    // checkpoints committed in this attempt
	newest    string // the newest of them
	joined    map[int32]bool
}

// Joined reports whether rank r joined the attempt (Joiner).
func (a *attemptCoord) Joined(r int) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.joined[int32(r)]
}

// Committed counts the checkpoints the attempt committed and names the
// newest (Committer).
func (a *attemptCoord) Committed() (int, string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.committed, a.newest
}

// RankAddr is where rank r connects: its node's sub-coordinator in tree
// mode, else the coordinator.
func (a *attemptCoord) RankAddr(r int) string {
	if len(a.relays) > 0 {
		return a.relays[NodeOf(r, a.f.Ranks, a.f.Nodes)].Addr()
	}
	return a.Addr()
}

// Halt asks the job to stop after its next checkpoint.
func (a *attemptCoord) Halt() { a.f.halt.Store(true) }

func (a *attemptCoord) Close() error {
	for _, r := range a.relays {
		r.Close()
	}
	return a.Coordinator.Close()
}
