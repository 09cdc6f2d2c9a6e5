package coord

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/ckpt/ckpt/internal/wire"
)

// Relay is a node's sub-coordinator (002 §III-C) as a deterministic state
// machine. Downstream, the node's ranks connect to it and speak the
// coordinator protocol exactly as they would to the coordinator; upstream,
// it holds one connection (ConnID Upstream) to the coordinator and speaks
// for all of them:
//
//   - it checks local Hellos itself and, once every rank of
//     RelayConfig.Ranks has joined and the upstream connection is up, sends
//     one Hello upstream for all of them;
//   - it merges the local contributions to collective seq into one
//     Collective (several if they exceed MaxFrame), sent when every local
//     rank has contributed, and fans the Result out;
//   - it forwards key–value requests under request ids of its own and maps
//     the answers back;
//   - it forwards Welcome, Refused and Abort down, and turns the failure of
//     a local rank (lost, silent, or breaking the protocol) into Fail
//     upstream, then aborts its node (cut from the coordinator then, it
//     sends the Fail on the next connection);
//   - when its upstream connection is lost while the job runs, dropped or
//     gone silent for the heartbeat timeout (then it closes it), it keeps
//     its node running for up to the heartbeat timeout and resumes on the
//     connection its driver dials next (see "Resuming" in the package
//     documentation); if the coordinator has not answered on one by then,
//     it aborts its node, saying what it lost the coordinator to.
//
// It is not safe for concurrent use.
type Relay struct {
	front
	cfg RelayConfig
	up  struct {
		connected bool
		hello     bool // the Hello went upstream; only a resumption sends it again
		lastSeen  time.Duration
		lastSent  time.Duration
		// lost: the connection dropped or went silent while the job
		// ran, at lostAt, for cause; the relay dials again and resumes
		// (see resume.go) unless the heartbeat timeout runs out before
		// the coordinator answers on a new connection. resumed: some
		// connection was resumed, so answers may come twice.
		lost    bool
		lostAt  time.Duration
		cause   string
		resumed bool
	}
	// Kept for a resumption, which sends again what may not have
	// arrived: the node's contributions to the open collective (until its
	// Result) and the ranks whose Leave went upstream.
	upContribs []wire.Contrib
	upLeft     []int32
	// upFail is a local failure found while the connection was lost:
	// the node aborted, but the coordinator still learns why on the next
	// connection (else its reason would be a relay that did not come
	// back), within the reconnect window.
	upFail *wire.Fail
	// contribs are the local contributions to the open collective; sent
	// tells that they went upstream and the relay waits for the Result.
	contribs []wire.Contrib
	sent     bool
	// leaves are Leave messages held back until the open collective goes
	// upstream, so that they cannot overtake contributions of their ranks.
	leaves []wire.Msg
	// reqs maps the relay's request ids to the local requests.
	reqs    map[uint64]pending
	nextReq uint64
	// queue holds key–value requests that arrived before the Hello went
	// upstream; the coordinator answers nothing before it.
	queue []queued
	size  int32 // the job's size, from Welcome
}

type pending struct {
	c      *conn
	req    uint64
	lookup bool
	wait   bool
	up     wire.Msg // as sent upstream, for a resumption
}

type queued struct {
	c   *conn
	msg wire.Msg
}

var _ StateMachine = (*Relay)(nil)

// NewRelay returns the sub-coordinator of a node configured by cfg.
func NewRelay(cfg RelayConfig) (*Relay, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	cfg.Ranks = append([]int32(nil), cfg.Ranks...)
	index := make(map[int32]int, len(cfg.Ranks))
	for i, r := range cfg.Ranks {
		index[r] = i
	}
	r := &Relay{cfg: cfg, reqs: make(map[uint64]pending)}
	r.front = newFront(r, newTable(len(cfg.Ranks), index))
	return r, nil
}

// Status reports the relay's state; Seq is the node's open collective.
func (r *Relay) Status() Status {
	return Status{Phase: r.phase, Conns: r.live, Joined: r.t.joined, Left: r.t.leftN,
		Seq: r.t.seq, Reason: r.reason}
}

