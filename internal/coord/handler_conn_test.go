package coord

import "errors"

// connect NAME [to=SERVER]: a client connects (to the coordinator by
// default).
func (e *env) cmdConnect(c *command) {
	name := e.name(c)
	s := e.byName[e.str(c, "to", "coord")]
	if s == nil {
		e.t.Fatalf("%s: no server %q", c.Pos, e.str(c, "to", "coord"))
	}
	s.next++
	cl := &client{name: name, srv: s, id: s.next, open: true}
	e.clients[name] = cl
	s.peers[cl.id] = name
	e.apply(s, s.sm.Connect(cl.id, e.now))
}

// join NAME=(ranks) … [to=SERVER] [token=T]: each named client connects
// and sends Hello for its ranks (node: the client's name, or the server's
// for a relay's clients).
func (e *env) cmdJoin(c *command) {
	to := e.str(c, "to", "coord")
	for _, a := range c.Args {
		if a.Key == "to" || a.Key == "token" {
			continue
		}
		e.cmdConnect(&command{Pos: c.Pos, Name: "connect", Args: []arg{{Key: a.Key}, {Key: "to", Vals: []string{to}}}})
		node := a.Key
		if to != "coord" {
			node = to
		}
		e.cmdSend(&command{Pos: c.Pos, Name: "send", Args: []arg{{Key: a.Key}, {Key: "hello"},
			{Key: "ranks", Vals: a.Vals}, {Key: "node", Vals: []string{node}},
			{Key: "token", Vals: []string{e.str(c, "token", e.token)}}}})
	}
}

// disconnect NAME [err=TEXT]: a client's connection ends; without err, as
// a clean end of stream.
func (e *env) cmdDisconnect(c *command) {
	cl := e.client(c)
	var err error
	if s := e.str(c, "err", ""); s != "" {
		err = errors.New(s)
	}
	cl.open = false
	e.apply(cl.srv, cl.srv.sm.Disconnect(cl.id, err, e.now))
}

// cut RELAY: the network between a relay and the coordinator fails; both
// ends see the loss at once and what was in flight is lost.
func (e *env) cmdCut(c *command) {
	s := e.byName[e.name(c)]
	s.upOpen, s.upq, s.downq = false, nil, nil
	err := errors.New("connection reset")
	e.apply(e.coord, e.coord.sm.Disconnect(s.upID, err, e.now))
	e.apply(s, s.sm.Disconnect(Upstream, err, e.now))
}

// crash RELAY: a relay process dies with its node's ranks; the coordinator
// sees its connection end.
func (e *env) cmdCrash(c *command) {
	s := e.byName[e.name(c)]
	s.upOpen, s.upq, s.downq = false, nil, nil
	for _, cl := range e.clients {
		if cl.srv == s {
			cl.open = false
		}
	}
	e.apply(e.coord, e.coord.sm.Disconnect(s.upID, nil, e.now))
}

// redial RELAY: the relay connects to the coordinator again.
func (e *env) cmdRedial(c *command) { e.dialUp(e.byName[e.name(c)]) }

func init() {
	handlers["redial"] = (*env).cmdRedial
	handlers["join"] = (*env).cmdJoin
}
