package coord

import (
	"bytes"
	"time"

	"github.com/ckpt/ckpt/internal/wire"
)

// coord size=N [token=T] [inc=I] [timeout=D] [interval=D] [join=D] [decide=max]
// [maxvalue=N] [maxstore=N] [maxwaits=N] [maxcontrib=N] [relays] [uncoordinated]
//
// Creates the coordinator, forgetting every relay and client. Token and incarnation become the defaults of
// every later Hello.
func (e *env) cmdCoord(c *command) {
	e.token = e.str(c, "token", e.token)
	e.inc = uint64(e.int(c, "inc", int(e.inc)))
	cfg := Config{
		Size:              e.int(c, "size", 0),
		Token:             e.token,
		Incarnation:       e.inc,
		HeartbeatTimeout:  e.dur(c, "timeout", 10*time.Second),
		HeartbeatInterval: e.dur(c, "interval", 0),
		JoinTimeout:       e.dur(c, "join", 0),
		MaxValue:          e.int(c, "maxvalue", 0),
		MaxStore:          e.int(c, "maxstore", 0),
		MaxWaits:          e.int(c, "maxwaits", 0),
		MaxContrib:        e.int(c, "maxcontrib", 0),
		Relays:            c.Has("relays"),
		Uncoordinated:     c.Has("uncoordinated"),
	}
	if e.str(c, "decide", "") == "max" {
		cfg.Decide = decideMax
	}
	m, err := New(cfg)
	if err != nil {
		e.printf("error: %v", err)
		return
	}
	// A new coordinator starts a new world.
	e.coord = &server{name: "coord", sm: m, peers: map[ConnID]string{}}
	e.byName = map[string]*server{"coord": e.coord}
	e.relays, e.clients, e.relayAt, e.lastResult = nil, map[string]*client{}, map[ConnID]*server{}, nil
}

// decideMax answers the greatest contribution: a policy that depends on
// every rank, unlike the default.
func decideMax(_ uint64, contribs [][]byte) ([]byte, error) {
	var best []byte
	for _, c := range contribs {
		if bytes.Compare(c, best) > 0 {
			best = c
		}
	}
	return best, nil
}

// relay NAME node=N ranks=(…) [timeout=D] [interval=D] [maxframe=N]
// [token=T] [inc=I] [noconnect]
//
// Creates a relay and, unless noconnect, connects it to the coordinator.
func (e *env) cmdRelay(c *command) {
	name := e.name(c)
	cfg := RelayConfig{
		Token:             e.str(c, "token", e.token),
		Incarnation:       uint64(e.int(c, "inc", int(e.inc))),
		Node:              e.str(c, "node", name),
		Ranks:             e.ranks(c, "ranks", nil),
		HeartbeatTimeout:  e.dur(c, "timeout", 10*time.Second),
		HeartbeatInterval: e.dur(c, "interval", 0),
		MaxFrame:          e.int(c, "maxframe", 0),
	}
	r, err := NewRelay(cfg)
	if err != nil {
		e.printf("error: %v", err)
		return
	}
	s := &server{name: name, sm: r, peers: map[ConnID]string{}}
	e.relays = append(e.relays, s)
	e.byName[name] = s
	if !c.Has("noconnect") {
		e.dialUp(s)
	}
}

// dialUp connects relay s to the coordinator.
func (e *env) dialUp(s *server) {
	e.coord.next++
	s.upID = e.coord.next
	e.coord.peers[s.upID] = s.name
	e.relayAt[s.upID] = s
	s.upOpen, s.upq, s.downq = true, nil, nil
	e.apply(e.coord, e.coord.sm.Connect(s.upID, e.now))
	e.apply(s, s.sm.Connect(Upstream, e.now))
}

// status NAME: the Status of a server.
func (e *env) cmdStatus(c *command) {
	s := e.byName[e.name(c)]
	var st Status
	switch sm := s.sm.(type) {
	case *Machine:
		st = sm.Status()
	case *Relay:
		st = sm.Status()
	}
	e.printf("%s conns=%d joined=%d left=%d seq=%d", st.Phase, st.Conns, st.Joined, st.Left, st.Seq)
	if st.Reason != "" {
		e.printf("reason: %s", st.Reason)
	}
	if st.Committed != "" {
		e.printf("committed: %s at seq %d", st.Committed, st.CommitSeq)
	}
	if m, ok := s.sm.(*Machine); ok && st.Recovering+st.Rejoined > 0 {
		e.printf("recovering=%s rejoined=%d", wire.FormatRanks(m.Recovering()), st.Rejoined)
	}
}
