package coord

import (
	"fmt"
	"strings"

	"github.com/ckpt/ckpt/internal/wire"
)

// send CLIENT TYPE args…: the client sends a message, delivered at once.
//
//	hello [ranks=(…)] [token=T] [inc=I] [node=N]
//	barrier|allgather|decide|commit [seq=S] [ranks=(…)] [data=(…)]
//	    (defaults: the next seq, the client's ranks, data "r<rank>";
//	    commit votes name=NAME, vote=no for a failed vote)
//	publish req=R key=K [value=V]
//	lookup req=R key=K [wait]
//	heartbeat | leave [ranks=(…)] | fail [ranks=(…)] [reason=WORDS_WITH_UNDERSCORES]
//	welcome | result | ack   (messages a client must not send)
func (e *env) cmdSend(c *command) {
	cl := e.client(c)
	if len(c.Args) < 2 {
		e.t.Fatalf("%s: send needs a message type", c.Pos)
	}
	var msg wire.Msg
	switch typ := c.Args[1].Key; typ {
	case "hello":
		cl.ranks = e.ranks(c, "ranks", cl.ranks)
		msg = &wire.Hello{Token: e.str(c, "token", e.token), Incarnation: uint64(e.int(c, "inc", int(e.inc))),
			Node: e.str(c, "node", cl.name), Ranks: cl.ranks}
	case "barrier", "allgather", "decide", "commit":
		kinds := map[string]wire.Kind{"barrier": wire.Barrier, "allgather": wire.AllGather,
			"decide": wire.Decide, "commit": wire.Commit}
		seq := uint64(e.int(c, "seq", int(cl.seq+1)))
		cl.seq = seq
		ranks := e.ranks(c, "ranks", cl.ranks)
		data, hasData := e.list(c, "data")
		x := &wire.Collective{Seq: seq, Kind: kinds[typ]}
		for i, r := range ranks {
			var d []byte
			switch {
			case hasData:
				if i < len(data) {
					d = []byte(data[i])
				}
			case typ == "commit":
				d = wire.AppendVote(nil, e.str(c, "name", "ck1"), e.str(c, "vote", "yes") == "yes")
			case typ != "barrier":
				d = []byte(fmt.Sprintf("r%d", r))
			}
			x.Contribs = append(x.Contribs, wire.Contrib{Rank: r, Data: d})
		}
		msg = x
	case "publish":
		msg = &wire.Publish{Req: uint64(e.int(c, "req", 0)), Key: e.str(c, "key", ""), Value: []byte(e.str(c, "value", ""))}
	case "lookup":
		msg = &wire.Lookup{Req: uint64(e.int(c, "req", 0)), Key: e.str(c, "key", ""), Wait: c.Has("wait")}
	case "heartbeat":
		msg = &wire.Heartbeat{}
	case "leave":
		msg = &wire.Leave{Ranks: e.ranks(c, "ranks", cl.ranks)}
	case "fail":
		msg = &wire.Fail{Ranks: e.ranks(c, "ranks", nil), Reason: strings.ReplaceAll(e.str(c, "reason", "crashed"), "_", " ")}
	case "welcome":
		msg = &wire.Welcome{Size: 1}
	case "result":
		msg = &wire.Result{Seq: 1, Kind: wire.Barrier}
	case "ack":
		msg = &wire.Ack{Req: 1}
	default:
		e.t.Fatalf("%s: unknown message type %q", c.Pos, typ)
	}
	// Every message goes through the codec, as it would on a socket, so
	// the scripts exercise what a driver actually delivers.
	frame, err := wire.Encode(msg)
	if err != nil {
		e.t.Fatalf("%s: %v", c.Pos, err)
	}
	if msg, err = wire.Decode(frame); err != nil {
		e.t.Fatalf("%s: %v", c.Pos, err)
	}
	if !cl.open {
		e.printf("(%s is closed)", cl.name)
		return
	}
	e.apply(cl.srv, cl.srv.sm.Receive(cl.id, msg, e.now))
}

// inject RELAY TYPE args…: the coordinator's side of a relay's link sends
// a message the real coordinator would not (to test the relay's checks):
//
//	welcome | result seq=S | ack req=R | value req=R | error | hello
func (e *env) cmdInject(c *command) {
	s := e.byName[e.name(c)]
	var msg wire.Msg
	switch typ := c.Args[1].Key; typ {
	case "welcome":
		msg = &wire.Welcome{Size: 1}
	case "result":
		msg = &wire.Result{Seq: uint64(e.int(c, "seq", 1)), Kind: wire.Barrier}
	case "ack":
		msg = &wire.Ack{Req: uint64(e.int(c, "req", 1))}
	case "value":
		msg = &wire.Value{Req: uint64(e.int(c, "req", 1)), Key: "k"}
	case "error":
		msg = &wire.Error{Reason: "you broke it"}
	case "hello":
		msg = &wire.Hello{}
	default:
		e.t.Fatalf("%s: unknown message type %q", c.Pos, typ)
	}
	e.printf("%s reads %v from coord", s.name, msg)
	e.nested(func() { e.apply(s, s.sm.Receive(Upstream, msg, e.now)) })
}

func init() { handlers["inject"] = (*env).cmdInject }
