package coord

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ckpt/ckpt/internal/wire"
)

// Phase is the stage of a job.
type Phase uint8

const (
	// Joining: ranks are joining; a lost connection frees its ranks.
	Joining Phase = iota
	// Running: every rank joined; losing one aborts the job.
	Running
	// Aborted: the job failed; every request is answered with Abort.
	Aborted
	// Finished: every rank left.
	Finished
)

func (p Phase) String() string {
	switch p {
	case Joining:
		return "joining"
	case Running:
		return "running"
	case Aborted:
		return "aborted"
	case Finished:
		return "finished"
	}
	return fmt.Sprintf("Phase(%d)", uint8(p))
}

// Machine is the coordinator of one incarnation of a job, as a
// deterministic state machine: see the package documentation. It is not
// safe for concurrent use.
type Machine struct {
	front
	cfg   Config
	nodes map[string]int // joined connections per node, for Welcome.Nodes
	// data holds the contributions to the open collective, by rank; nil
	// for barriers, which keep none.
	data [][]byte
	kv   kvStore
	// The newest checkpoint every rank voted for.
	commitName string
	commitSeq  uint64

	// origin is the time of the first event: admission must complete
	// within JoinTimeout of it.
	origin time.Duration
	seen   bool

	// With Config.Relays: the relays' connections lost while the job
	// runs, whose ranks wait for them to come back, and the last Result,
	// which a resumed relay may have missed.
	detached   []*conn
	lastResult *wire.Result

	// With Config.Uncoordinated: the ranks lost while the job runs that
	// have not rejoined, whether any was lost and the first one, and how
	// many ranks rejoined. See alone.go.
	vacant    []vacancy
	lostOnce  bool
	firstLost int32
	rejoined  int
}

var _ StateMachine = (*Machine)(nil)

// New returns the coordinator of a job configured by cfg.
func New(cfg Config) (*Machine, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	m := &Machine{
		cfg:   cfg,
		nodes: make(map[string]int),
		kv:    newKVStore(),
	}
	m.front = newFront(m, newTable(cfg.Size, nil))
	return m, nil
}

// Status is a summary of a Machine's state, for logs and the launcher.
type Status struct {
	Phase  Phase
	Conns  int    // live connections
	Joined int    // ranks joined
	Left   int    // ranks that left
	Seq    uint64 // the collective in progress or next
	Reason string // why the job aborted
	// Committed is the newest checkpoint every rank voted for, and
	// CommitSeq the seq of its commit collective; empty and 0 if none.
	Committed string
	CommitSeq uint64
	// With Config.Uncoordinated: Recovering counts the ranks lost while
	// the job runs that have not rejoined, Rejoined the ranks that did
	// (each recovery of a rank alone).
	Recovering int
	Rejoined   int
}

// Status reports the machine's state.
func (m *Machine) Status() Status {
	return Status{Phase: m.phase, Conns: m.live, Joined: m.t.joined, Left: m.t.leftN,
		Seq: m.t.seq, Reason: m.reason, Committed: m.commitName, CommitSeq: m.commitSeq,
		Recovering: len(m.vacant), Rejoined: m.rejoined}
}

// Value returns the value published under key, for the launcher and the
// logs. The slice is the machine's: do not modify it.
func (m *Machine) Value(key string) ([]byte, bool) {
	v, ok := m.kv.vals[key]
	return v, ok
}

// begin starts handling an event (front.begin) and notes the time of the
// first.
func (m *Machine) begin(now time.Duration) {
	m.front.begin(now)
	if !m.seen {
		m.seen, m.origin = true, m.now
	}
}

// Connect registers connection c. Connecting an id that is live is a bug of
// the driver and panics.
func (m *Machine) Connect(c ConnID, now time.Duration) Ready {
	m.begin(now)
	m.connect(c, "Connect")
	return m.rd
}

// Disconnect reports the loss of connection c. Events for connections the
// machine does not know (never connected, or already closed by it) are
// ignored, so the driver need not synchronize its readers with Closes.
func (m *Machine) Disconnect(c ConnID, err error, now time.Duration) Ready {
	m.begin(now)
	m.disconnect(c, err)
	return m.rd
}

// Tick aborts a job still joining after the join timeout, fails
// connections silent for longer than the heartbeat timeout and sends
// Heartbeat on welcomed connections idle for the heartbeat interval. It
// costs time in proportion to the connections.
//
// A connection whose ranks joined but were not yet welcomed is neither
// timed out nor sent heartbeats: its client may be waiting for ranks that
// start minutes later, and a client waiting for Welcome expects nothing
// else (older clients died of a Heartbeat there). The join timeout bounds
// that wait instead.
func (m *Machine) Tick(now time.Duration) Ready {
	m.begin(now)
	if m.phase == Joining && m.now-m.origin > m.cfg.JoinTimeout {
		m.abort(m.joinReason())
		return m.rd
	}
	// Failures first: a connection that times out gets no heartbeat, and an
	// abort empties m.conns, which ends both loops.
	m.tickSilent(m.cfg.HeartbeatTimeout)
	if m.phase == Running {
		m.tickDetached()
		m.tickVacant()
	}
	m.tickHeartbeats(m.cfg.HeartbeatInterval)
	return m.rd
}

