package coord

import (
	"fmt"
	"time"

	"github.com/ckpt/ckpt/internal/wire"
)

// front is the side of the coordinator (Machine) and of a sub-coordinator
// (Relay) that faces clients: both serve ranks with the same protocol, so
// they share its books (connections, ranks, phase, the batch of actions)
// and the steps every client event starts with. What the loss of a
// connection means differs — the coordinator aborts the job, a relay
// fails its node upstream — so each says it through its side.
type front struct {
	side  side
	phase Phase
	now   time.Duration // the latest time seen
	// conns are the live connections, in the order they connected: every
	// loop over connections follows it, which keeps the actions
	// deterministic (a map would not). A connection forgotten leaves a
	// nil in its slot (conn.pos), so that forgetting one costs O(1)
	// rather than a shift of every later connection: with one connection
	// per rank, a job's ranks disconnecting one after the other cost
	// O(ranks²) with the shift (issue 17's simulation: 1M ranks would
	// take hours). begin compacts the slice when half of it is holes,
	// never in the middle of a loop over it; live counts the others.
	conns []*conn
	live  int
	// compacted counts the slots compactions copied: amortized, at most
	// one per connection ever forgotten (TestForgetIsConstantWork).
	compacted int
	byID      map[ConnID]*conn
	t         *table // ranks and the open collective
	// reason is why the job (or the node) aborted; every later request
	// gets it.
	reason string

	heartbeat *wire.Heartbeat // shared: every Heartbeat sent is the same
	rd        Ready
}

// side is what a front asks of the machine it belongs to.
type side interface {
	// lose handles the end of connection cn, closed by its client (close
	// is false) or by the machine (with cause as the reason).
	lose(cn *conn, cause string, close bool)
	// hello handles a Hello.
	hello(cn *conn, h *wire.Hello)
	// forgot releases what the machine holds for a connection it forgets.
	forgot(cn *conn)
}

func newFront(s side, t *table) front {
	return front{side: s, byID: make(map[ConnID]*conn), t: t, heartbeat: &wire.Heartbeat{}}
}

// begin starts handling an event: it clears the batch and advances time,
// which never goes back.
func (f *front) begin(now time.Duration) {
	f.rd.reset()
	f.now = max(f.now, now)
	if holes := len(f.conns) - f.live; holes > 0 && holes >= f.live {
		f.compact()
	}
}

// compact removes the holes forgotten connections left in conns, keeping
// the order. It runs when at least half the slots are holes, so its cost
// is at most the number of connections forgotten since the last one.
func (f *front) compact() {
	kept := f.conns[:0]
	for _, c := range f.conns {
		if c != nil {
			c.pos = len(kept)
			kept = append(kept, c)
		}
	}
	f.compacted += len(kept)
	clear(f.conns[len(kept):])
	f.conns = kept
}

func (f *front) send(c *conn, msg wire.Msg) {
	f.rd.Sends = append(f.rd.Sends, Send{Conn: c.id, Msg: msg})
	c.lastSent = f.now
}

func (f *front) notice(n Notice) { f.rd.Notices = append(f.rd.Notices, n) }

// connect registers client connection c; who names the caller in the panic
// for an id that is live, a bug of the driver.
func (f *front) connect(c ConnID, who string) {
	if _, ok := f.byID[c]; ok {
		panic(fmt.Sprintf("coord: %s(%v): connection already live", who, c))
	}
	cn := &conn{id: c, opened: f.now, lastSeen: f.now, lastSent: f.now, pos: len(f.conns)}
	f.conns = append(f.conns, cn)
	f.live++
	f.byID[c] = cn
}

// disconnect reports the loss of client connection c. Events for
// connections the machine does not know (never connected, or already
// closed by it) are ignored, so the driver need not synchronize its readers
// with Closes.
func (f *front) disconnect(c ConnID, err error) {
	if cn := f.byID[c]; cn != nil {
		f.side.lose(cn, lostCause(err), false)
	}
}

// tickSilent fails connections silent for longer than the heartbeat
// timeout. While the job is joining, one whose ranks joined is not timed
// out: its client may wait for ranks that start minutes later, and the
// join timeout bounds that wait instead. One whose Hello was not read yet
// gets helloSilence times the timeout: a client says Hello first thing,
// so its silence may be a server too busy to read it (at 16K ranks joining
// a busy machine that took longer than the heartbeat timeout, and the
// ranks failed), but a client that never says it must not hold a
// connection for the whole join (a slowloris). Before its Hello the time
// counts from the connection's start, not from its last frame: a client
// says Hello before anything else, so frames without one (heartbeats;
// others break the protocol) only hold the connection, and a slowloris
// sending a heartbeat now and then must not keep it forever. A connection
// timed out before its Hello is told why (Refused), so that its client
// can say it.
func (f *front) tickSilent(timeout time.Duration) {
	// Losing a connection leaves a hole in its slot (or, when the job
	// aborts, empties f.conns), so the index stays valid.
	for i := 0; i < len(f.conns); i++ {
		cn := f.conns[i]
		if cn == nil {
			continue
		}
		limit := timeout
		if f.phase == Joining {
			if cn.joined {
				continue
			}
			limit = helloSilence * timeout
		}
		switch {
		case cn.joined:
			if silent := f.now - cn.lastSeen; silent > limit {
				f.side.lose(cn, silentCause(silent), true) // removes cn from f.conns
			}
		case f.now-cn.opened > limit:
			cause := silentCause(f.now - cn.opened)
			refused := cause + " before its Hello"
			if cn.lastSeen != cn.opened {
				cause = fmt.Sprintf("no Hello within %v of connecting", limit)
				refused = cause
			}
			f.send(cn, &wire.Refused{Reason: refused})
			f.side.lose(cn, cause, true) // removes cn from f.conns
		}
	}
}

