package coord

import (
	"crypto/subtle"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ckpt/ckpt/internal/wire"
)

// conn is a downstream connection of a Machine or a Relay.
type conn struct {
	id       ConnID
	pos      int           // its slot in front.conns
	joined   bool          // its Hello was accepted
	node     string        // from its Hello
	ranks    []int32       // from its Hello, in its order
	left     int           // how many of ranks have left
	opened   time.Duration // when it connected: its Hello is due from then
	lastSeen time.Duration
	lastSent time.Duration
	waits    int // lookups with wait outstanding
	// A relay's connection (Config.Relays): resumed says it took over
	// the ranks of a lost one, whose messages may come again; maxReq is
	// the highest request id it sent, which a resumed connection
	// inherits; cause is why it was lost, while detached.
	resumed bool
	maxReq  uint64
	cause   string
	// broke says the connection is dropped for breaking the protocol: a
	// bug of its client, which restarting it alone would not cure
	// (Config.Uncoordinated aborts the job for it).
	broke bool
}

// table is the bookkeeping of ranks shared by Machine (every rank of the
// job) and Relay (the ranks of one node): who holds each rank, which left,
// and the collective in progress. Ranks are stored by dense index: the rank
// itself for the machine, its position in RelayConfig.Ranks for a relay.
//
// Every method costs time in proportion to the ranks it is given, never to
// the size of the table, which is what keeps the coordinator's work per
// event proportional to the message rather than to the job.
type table struct {
	index  map[int32]int // rank → index; nil means the identity
	owner  []*conn       // holder of each rank, nil if none
	last   []uint64      // per rank, the last seq it contributed to
	left   []bool        // per rank, whether it left
	joined int           // ranks with an owner
	leftN  int           // ranks that left
	first  int32         // the first rank that left

	// The collective in progress: seq is open until every rank
	// contributed (count == len(owner)) and next is called.
	seq   uint64
	kind  wire.Kind
	count int
}

func newTable(n int, index map[int32]int) *table {
	return &table{index: index, owner: make([]*conn, n), last: make([]uint64, n),
		left: make([]bool, n), seq: 1}
}

func (t *table) size() int { return len(t.owner) }

func (t *table) idx(r int32) (int, bool) {
	if t.index != nil {
		i, ok := t.index[r]
		return i, ok
	}
	return int(r), r >= 0 && int(r) < len(t.owner)
}

// checkHello checks the credentials of a Hello; it returns why it must be
// refused, or "".
func checkHello(h *wire.Hello, token string, inc uint64) string {
	// Constant time: the token is a secret and the network is not trusted.
	if subtle.ConstantTimeCompare([]byte(h.Token), []byte(token)) != 1 {
		return "wrong token"
	}
	if h.Incarnation != inc {
		return fmt.Sprintf("incarnation %d, the job is at incarnation %d", h.Incarnation, inc)
	}
	if len(h.Ranks) == 0 {
		return "no ranks"
	}
	return ""
}

// claim gives c the ranks of its Hello, or nothing: it returns why not.
// outside formats the refusal for a rank the table does not hold.
func (t *table) claim(c *conn, ranks []int32, outside func(int32) string) string {
	for k, r := range ranks {
		why := ""
		i, ok := t.idx(r)
		switch {
		case !ok:
			why = outside(r)
		case t.owner[i] == c:
			why = fmt.Sprintf("rank %d listed twice", r)
		case t.owner[i] != nil:
			why = fmt.Sprintf("rank %d is held by another connection", r)
		}
		if why != "" {
			for _, r := range ranks[:k] {
				i, _ := t.idx(r)
				t.owner[i] = nil
			}
			return why
		}
		t.owner[i] = c
	}
	t.joined += len(ranks)
	return ""
}

// release frees c's ranks; only before the job started.
func (t *table) release(c *conn) {
	for _, r := range c.ranks {
		i, _ := t.idx(r)
		t.owner[i] = nil
	}
	t.joined -= len(c.ranks)
}

// unleft returns c's ranks that have not left.
func (t *table) unleft(c *conn) []int32 {
	if c.left == 0 {
		return c.ranks
	}
	var out []int32
	for _, r := range c.ranks {
		if i, _ := t.idx(r); !t.left[i] {
			out = append(out, r)
		}
	}
	return out
}

// held checks that c holds ranks (empty means all its ranks that have not
// left) and returns them, or why not.
func (t *table) held(c *conn, ranks []int32) ([]int32, string) {
	if len(ranks) == 0 {
		return t.unleft(c), ""
	}
	for _, r := range ranks {
		if i, ok := t.idx(r); !ok || t.owner[i] != c {
			return nil, fmt.Sprintf("rank %d is not held by this connection", r)
		}
	}
	return ranks, ""
}