func (r *Relay) sendUp(msg wire.Msg) {
	r.rd.Sends = append(r.rd.Sends, Send{Conn: Upstream, Msg: msg})
	r.up.lastSent = r.now
}

func (r *Relay) closeUp(reason string) {
	if r.up.connected {
		r.up.connected = false
		r.rd.Closes = append(r.rd.Closes, Close{Conn: Upstream, Reason: reason})
	}
}

// Connect registers a local connection, or with c == Upstream the
// connection to the coordinator. Connecting a live id panics.
func (r *Relay) Connect(c ConnID, now time.Duration) Ready {
	r.begin(now)
	if c == Upstream {
		if r.up.connected {
			panic("coord: Relay.Connect(Upstream): already connected")
		}
		r.up.connected = true
		r.up.lastSeen, r.up.lastSent = r.now, r.now
		switch {
		case r.upFail != nil:
			// Back only to say why the node aborted: Hello resumes its
			// ranks on the coordinator, Fail ends the job with the cause;
			// the coordinator's Abort tells that it has it (fromUpstream).
			r.sendUp(&wire.Hello{Token: r.cfg.Token, Incarnation: r.cfg.Incarnation, Node: r.cfg.Node, Ranks: r.cfg.Ranks})
			r.sendUp(r.upFail)
		case r.up.lost && r.phase == Running:
			r.resumeUpstream()
		case r.up.lost && r.phase == Finished:
			// Every local rank left during the cut: the coordinator
			// still needs their Leaves, and nothing more of this node,
			// so the relay sends them and closes without waiting for
			// an answer.
			r.up.lost = false
			r.resumeUpstream()
			r.closeFinished()
		case r.up.hello || !r.NeedsUpstream():
			// Dialled before the relay gave up, or after its job ended.
			r.closeUp("the node's job ended")
		default:
			r.joinUpstream()
		}
		return r.rd
	}
	r.connect(c, "Relay.Connect")
	return r.rd
}

// Disconnect reports the loss of a connection. Losing the coordinator
// before the Hello went upstream is harmless (the driver dials again);
// while the job runs the driver dials again too, and the relay resumes
// unless the heartbeat timeout runs out first (Tick), counted from the
// first loss since the coordinator last answered; after the Hello and
// before the job started, the node aborts.
func (r *Relay) Disconnect(c ConnID, err error, now time.Duration) Ready {
	r.begin(now)
	if c == Upstream {
		if !r.up.connected {
			return r.rd
		}
		r.up.connected = false
		switch {
		case r.up.hello && (r.phase == Running || r.phase == Finished):
			if !r.up.lost {
				r.up.lost, r.up.lostAt, r.up.cause = true, r.now, lostCause(err)
			}
		case r.up.hello && r.phase == Joining:
			r.abortLocal(clip("lost the coordinator: " + lostCause(err)))
		}
		return r.rd
	}
	r.disconnect(c, err)
	return r.rd
}

// Tick fails silent local connections, gives up the coordinator's
// connection when it is silent after the job started, aborts the node when
// the coordinator has not come back within the heartbeat timeout of its
// loss, and sends heartbeats: upstream always, down only to welcomed
// ranks. As on the coordinator, local ranks waiting for Welcome are
// neither timed out nor sent heartbeats, and the coordinator's silence
// before Welcome means nothing: it sends a waiting connection nothing, and
// its join timeout bounds the wait.
func (r *Relay) Tick(now time.Duration) Ready {
	r.begin(now)
	r.tickSilent(r.cfg.HeartbeatTimeout)
	// The coordinator sends heartbeats too once the job runs, so its
	// silence then means the connection hung (the network, or the
	// coordinator): the relay closes it and dials again, as after its end;
	// a coordinator that hung for good does not answer the new one.
	if r.up.connected && r.phase == Running && !r.up.lost {
		if silent := r.now - r.up.lastSeen; silent > r.cfg.HeartbeatTimeout {
			cause := fmt.Sprintf("coordinator silent for %v", silent)
			r.closeUp(cause)
			r.up.lost, r.up.lostAt, r.up.cause = true, r.now, cause
		}
	}
	if r.up.lost && r.now-r.up.lostAt > r.cfg.HeartbeatTimeout {
		// The coordinator died, or the network to it did: the node's
		// ranks must not wait for it forever, nor the relay to tell it
		// of a local failure (it has given the node up by now).
		r.up.lost = false
		reason := clip(fmt.Sprintf("lost the coordinator: %s; not reconnected within %v", r.up.cause, r.cfg.HeartbeatTimeout))
		switch {
		case r.phase == Running:
			r.closeUp(reason) // a new connection the coordinator never answered on
			r.abortLocal(reason)
		case r.upFail != nil:
			r.upFail = nil
			r.closeUp(reason)
		}
	}
	r.tickHeartbeats(r.cfg.HeartbeatInterval)
	if r.up.connected && r.now-r.up.lastSent >= r.cfg.HeartbeatInterval {
		r.sendUp(r.heartbeat)
	}
	return r.rd
}