// joinReason says which ranks did not join in time. It costs time in
// proportion to the job's size, once.
func (m *Machine) joinReason() string {
	var missing []int32
	for r, o := range m.t.owner {
		if o == nil {
			missing = append(missing, int32(r))
		}
	}
	who := "ranks " + wire.FormatRanks(missing)
	if len(missing) == 1 {
		who = fmt.Sprintf("rank %d", missing[0])
	}
	return clip(fmt.Sprintf("%s did not join within the join timeout of %v (%d of %d ranks joined)",
		who, m.cfg.JoinTimeout, m.t.joined, m.cfg.Size))
}

// Receive handles message msg from connection c.
func (m *Machine) Receive(c ConnID, msg wire.Msg, now time.Duration) Ready {
	m.begin(now)
	cn := m.byID[c]
	if cn == nil || !m.receive(cn, msg) {
		return m.rd
	}
	switch x := msg.(type) {
	case *wire.Collective:
		m.collective(cn, x)
	case *wire.Publish:
		m.publish(cn, x)
	case *wire.Lookup:
		m.lookup(cn, x)
	case *wire.Leave:
		m.leave(cn, x)
	case *wire.Fail:
		m.fail(cn, x)
	default:
		m.protocolError(cn, 0, fmt.Sprintf("unexpected %s from a client", msg.Type()))
	}
	return m.rd
}

// hello joins cn's ranks, or refuses them all: a Hello is never accepted in
// part, so a client knows after one answer whether it belongs to the job.
// A relay's Hello for ranks it held while the job runs resumes them.
func (m *Machine) hello(cn *conn, h *wire.Hello) {
	if m.cfg.Relays && m.phase == Running && !cn.joined && m.resume(cn, h) {
		return
	}
	if m.cfg.Uncoordinated && m.phase == Running {
		m.rejoin(cn, h)
		return
	}
	if !m.join(cn, h, m.cfg.Size, m.cfg.Token, m.cfg.Incarnation, func(r int32) string {
		return fmt.Sprintf("rank %d out of range [0, %d)", r, m.cfg.Size)
	}) {
		return
	}
	m.nodes[cn.node]++
	if m.t.joined == m.cfg.Size {
		// The job starts: from now on a lost rank cannot be replaced
		// (but with Config.Uncoordinated, see alone.go), and
		// Welcome (with the size, which a rank needs before any
		// collective) goes to every client at once.
		m.phase = Running
		m.broadcast(&wire.Welcome{Size: int32(m.cfg.Size), Incarnation: m.cfg.Incarnation, Nodes: int32(len(m.nodes))})
		m.welcomed()
		m.notice(Notice{Kind: NoticeStarted})
	}
}

// collective records contributions and completes the collective when the
// last rank contributed. The work is proportional to the contributions in
// x, plus the connections when it completes.
func (m *Machine) collective(cn *conn, x *wire.Collective) {
	if !m.running(cn, "collective") {
		return
	}
	if cn.resumed {
		if x = m.fresh(x); x == nil {
			return
		}
	}
	if m.cfg.Uncoordinated && m.collectiveAlone(x) {
		return
	}
	p := m.t.contribute(cn, x, m.cfg.MaxContrib, func(r int, d wire.Contrib) {
		if x.Kind == wire.Barrier {
			return // a barrier returns no data: keep none
		}
		if m.data == nil {
			// A fresh slice per collective: the previous one went out in
			// a Result that drivers may still be writing.
			m.data = make([][]byte, m.cfg.Size)
		}
		m.data[r] = d.Data
	})
	if p != nil {
		m.problem(cn, p)
		return
	}
	if !m.t.complete() {
		return
	}
	res := &wire.Result{Seq: m.t.seq, Kind: m.t.kind}
	switch m.t.kind {
	case wire.AllGather:
		res.Data = m.data
	case wire.Decide:
		// The policy runs once, here, so every rank gets the same answer
		// even if the policy looked at anything rank-specific.
		ans, err := m.cfg.Decide(m.t.seq, m.data)
		if err != nil {
			m.abort(m.decideReason(err))
			return
		}
		res.Data = [][]byte{ans}
	case wire.Commit:
		// One outcome, not every vote: a job of 16K ranks would otherwise
		// send each of them every other rank's vote.
		res.Data = [][]byte{m.recordCommit()}
	}
	// One Result for all: the driver may encode it once for every
	// connection.
	m.broadcast(res)
	if m.cfg.Relays {
		m.lastResult = res
	}
	m.data = nil // the Result owns it now
	m.t.next()
}

// decideReason is the abort reason for a DecideFunc's error: it names the
// rank and node of a *RankError, like any failure of a rank, else the
// collective.
func (m *Machine) decideReason(err error) string {
	var re *RankError
	if errors.As(err, &re) {
		if i, ok := m.t.idx(int32(re.Rank)); ok && m.t.owner[i] != nil {
			return failReason([]int32{int32(re.Rank)}, m.t.owner[i].node, "decide: "+re.Err.Error())
		}
	}
	return clip(fmt.Sprintf("decide %d: %v", m.t.seq, err))
}

