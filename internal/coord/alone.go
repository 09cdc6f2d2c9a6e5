package coord

import (
	"fmt"
	"slices"
	"time"

	"github.com/ckpt/ckpt/internal/wire"
)

// Recovering one rank alone (Config.Uncoordinated): see the package
// documentation.

// vacancy is a rank lost while the job runs, waiting for its next process.
type vacancy struct {
	rank  int32
	node  string // where it ran
	cause string
	since time.Duration // when it was lost
}

// vacate frees the ranks of lost connection cn that have not left, or
// aborts the job if a collective is open: see "Recovering one rank alone".
func (m *Machine) vacate(cn *conn, ranks []int32, cause string) {
	if m.t.count > 0 {
		m.abort(failReason(ranks, cn.node, fmt.Sprintf("%s, during collective seq %d, which needs it", cause, m.t.seq)))
		return
	}
	for _, r := range ranks {
		i, _ := m.t.idx(r)
		m.t.owner[i] = nil
		m.vacant = append(m.vacant, vacancy{rank: r, node: cn.node, cause: cause, since: m.now})
	}
	m.t.joined -= len(ranks)
	if m.nodes[cn.node]--; m.nodes[cn.node] == 0 {
		delete(m.nodes, cn.node)
	}
	if !m.lostOnce {
		m.lostOnce, m.firstLost = true, ranks[0]
	}
	m.notice(Notice{Kind: NoticeLost, Conn: cn.id, Ranks: slices.Clone(ranks), Reason: failReason(ranks, cn.node, cause)})
}

// rejoin handles a Hello while the job runs: one for vacant ranks only,
// with the job's credentials, joins them; any other is refused as after
// the start.
func (m *Machine) rejoin(cn *conn, h *wire.Hello) {
	if cn.joined {
		m.protocolError(cn, 0, "second Hello")
		return
	}
	if checkHello(h, m.cfg.Token, m.cfg.Incarnation) == "" {
		if old := m.replaced(h); old != nil {
			// The rank's process died and the launcher started the
			// next one, whose Hello came before the coordinator read
			// the end of the old one's connection (two readers race).
			// Only the launcher starts a rank's process, and only after
			// the last one ended: the old connection is a dead one's.
			m.lose(old, "replaced by the rank's next process", true)
			if m.phase != Running {
				return // a collective needed it: every connection is closed
			}
		}
	}
	why := ""
	switch {
	case len(m.vacant) == 0:
		why = fmt.Sprintf("the job has started: all %d ranks joined", m.cfg.Size)
	default:
		why = checkHello(h, m.cfg.Token, m.cfg.Incarnation)
	}
	for _, r := range h.Ranks {
		if why != "" {
			break
		}
		if !slices.ContainsFunc(m.vacant, func(v vacancy) bool { return v.rank == r }) {
			why = fmt.Sprintf("rank %d is not lost: only a lost rank may join the running job", r)
		}
	}
	if why == "" {
		why = m.t.claim(cn, h.Ranks, func(r int32) string { return fmt.Sprintf("rank %d out of range [0, %d)", r, m.cfg.Size) })
	}
	if why != "" {
		m.send(cn, &wire.Refused{Reason: why})
		m.closeConn(cn, "refused: "+why)
		return
	}
	m.vacant = slices.DeleteFunc(m.vacant, func(v vacancy) bool { return slices.Contains(h.Ranks, v.rank) })
	cn.joined, cn.node, cn.ranks = true, h.Node, h.Ranks
	m.nodes[cn.node]++
	m.rejoined += len(h.Ranks)
	m.notice(Notice{Kind: NoticeJoined, Conn: cn.id, Ranks: cn.ranks})
	m.send(cn, &wire.Welcome{Size: int32(m.cfg.Size), Incarnation: m.cfg.Incarnation, Nodes: int32(len(m.nodes))})
	m.notice(Notice{Kind: NoticeRejoined, Conn: cn.id, Ranks: cn.ranks})
}

// replaced is the connection that holds exactly h's ranks, none of them
// left; nil if none does.
func (m *Machine) replaced(h *wire.Hello) *conn {
	old := m.owner(h)
	if old == nil || old.left > 0 || m.byID[old.id] != old {
		return nil
	}
	return old
}

// collectiveAlone aborts the job, and says so, when a collective cannot be
// served because a rank was lost: see "Recovering one rank alone".
func (m *Machine) collectiveAlone(x *wire.Collective) bool {
	if !m.lostOnce {
		return false
	}
	var why string
	if len(m.vacant) > 0 {
		v := m.vacant[0]
		why = fmt.Sprintf("collective seq %d needs rank %d (node %s), which is recovering alone: %s", x.Seq, v.rank, v.node, v.cause)
	} else {
		why = fmt.Sprintf("collective seq %d after rank %d recovered alone: a restarted rank cannot take part in the job's collectives", x.Seq, m.firstLost)
	}
	m.abort(clip(why))
	return true
}

// tickVacant aborts the job when a vacant rank did not rejoin within the
// join timeout of its loss.
func (m *Machine) tickVacant() {
	for _, v := range m.vacant {
		if m.now-v.since > m.cfg.JoinTimeout {
			m.vacant = nil
			m.abort(failReason([]int32{v.rank}, v.node,
				fmt.Sprintf("%s, and it did not rejoin within the join timeout of %v", v.cause, m.cfg.JoinTimeout)))
			return
		}
	}
}

// Recovering returns the ranks lost while the job runs that have not
// rejoined yet, in the order they were lost.
func (m *Machine) Recovering() []int32 {
	out := make([]int32, len(m.vacant))
	for i, v := range m.vacant {
		out[i] = v.rank
	}
	return out
}