// Receive handles a message from a local connection or from upstream.
func (r *Relay) Receive(c ConnID, msg wire.Msg, now time.Duration) Ready {
	r.begin(now)
	if c == Upstream {
		r.fromUpstream(msg)
		return r.rd
	}
	cn := r.byID[c]
	if cn == nil || !r.receive(cn, msg) {
		return r.rd
	}
	switch x := msg.(type) {
	case *wire.Collective:
		r.collective(cn, x)
	case *wire.Publish:
		if len(x.Value) > r.cfg.MaxValue {
			r.protocolError(cn, x.Req, fmt.Sprintf("value of %d bytes exceeds %d", len(x.Value), r.cfg.MaxValue))
			return r.rd
		}
		r.request(cn, x)
	case *wire.Lookup:
		if x.Wait {
			if cn.waits >= r.cfg.MaxWaits*len(cn.ranks) {
				r.protocolError(cn, x.Req, fmt.Sprintf("more than %d lookups waiting", cn.waits))
				return r.rd
			}
			cn.waits++
		}
		r.request(cn, x)
	case *wire.Leave:
		r.leave(cn, x)
	case *wire.Fail:
		r.fail(cn, x)
	default:
		r.protocolError(cn, 0, fmt.Sprintf("unexpected %s from a client", msg.Type()))
	}
	return r.rd
}

// hello checks a local Hello as the coordinator would (token,
// incarnation, ranks), with the node's expected ranks as the range.
func (r *Relay) hello(cn *conn, h *wire.Hello) {
	if r.join(cn, h, int(r.size), r.cfg.Token, r.cfg.Incarnation, func(rank int32) string {
		return fmt.Sprintf("rank %d is not on node %s", rank, r.cfg.Node)
	}) {
		r.joinUpstream()
	}
}

// joinUpstream sends the node's Hello once every local rank joined and the
// coordinator is connected, then the key–value requests held for it.
func (r *Relay) joinUpstream() {
	if r.phase != Joining || r.up.hello || !r.up.connected || r.t.joined < r.t.size() {
		return
	}
	r.up.hello = true
	r.sendUp(&wire.Hello{Token: r.cfg.Token, Incarnation: r.cfg.Incarnation, Node: r.cfg.Node, Ranks: r.cfg.Ranks})
	for _, q := range r.queue {
		r.forward(q.c, q.msg)
	}
	r.queue = nil
}

// collective applies the coordinator's rules to local contributions and
// sends them upstream when the node's last rank contributed: the
// coordinator then handles one message per node instead of one per rank.
func (r *Relay) collective(cn *conn, x *wire.Collective) {
	if !r.running(cn, "collective") {
		return
	}
	if r.contribs == nil {
		// A fresh slice per collective: the messages sent upstream keep
		// the previous one until the driver has written them.
		r.contribs = make([]wire.Contrib, 0, r.t.size())
	}
	p := r.t.contribute(cn, x, r.cfg.MaxContrib, func(_ int, d wire.Contrib) {
		if x.Kind == wire.Barrier {
			d.Data = nil // barriers carry no data; don't forward any
		}
		r.contribs = append(r.contribs, d)
	})
	if p != nil {
		r.problem(cn, p)
		return
	}
	if r.t.complete() {
		r.flush()
	}
}