// problem is what is wrong with a request: a protocol error of its sender,
// or a failure of one rank that the job cannot go on without.
type problem struct {
	proto bool
	rank  int32 // the rank that failed
	msg   string
}

func protoErr(format string, args ...any) *problem {
	return &problem{proto: true, msg: fmt.Sprintf(format, args...)}
}

// contribute applies the contributions of collective x sent by c, passing
// each to keep. After a problem the table is inconsistent: the caller must
// abort, or drop c if none of c's ranks has been applied.
func (t *table) contribute(c *conn, x *wire.Collective, maxContrib int, keep func(i int, d wire.Contrib)) *problem {
	if len(x.Contribs) == 0 {
		return protoErr("collective seq %d without contributions", x.Seq)
	}
	if t.count > 0 && x.Kind != t.kind {
		return protoErr("%s for seq %d, which is a %s", x.Kind, x.Seq, t.kind)
	}
	for _, d := range x.Contribs {
		i, ok := t.idx(d.Rank)
		switch {
		case !ok || t.owner[i] != c:
			return protoErr("rank %d is not held by this connection", d.Rank)
		case t.left[i]:
			return protoErr("rank %d contributed after it left", d.Rank)
		case t.last[i] == x.Seq:
			return protoErr("duplicate contribution of rank %d to seq %d", d.Rank, x.Seq)
		case x.Seq != t.last[i]+1:
			return protoErr("rank %d: seq %d, expected %d", d.Rank, x.Seq, t.last[i]+1)
		case x.Seq != t.seq:
			return protoErr("rank %d: seq %d before seq %d completed", d.Rank, x.Seq, t.seq)
		case len(d.Data) > maxContrib:
			return protoErr("rank %d: contribution of %d bytes exceeds %d", d.Rank, len(d.Data), maxContrib)
		}
		if t.count == 0 {
			if t.leftN > 0 {
				// Nobody can complete a collective that a rank that left
				// will never join: fail now rather than hang every rank.
				return &problem{rank: d.Rank, msg: fmt.Sprintf("collective seq %d started after rank %d left", x.Seq, t.first)}
			}
			t.kind = x.Kind
		}
		t.last[i] = x.Seq
		t.count++
		keep(i, d)
	}
	return nil
}

// complete reports whether every rank contributed to the open collective.
func (t *table) complete() bool { return t.count == len(t.owner) }

// next opens the collective after the completed one.
func (t *table) next() {
	t.seq++
	t.kind = 0
	t.count = 0
}

// leave marks ranks of c as left; problems as for contribute.
func (t *table) leave(c *conn, ranks []int32) *problem {
	if len(ranks) == 0 {
		return protoErr("leave without ranks")
	}
	for _, r := range ranks {
		i, ok := t.idx(r)
		switch {
		case !ok || t.owner[i] != c:
			return protoErr("rank %d is not held by this connection", r)
		case t.left[i]:
			return protoErr("rank %d left twice", r)
		case t.count > 0 && t.last[i] < t.seq:
			// The open collective would wait for it forever.
			return &problem{rank: r, msg: fmt.Sprintf("left during collective seq %d", t.seq)}
		}
		t.left[i] = true
		if t.leftN == 0 {
			t.first = r
		}
		t.leftN++
		c.left++
	}
	return nil
}

// failReason is the reason of an abort caused by ranks of node. Machine and
// Relay build it the same way, so that a client cannot tell whether the
// failure was seen by its relay or by the coordinator.
func failReason(ranks []int32, node, cause string) string {
	who := "ranks " + wire.FormatRanks(ranks)
	if len(ranks) == 1 {
		who = fmt.Sprintf("rank %d", ranks[0])
	}
	return clip(fmt.Sprintf("%s (node %s): %s", who, node, cause))
}

// clip shortens a reason to what the wire carries, on a rune boundary.
func clip(s string) string {
	if len(s) <= wire.MaxReason {
		return s
	}
	s = s[:wire.MaxReason-len("…")]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "…"
}

// lostCause describes the loss of a connection reported by Disconnect.
func lostCause(err error) string {
	if err == nil {
		return "connection closed before leave"
	}
	return "connection lost: " + strings.ReplaceAll(err.Error(), "\n", " ")
}

func silentCause(d time.Duration) string {
	return fmt.Sprintf("heartbeat timeout: silent for %v", d)
}

// reqOf returns the request id of a key–value request, or 0.
func reqOf(m wire.Msg) uint64 {
	switch x := m.(type) {
	case *wire.Publish:
		return x.Req
	case *wire.Lookup:
		return x.Req
	}
	return 0
}
