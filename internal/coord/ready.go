package coord

import (
	"fmt"
	"strings"
	"time"

	"github.com/ckpt/ckpt/internal/wire"
)

// ConnID names a connection. The driver chooses the ids and never reuses
// one within the life of a state machine.
type ConnID uint64

// Upstream is the ConnID of a relay's connection to the coordinator. A
// relay's driver passes it for the upstream events and finds it in Sends
// and Closes; it is never a downstream connection's id.
const Upstream ConnID = 1<<64 - 1

func (c ConnID) String() string {
	if c == Upstream {
		return "up"
	}
	return fmt.Sprintf("c%d", uint64(c))
}

// StateMachine is what a driver runs: the coordinator (*Machine) or a
// node's sub-coordinator (*Relay). Every method handles one event at
// logical time now and returns the actions it causes. See the package
// documentation for the driver's obligations.
type StateMachine interface {
	// Connect reports a new connection.
	Connect(c ConnID, now time.Duration) Ready
	// Receive reports a message read from connection c. The machine may
	// keep the message and the slices in it.
	Receive(c ConnID, m wire.Msg, now time.Duration) Ready
	// Disconnect reports that connection c was lost: end of stream, a read
	// or write error, or a frame that could not be decoded (err says which;
	// nil means a clean end of stream).
	Disconnect(c ConnID, err error, now time.Duration) Ready
	// Tick advances logical time: failure detection and heartbeats.
	Tick(now time.Duration) Ready
}

// Ready is the batch of actions one event causes. It is valid until the next
// call on the machine that returned it: the machine reuses its slices.
// Messages in Sends are shared (the same *wire.Result goes to every
// connection of a collective) and must not be modified.
type Ready struct {
	// Sends are messages to write, in order per connection.
	Sends []Send
	// Closes are connections to close once their Sends are written.
	Closes []Close
	// Notices report what happened, for the launcher and the logs.
	Notices []Notice
}

// Empty reports whether r holds no action.
func (r Ready) Empty() bool { return len(r.Sends)+len(r.Closes)+len(r.Notices) == 0 }

func (r *Ready) reset() {
	clear(r.Sends) // drop references to messages for the collector
	r.Sends = r.Sends[:0]
	r.Closes = r.Closes[:0]
	r.Notices = r.Notices[:0]
}

// Send is one message to write to a connection.
type Send struct {
	Conn ConnID
	Msg  wire.Msg
}

// Close asks the driver to close a connection after writing what was sent
// to it. The machine has already forgotten the connection: later events for
// it are ignored.
type Close struct {
	Conn   ConnID
	Reason string
}

// NoticeKind says what a Notice reports.
type NoticeKind uint8

const (
	// NoticeJoined: connection Conn joined Ranks.
	NoticeJoined NoticeKind = iota + 1
	// NoticeDropped: connection Conn lost or gave up Ranks before the job
	// started; other clients may join them. Reason says why.
	NoticeDropped
	// NoticeStarted: every rank joined and got Welcome.
	NoticeStarted
	// NoticeCommitted: every rank voted for checkpoint Name in the commit
	// collective Seq.
	NoticeCommitted
	// NoticeAborted: the job was aborted; Reason names the ranks and the cause.
	NoticeAborted
	// NoticeFinished: every rank left.
	NoticeFinished
	// NoticeLost (Config.Uncoordinated): connection Conn was lost while
	// the job runs and Ranks are vacant, waiting for their next process;
	// Reason names them and the cause. The launcher restarts them.
	NoticeLost
	// NoticeRejoined (Config.Uncoordinated): connection Conn, a lost
	// rank's next process, rejoined the running job with Ranks.
	NoticeRejoined
)

var noticeNames = [...]string{NoticeJoined: "joined", NoticeDropped: "dropped", NoticeStarted: "started",
	NoticeCommitted: "committed", NoticeAborted: "aborted", NoticeFinished: "finished",
	NoticeLost: "lost", NoticeRejoined: "rejoined"}

func (k NoticeKind) String() string {
	if int(k) < len(noticeNames) && noticeNames[k] != "" {
		return noticeNames[k]
	}
	return fmt.Sprintf("NoticeKind(%d)", uint8(k))
}

// Notice reports an event of the job. Fields not meaningful for Kind are
// zero.
type Notice struct {
	Kind   NoticeKind
	Conn   ConnID
	Ranks  []int32
	Seq    uint64
	Name   string
	Reason string
}

func (n Notice) String() string {
	var b strings.Builder
	b.WriteString(n.Kind.String())
	if n.Kind == NoticeJoined || n.Kind == NoticeDropped || n.Kind == NoticeLost || n.Kind == NoticeRejoined {
		fmt.Fprintf(&b, " %v", n.Conn)
	}
	if n.Ranks != nil {
		fmt.Fprintf(&b, " ranks=%s", wire.FormatRanks(n.Ranks))
	}
	if n.Seq != 0 {
		fmt.Fprintf(&b, " seq=%d", n.Seq)
	}
	if n.Name != "" {
		fmt.Fprintf(&b, " name=%s", n.Name)
	}
	if n.Reason != "" {
		fmt.Fprintf(&b, ": %s", n.Reason)
	}
	return b.String()
}