// flush sends the node's contributions upstream, in as many Collectives as
// MaxFrame requires, then the Leaves held back meanwhile.
func (r *Relay) flush() {
	// The bound of a Collective's header: seq, kind and count varints.
	const header = binary.MaxVarintLen64 + 1 + binary.MaxVarintLen32
	budget := r.cfg.MaxFrame - header
	start, size := 0, 0
	for i, c := range r.contribs {
		n := uvarintLen(uint64(c.Rank)) + uvarintLen(uint64(len(c.Data))) + len(c.Data)
		if i > start && size+n > budget {
			r.sendUp(&wire.Collective{Seq: r.t.seq, Kind: r.t.kind, Contribs: r.contribs[start:i:i]})
			start, size = i, 0
		}
		size += n
	}
	r.sendUp(&wire.Collective{Seq: r.t.seq, Kind: r.t.kind, Contribs: r.contribs[start:]})
	r.upContribs = r.contribs
	r.contribs = nil
	r.sent = true
	for _, l := range r.leaves {
		r.sendLeave(l)
	}
	r.leaves = nil
}

// sendLeave sends a Leave upstream and remembers its ranks for a
// resumption.
func (r *Relay) sendLeave(l wire.Msg) {
	r.upLeft = append(r.upLeft, l.(*wire.Leave).Ranks...)
	r.sendUp(l)
}

// leave applies the coordinator's rules to a local Leave and forwards it.
func (r *Relay) leave(cn *conn, x *wire.Leave) {
	if !r.running(cn, "leave") {
		return
	}
	if p := r.t.leave(cn, x.Ranks); p != nil {
		r.problem(cn, p)
		return
	}
	if r.t.count > 0 && !r.sent {
		r.leaves = append(r.leaves, x)
	} else {
		r.sendLeave(x)
	}
	if r.t.leftN == r.t.size() {
		r.phase = Finished
		r.notice(Notice{Kind: NoticeFinished})
		r.closeFinished()
	}
}

// NeedsUpstream says whether the node's job still needs its connection to
// the coordinator: not once the job was aborted, nor once every local rank
// left, unless their Leaves may have been lost with the connection; a
// connection lost then is not dialled again.
func (r *Relay) NeedsUpstream() bool {
	return r.phase == Joining || r.phase == Running || r.phase == Finished && r.up.lost || r.upFail != nil
}

// WantsUpstream says whether the driver should hold a connection to the
// coordinator now: while the job needs it (NeedsUpstream), from the moment
// the relay can say its Hello on it, every local rank having joined (or
// the Hello went up before). A connection must say Hello within a time of
// its start whatever else it sends (the coordinator refuses one that only
// sends heartbeats), so a relay waiting minutes for its ranks does not
// hold one open meanwhile.
func (r *Relay) WantsUpstream() bool {
	return r.NeedsUpstream() && (r.up.hello || r.up.lost || r.t.joined == r.t.size())
}

// closeFinished closes upstream once every local rank left and every
// request forwarded for a live local connection was answered: a client that
// asks and then leaves still gets its answer, as it would from the
// coordinator, and one that closes gives up its requests.
func (r *Relay) closeFinished() {
	if r.phase != Finished {
		return
	}
	for _, p := range r.reqs {
		if r.byID[p.c.id] == p.c {
			return
		}
	}
	r.closeUp("every local rank left")
}

// fail handles a local rank's report of its own failure: before the node
// joined upstream it only frees the ranks, after it fails the job.
func (r *Relay) fail(cn *conn, x *wire.Fail) {
	ranks, why := r.t.held(cn, x.Ranks)
	if why != "" {
		r.protocolError(cn, 0, why)
		return
	}
	if r.phase == Running || (r.phase == Joining && r.up.hello) {
		r.failLocal(ranks, x.Reason)
		return
	}
	r.lose(cn, x.Reason, true)
}

// request forwards a key–value request, or holds it until the node's Hello
// went upstream.
func (r *Relay) request(cn *conn, msg wire.Msg) {
	if !r.up.hello {
		r.queue = append(r.queue, queued{c: cn, msg: msg})
		return
	}
	r.forward(cn, msg)
}