// recordCommit records the checkpoint of a completed commit collective if
// every rank voted for the same one, and returns the outcome every rank
// gets: a yes vote for it, or a no vote (for rank 0's name).
func (m *Machine) recordCommit() []byte {
	return CommitOutcome(m.data, func(name string) {
		m.commitName, m.commitSeq = name, m.t.seq
		m.notice(Notice{Kind: NoticeCommitted, Seq: m.t.seq, Name: name})
	})
}

// CommitOutcome is the answer to a commit collective with the given votes
// (wire.AppendVote): a yes vote for the checkpoint if every rank voted yes
// for the same non-empty name, after calling committed with it; else a no
// vote for rank 0's name.
func CommitOutcome(votes [][]byte, committed func(name string)) []byte {
	var name string
	all := true
	for r, d := range votes {
		n, ok, err := wire.ParseVote(d)
		if r == 0 {
			name = n
		}
		if err != nil || !ok || n == "" || n != name {
			all = false
		}
	}
	if all && len(votes) > 0 {
		committed(name)
	}
	return wire.AppendVote(nil, name, all && len(votes) > 0)
}

// leave retires ranks; when the last rank left the job is finished and a
// later loss of any connection costs nothing.
func (m *Machine) leave(cn *conn, x *wire.Leave) {
	if !m.running(cn, "leave") {
		return
	}
	if cn.resumed {
		// A resumed relay repeats the Leaves it sent; those that came
		// before are not news.
		ranks := slices.DeleteFunc(slices.Clone(x.Ranks), func(r int32) bool {
			i, ok := m.t.idx(r)
			return ok && m.t.owner[i] == cn && m.t.left[i]
		})
		if len(ranks) == 0 {
			return
		}
		x = &wire.Leave{Ranks: ranks}
	}
	if p := m.t.leave(cn, x.Ranks); p != nil {
		m.problem(cn, p)
		return
	}
	if m.t.leftN == m.cfg.Size {
		m.phase = Finished
		m.notice(Notice{Kind: NoticeFinished})
	}
}

// fail handles a client's report that some of its ranks failed.
func (m *Machine) fail(cn *conn, x *wire.Fail) {
	ranks, why := m.t.held(cn, x.Ranks)
	if why != "" {
		m.protocolError(cn, 0, why)
		return
	}
	// The client's reason is the cause as it stands: a relay reports a
	// local rank's failure in the words the relay gave its own ranks.
	switch {
	case m.phase == Running && m.cfg.Uncoordinated:
		// The process is restarted whole: every rank of the
		// connection is vacated (alone.go).
		m.lose(cn, x.Reason, true)
	case m.phase == Running:
		m.abort(failReason(ranks, cn.node, x.Reason))
	default:
		m.lose(cn, x.Reason, true)
	}
}

// problem carries out the verdict on a request: a protocol error drops the
// sender, a failure of one rank aborts the job naming that rank.
func (m *Machine) problem(cn *conn, p *problem) {
	if p.proto {
		m.protocolError(cn, 0, p.msg)
	} else {
		m.abort(failReason([]int32{p.rank}, cn.node, p.msg))
	}
}

// forgot drops the lookups a forgotten connection left waiting.
func (m *Machine) forgot(cn *conn) {
	if cn.waits > 0 {
		m.kv.cancel(cn)
	}
}

// lose handles the end of connection cn, closed by the client (close is
// false) or by the machine: before the job started its ranks are free
// again; while it runs, the loss of a rank that has not left aborts it
// (but with Config.Uncoordinated it frees the rank for its next process:
// alone.go).
func (m *Machine) lose(cn *conn, cause string, close bool) {
	if close {
		m.closeConn(cn, cause)
	} else {
		m.forget(cn)
	}
	if !cn.joined {
		return
	}
	switch m.phase {
	case Joining:
		m.t.release(cn)
		if m.nodes[cn.node]--; m.nodes[cn.node] == 0 {
			delete(m.nodes, cn.node)
		}
		m.notice(Notice{Kind: NoticeDropped, Conn: cn.id, Ranks: cn.ranks, Reason: cause})
	case Running:
		ranks := m.t.unleft(cn)
		switch {
		case len(ranks) == 0:
		case m.cfg.Uncoordinated && !cn.broke:
			m.vacate(cn, ranks, cause)
		case m.cfg.Relays && !close:
			// Lost by the network or the relay, not given up on here:
			// its ranks wait for it to dial again (tickDetached).
			cn.cause = cause
			m.detached = append(m.detached, cn)
		default:
			m.abort(failReason(ranks, cn.node, cause))
		}
	}
}

// abort ends the job: every live connection gets Abort and is closed.
func (m *Machine) abort(reason string) {
	m.abortConns(reason, &wire.Abort{Reason: reason}, true)
	m.data = nil
	clear(m.kv.waits) // nobody is left to answer; values stay readable
	m.notice(Notice{Kind: NoticeAborted, Reason: reason})
}