// helloSilence is how many heartbeat timeouts a connection may stay silent
// before its Hello while the job is joining.
const helloSilence = 2

// tickHeartbeats sends Heartbeat on welcomed connections idle for the
// heartbeat interval; a client waiting for Welcome expects nothing else
// (older clients died of a Heartbeat there).
func (f *front) tickHeartbeats(interval time.Duration) {
	for _, cn := range f.conns {
		if cn != nil && cn.joined && f.phase != Joining && f.now-cn.lastSent >= interval {
			f.send(cn, f.heartbeat)
		}
	}
}

// receive takes the steps every client message starts with, and tells
// whether msg is a request left for the machine to handle: any frame
// proves the client alive; after an abort the client is told why and hung
// up on, so that it does not wait for answers that will never come;
// Heartbeat needs nothing more; Hello goes to the side; anything else must
// speak for ranks the connection holds and that are still in the job.
func (f *front) receive(cn *conn, msg wire.Msg) bool {
	cn.lastSeen = f.now
	if f.phase == Aborted {
		f.send(cn, &wire.Abort{Reason: f.reason})
		f.closeConn(cn, "job aborted")
		return false
	}
	switch x := msg.(type) {
	case *wire.Heartbeat:
		return false
	case *wire.Hello:
		f.side.hello(cn, x)
		return false
	}
	if !cn.joined {
		f.protocolError(cn, reqOf(msg), fmt.Sprintf("%s before Hello", msg.Type()))
		return false
	}
	if cn.left == len(cn.ranks) {
		f.protocolError(cn, reqOf(msg), fmt.Sprintf("%s after every rank of the connection left", msg.Type()))
		return false
	}
	return true
}

// join handles Hello h as both machines do, and tells whether cn joined.
// A Hello is never accepted in part, so a client knows after one answer
// whether it belongs to the job: a second Hello breaks the protocol; a
// Hello after the job started or finished, with the wrong token or
// incarnation, or claiming a rank that is not free (outside says why for a
// rank out of range) is Refused and its connection closed. size is the
// job's size.
func (f *front) join(cn *conn, h *wire.Hello, size int, token string, inc uint64, outside func(int32) string) bool {
	if cn.joined {
		f.protocolError(cn, 0, "second Hello")
		return false
	}
	why := ""
	switch f.phase {
	case Running:
		why = fmt.Sprintf("the job has started: all %d ranks joined", size)
	case Finished:
		why = "the job has finished"
	default:
		why = checkHello(h, token, inc)
	}
	if why == "" {
		why = f.t.claim(cn, h.Ranks, outside)
	}
	if why != "" {
		f.send(cn, &wire.Refused{Reason: why})
		f.closeConn(cn, "refused: "+why)
		return false
	}
	cn.joined, cn.node, cn.ranks = true, h.Node, h.Ranks
	f.notice(Notice{Kind: NoticeJoined, Conn: cn.id, Ranks: cn.ranks})
	return true
}

// running tells whether a request of kind what (collective, leave) may be
// made now, the job running; if not, it is a protocol error of cn's.
func (f *front) running(cn *conn, what string) bool {
	if f.phase != Running {
		f.protocolError(cn, 0, fmt.Sprintf("%s while the job is %s", what, f.phase))
		return false
	}
	return true
}

// protocolError answers a request that breaks the protocol with Error and
// drops the connection, which aborts the job (or the node) if it holds
// ranks that have not left.
func (f *front) protocolError(cn *conn, req uint64, why string) {
	f.send(cn, &wire.Error{Req: req, Reason: clip(why)})
	cn.broke = true
	f.side.lose(cn, "protocol error: "+why, true)
}

// broadcast sends msg to every joined connection.
func (f *front) broadcast(msg wire.Msg) {
	for _, c := range f.conns {
		if c != nil && c.joined {
			f.send(c, msg)
		}
	}
}

// welcomed starts counting the silence of joined connections from now, the
// job started: before, their clients had nothing to say and were not
// expected to say it.
func (f *front) welcomed() {
	for _, c := range f.conns {
		if c != nil && c.joined {
			c.lastSeen = f.now
		}
	}
}

// closeConn forgets cn and asks the driver to close it.
func (f *front) closeConn(cn *conn, reason string) {
	f.forget(cn)
	f.rd.Closes = append(f.rd.Closes, Close{Conn: cn.id, Reason: reason})
}

// forget removes cn from the books; its ranks stay assigned until lose
// decides what their loss means.
func (f *front) forget(cn *conn) {
	delete(f.byID, cn.id)
	if cn.pos < len(f.conns) && f.conns[cn.pos] == cn {
		f.conns[cn.pos] = nil
		f.live--
	}
	f.side.forgot(cn)
}

// abortConns ends the job for every live connection: the ones joined (or
// all, with toAll) get last, every one is closed and forgotten.
func (f *front) abortConns(reason string, last wire.Msg, toAll bool) {
	f.phase = Aborted
	f.reason = reason
	for _, c := range f.conns {
		if c == nil {
			continue
		}
		if toAll || c.joined {
			f.send(c, last)
		}
		f.rd.Closes = append(f.rd.Closes, Close{Conn: c.id, Reason: "job aborted"})
	}
	clear(f.byID)
	clear(f.conns)
	f.conns = f.conns[:0]
	f.live = 0
}