// forward sends a key–value request upstream under a fresh id of the
// relay's: local clients choose their ids independently, so theirs could
// collide on the shared upstream connection.
func (r *Relay) forward(cn *conn, msg wire.Msg) {
	r.nextReq++
	id := r.nextReq
	switch x := msg.(type) {
	case *wire.Publish:
		up := &wire.Publish{Req: id, Key: x.Key, Value: x.Value}
		r.reqs[id] = pending{c: cn, req: x.Req, up: up}
		r.sendUp(up)
	case *wire.Lookup:
		up := &wire.Lookup{Req: id, Key: x.Key, Wait: x.Wait}
		r.reqs[id] = pending{c: cn, req: x.Req, lookup: true, wait: x.Wait, up: up}
		r.sendUp(up)
	}
}

// fromUpstream handles a message from the coordinator. Anything the
// coordinator must not send aborts the node: a relay that cannot trust its
// upstream cannot give its ranks correct answers.
func (r *Relay) fromUpstream(msg wire.Msg) {
	if !r.up.connected {
		return
	}
	r.up.lastSeen = r.now
	if r.phase == Aborted {
		switch msg.(type) {
		case *wire.Abort, *wire.Refused:
			if r.upFail != nil {
				// The job ended: with the node's Fail, read after its
				// Hello, or for a cause the coordinator had first (or it
				// takes no relay back: Refused); dialling again would
				// only be told so again.
				r.upFail, r.up.lost = nil, false
				r.closeUp("the coordinator has the node's failure")
			}
		}
		return
	}
	// The coordinator answers on a new connection: the node is back
	// (Welcome, or the Refused or Abort that ends it below).
	r.up.lost = false
	switch x := msg.(type) {
	case *wire.Heartbeat:
	case *wire.Welcome:
		if r.up.resumed && r.phase == Running {
			return // the coordinator took the node back
		}
		if r.phase != Joining || !r.up.hello {
			r.upstreamError("Welcome before Hello")
			return
		}
		r.phase = Running
		r.size = x.Size
		r.broadcast(x)
		for _, c := range r.conns {
			// Silence counts from now, as on the coordinator.
			if c != nil {
				c.lastSeen = r.now
			}
		}
		r.notice(Notice{Kind: NoticeStarted})
	case *wire.Refused:
		if r.phase == Finished {
			// Resumed to deliver the Leaves, which had arrived.
			r.closeUp("the job has finished")
			return
		}
		if r.phase == Joining && !r.up.hello {
			// Refused before the node said Hello: the connection idled
			// past the coordinator's Hello deadline (a local rank left
			// after it was dialled), nothing of the node's; the driver
			// dials again when the node is ready.
			r.closeUp(clip("refused before the node's Hello: " + x.Reason))
			return
		}
		r.end(x, "refused: "+x.Reason)
	case *wire.Abort:
		r.end(x, x.Reason)
	case *wire.Error:
		// The relay broke the protocol (a bug): the coordinator closes the
		// connection, which aborts the job.
		reason := clip("the coordinator reports an error of this node: " + x.Reason)
		r.closeUp(reason)
		r.abortLocal(reason)
	case *wire.Result:
		if r.up.resumed && r.phase == Running && (!r.sent || x.Seq < r.t.seq) {
			return // the last Result, which the node had before the cut
		}
		if r.phase != Running || !r.sent || x.Seq != r.t.seq || x.Kind != r.t.kind {
			r.upstreamError(fmt.Sprintf("unexpected %s result of seq %d", x.Kind, x.Seq))
			return
		}
		// Every local rank needs the same thing, the whole Result, so the
		// coordinator's message goes down as it is.
		r.broadcast(x)
		r.sent = false
		r.upContribs = nil
		r.t.next()
	case *wire.Ack:
		p, ok := r.reqs[x.Req]
		if !ok && r.up.resumed {
			return // answered before the cut as well
		}
		if !ok || p.lookup {
			r.upstreamError(fmt.Sprintf("Ack of unknown publish %d", x.Req))
			return
		}
		delete(r.reqs, x.Req)
		if r.byID[p.c.id] == p.c {
			r.send(p.c, &wire.Ack{Req: p.req})
		}
		r.closeFinished()
	case *wire.Value:
		p, ok := r.reqs[x.Req]
		if !ok && r.up.resumed {
			return // answered before the cut as well
		}
		if !ok || !p.lookup {
			r.upstreamError(fmt.Sprintf("Value of unknown lookup %d", x.Req))
			return
		}
		delete(r.reqs, x.Req)
		if p.wait {
			p.c.waits--
		}
		if r.byID[p.c.id] == p.c {
			r.send(p.c, &wire.Value{Req: p.req, Key: x.Key, Value: x.Value, Found: x.Found})
		}
		r.closeFinished()
	default:
		r.upstreamError(fmt.Sprintf("unexpected %s from the coordinator", msg.Type()))
	}
}

