package coord

import (
	"fmt"
	"slices"

	"github.com/ckpt/ckpt/internal/wire"
)

// Resuming a relay (Config.Relays): a relay whose connection to the
// coordinator drops while the job runs dials again and sends its Hello
// again; the coordinator gives the new connection the ranks of the old one
// instead of refusing a join after the start. Neither side knows which of
// the messages in flight at the cut arrived, so the relay sends again what
// is unanswered (its contributions to the open collective, its Leaves, its
// pending key–value requests) and the coordinator answers the Hello with
// Welcome and the last Result, and takes from a resumed connection, without
// calling it a protocol error, what it already has.

// resume gives cn the ranks of a relay's connection that held exactly h's
// ranks for the same node, lost (detached) or still open (its loss not yet
// seen: the old one is closed). It tells whether h was such a Hello; one
// with the wrong credentials is refused as any Hello.
func (m *Machine) resume(cn *conn, h *wire.Hello) bool {
	old := m.holder(h)
	if old == nil {
		return false
	}
	if why := checkHello(h, m.cfg.Token, m.cfg.Incarnation); why != "" {
		m.send(cn, &wire.Refused{Reason: why})
		m.closeConn(cn, "refused: "+why)
		return true
	}
	if i := slices.Index(m.detached, old); i >= 0 {
		m.detached = slices.Delete(m.detached, i, i+1)
	} else {
		m.closeConn(old, "replaced by the node's new connection")
	}
	cn.joined, cn.node, cn.ranks, cn.left, cn.maxReq, cn.resumed = true, old.node, old.ranks, old.left, old.maxReq, true
	for _, r := range cn.ranks {
		i, _ := m.t.idx(r)
		m.t.owner[i] = cn
	}
	m.send(cn, &wire.Welcome{Size: int32(m.cfg.Size), Incarnation: m.cfg.Incarnation, Nodes: int32(len(m.nodes))})
	if m.lastResult != nil {
		m.send(cn, m.lastResult)
	}
	return true
}

// owner is the connection that holds exactly h's ranks, in order; nil if
// none does.
func (m *Machine) owner(h *wire.Hello) *conn {
	if len(h.Ranks) == 0 {
		return nil
	}
	i, ok := m.t.idx(h.Ranks[0])
	if !ok {
		return nil
	}
	old := m.t.owner[i]
	if old == nil || !slices.Equal(old.ranks, h.Ranks) {
		return nil
	}
	return old
}

// holder is the connection that holds exactly h's ranks, in order, for
// h's node; nil if none does.
func (m *Machine) holder(h *wire.Hello) *conn {
	old := m.owner(h)
	if old == nil || old.node != h.Node {
		return nil
	}
	return old
}

// fresh is the part of a resumed connection's contributions the machine
// does not have yet: those to collectives that completed, or of ranks that
// contributed to the open one already, came before the cut. nil if none
// is left.
func (m *Machine) fresh(x *wire.Collective) *wire.Collective {
	if x.Seq < m.t.seq {
		return nil
	}
	if x.Seq > m.t.seq {
		return x // the table's protocol error
	}
	keep := slices.DeleteFunc(slices.Clone(x.Contribs), func(d wire.Contrib) bool {
		i, ok := m.t.idx(d.Rank)
		return ok && m.t.last[i] == x.Seq
	})
	if len(keep) == 0 {
		return nil
	}
	return &wire.Collective{Seq: x.Seq, Kind: x.Kind, Contribs: keep}
}

// tickDetached aborts the job when a lost relay did not come back within
// the heartbeat timeout of the last message its connection brought.
func (m *Machine) tickDetached() {
	for _, cn := range m.detached {
		if silent := m.now - cn.lastSeen; silent > m.cfg.HeartbeatTimeout {
			m.detached = nil
			m.abort(failReason(m.t.unleft(cn), cn.node,
				fmt.Sprintf("%s, and its relay did not come back within %v", cn.cause, m.cfg.HeartbeatTimeout)))
			return
		}
	}
}

// resumeUpstream sends the node's Hello again on a new connection to the
// coordinator, then what may not have arrived on the lost one: the open
// collective's contributions if its Result has not come, the Leaves, and
// the key–value requests not answered, in the order they were first sent.
func (r *Relay) resumeUpstream() {
	r.up.resumed = true // lost until the coordinator answers
	r.sendUp(&wire.Hello{Token: r.cfg.Token, Incarnation: r.cfg.Incarnation, Node: r.cfg.Node, Ranks: r.cfg.Ranks})
	if r.sent {
		// Split as flush splits them; the coordinator takes what it lacks.
		contribs := r.upContribs
		r.contribs = contribs
		r.flush()
	}
	if len(r.upLeft) > 0 {
		r.sendUp(&wire.Leave{Ranks: slices.Clone(r.upLeft)})
	}
	ids := make([]uint64, 0, len(r.reqs))
	for id := range r.reqs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		r.sendUp(r.reqs[id].up)
	}
}