// end forwards the coordinator's last word (Refused or Abort) to the
// joined local connections and closes everything.
func (r *Relay) end(last wire.Msg, reason string) {
	r.abortConns(reason, last, false)
	r.clearPending()
	r.closeUp("job aborted")
	r.notice(Notice{Kind: NoticeAborted, Reason: reason})
}

// upstreamError handles a coordinator that breaks the protocol (or a relay
// bug): the node aborts.
func (r *Relay) upstreamError(why string) {
	why = clip("coordinator protocol error: " + why)
	r.closeUp(why)
	r.abortLocal(why)
}

// problem carries out the verdict on a local request, as Machine.problem.
func (r *Relay) problem(cn *conn, p *problem) {
	if p.proto {
		r.protocolError(cn, 0, p.msg)
	} else {
		r.failLocal([]int32{p.rank}, p.msg)
	}
}

// forgot: what the relay holds for a connection (forwarded requests,
// queued ones) it drops when their answers come or when lose says.
func (*Relay) forgot(*conn) {}

// lose handles the end of a local connection, as Machine.lose does: before
// the node joined upstream its ranks are free again; after, the loss of a
// rank that has not left fails the node.
func (r *Relay) lose(cn *conn, cause string, close bool) {
	if close {
		r.closeConn(cn, cause)
	} else {
		r.forget(cn)
	}
	if !cn.joined {
		return
	}
	switch {
	case r.phase == Joining && !r.up.hello:
		r.t.release(cn)
		kept := r.queue[:0]
		for _, q := range r.queue {
			if q.c != cn {
				kept = append(kept, q)
			}
		}
		clear(r.queue[len(kept):])
		r.queue = kept
		r.notice(Notice{Kind: NoticeDropped, Conn: cn.id, Ranks: cn.ranks, Reason: cause})
	case r.phase == Joining || r.phase == Running:
		if ranks := r.t.unleft(cn); len(ranks) > 0 {
			r.failLocal(ranks, cause)
		}
	case r.phase == Finished:
		r.closeFinished()
	}
}

// failLocal reports the failure of local ranks upstream and aborts the
// node with the reason the coordinator will give everyone else.
// Cut from the coordinator meanwhile, it tells it on the next connection.
func (r *Relay) failLocal(ranks []int32, cause string) {
	cause = clip(cause)
	switch {
	case r.up.connected && !r.up.lost:
		r.sendUp(&wire.Fail{Ranks: ranks, Reason: cause})
		r.closeUp("local failure")
	case r.up.lost:
		// Cut (or resuming, unanswered): a Fail on the connection being
		// resumed might be read before its Hello is; a new one says
		// Hello first.
		r.closeUp("local failure")
		r.upFail = &wire.Fail{Ranks: ranks, Reason: cause}
	}
	r.abortLocal(failReason(ranks, r.cfg.Node, cause))
}

// abortLocal aborts the node: every local connection gets Abort and is
// closed.
func (r *Relay) abortLocal(reason string) {
	r.abortConns(reason, &wire.Abort{Reason: reason}, true)
	r.clearPending()
	r.notice(Notice{Kind: NoticeAborted, Reason: reason})
}

// clearPending forgets what was pending for the local connections, which
// the abort closed.
func (r *Relay) clearPending() {
	r.contribs, r.leaves, r.queue = nil, nil, nil
	clear(r.reqs)
}

func uvarintLen(v uint64) int {
	n := 1
	for ; v >= 0x80; v >>= 7 {
		n++
	}
	return n
}
