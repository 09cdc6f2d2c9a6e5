package coord

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/wire"
)

// TestScripts runs the scenarios of testdata/*.txt. The environment holds
// one coordinator, any number of relays connected to it, and clients
// connected to either; commands (one handler file per group) make clients
// send messages, lose connections, let time pass and deliver the messages
// between relays and the coordinator. Every command prints the actions the
// state machines returned:
//
//	coord→c0 Welcome{…}        a send to a client (clients only record)
//	r1→coord Hello{…}           a send on a relay link, queued until stabilize
//	coord closes c0: reason     a Close
//	coord: started              a Notice
//
// and stabilize prints each delivery on a relay link followed by the
// actions it caused, indented.
func TestScripts(t *testing.T) {
	runScripts(t, func(t *testing.T) func(*command) string {
		e := &env{t: t, token: "s3cret", inc: 1, byName: map[string]*server{},
			clients: map[string]*client{}, relayAt: map[ConnID]*server{}}
		return e.handle
	})
}

type env struct {
	t          *testing.T
	now        time.Duration
	token      string
	inc        uint64
	coord      *server
	relays     []*server // in creation order
	byName     map[string]*server
	clients    map[string]*client
	relayAt    map[ConnID]*server // the relay behind a coordinator connection
	out        strings.Builder
	indent     string
	lastResult map[string]string // per client, its last Result, for "results"
}

type server struct {
	name  string
	sm    StateMachine
	peers map[ConnID]string // downstream connections by name
	next  ConnID
	// A relay's link to the coordinator: its id there, whether it is open,
	// and the messages in flight each way (nil means end of stream).
	upID       ConnID
	upOpen     bool
	upq, downq []wire.Msg
}

type client struct {
	name  string
	srv   *server
	id    ConnID
	open  bool
	ranks []int32
	seq   uint64
}

var handlers = map[string]func(*env, *command){
	"coord":      (*env).cmdCoord,
	"relay":      (*env).cmdRelay,
	"status":     (*env).cmdStatus,
	"connect":    (*env).cmdConnect,
	"disconnect": (*env).cmdDisconnect,
	"cut":        (*env).cmdCut,
	"crash":      (*env).cmdCrash,
	"send":       (*env).cmdSend,
	"tick":       (*env).cmdTick,
	"stabilize":  (*env).cmdStabilize,
	"results":    (*env).cmdResults,
}

func (e *env) handle(c *command) string {
	h, ok := handlers[c.Name]
	if !ok {
		e.t.Fatalf("%s: unknown command %q", c.Pos, c.Name)
	}
	e.out.Reset()
	h(e, c)
	return e.out.String()
}

func (e *env) printf(format string, args ...any) {
	fmt.Fprintf(&e.out, e.indent+format+"\n", args...)
}

// apply prints the actions of rd, which s returned, and carries them out:
// sends on relay links are queued, closes end links and clients.
func (e *env) apply(s *server, rd Ready) {
	for _, snd := range rd.Sends {
		switch to := e.peer(s, snd.Conn); {
		case snd.Conn == Upstream:
			e.printf("%s→coord %v", s.name, snd.Msg)
			if s.upOpen {
				s.upq = append(s.upq, snd.Msg)
			}
		case e.relayAt[snd.Conn] != nil && s == e.coord:
			r := e.relayAt[snd.Conn]
			e.printf("coord→%s %v", r.name, snd.Msg)
			if r.upOpen && snd.Conn == r.upID { // not on a link the relay replaced
				r.downq = append(r.downq, snd.Msg)
			}
		default:
			e.printf("%s→%s %v", s.name, to, snd.Msg)
			if res, ok := snd.Msg.(*wire.Result); ok {
				if e.lastResult == nil {
					e.lastResult = map[string]string{}
				}
				e.lastResult[to] = res.String()
			}
		}
	}
	for _, cl := range rd.Closes {
		switch {
		case cl.Conn == Upstream:
			e.printf("%s closes up: %s", s.name, cl.Reason)
			if s.upOpen {
				// The coordinator reads what was sent, then end of
				// stream; nothing more reaches the relay.
				s.upq = append(s.upq, nil)
				s.downq = nil
				s.upOpen = false
			}
		case e.relayAt[cl.Conn] != nil && s == e.coord:
			r := e.relayAt[cl.Conn]
			e.printf("coord closes %s: %s", r.name, cl.Reason)
			if r.upOpen && cl.Conn == r.upID {
				r.downq = append(r.downq, nil)
				r.upq = nil
				r.upOpen = false
			}
		default:
			name := e.peer(s, cl.Conn)
			e.printf("%s closes %s: %s", s.name, name, cl.Reason)
			if c := e.clients[name]; c != nil {
				c.open = false
			}
		}
	}
	for _, n := range rd.Notices {
		str := n.String()
		if n.Kind == NoticeJoined || n.Kind == NoticeDropped || n.Kind == NoticeLost || n.Kind == NoticeRejoined {
			str = strings.Replace(str, " "+n.Conn.String(), " "+e.peer(s, n.Conn), 1)
		}
		e.printf("%s: %s", s.name, str)
	}
}

func (e *env) peer(s *server, c ConnID) string {
	if name, ok := s.peers[c]; ok {
		return name
	}
	return c.String()
}

// Argument helpers: a missing argument takes the default; a malformed one
// fails the test at the command's position.

func (e *env) str(c *command, key, def string) string {
	for _, a := range c.Args {
		if a.Key == key && len(a.Vals) == 1 {
			return a.Vals[0]
		}
	}
	return def
}

func (e *env) int(c *command, key string, def int) int {
	s := e.str(c, key, "")
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		e.t.Fatalf("%s: %s=%q: %v", c.Pos, key, s, err)
	}
	return n
}

func (e *env) dur(c *command, key string, def time.Duration) time.Duration {
	s := e.str(c, key, "")
	if s == "" {
		return def
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		e.t.Fatalf("%s: %s=%q: %v", c.Pos, key, s, err)
	}
	return d
}

func (e *env) list(c *command, key string) ([]string, bool) {
	for _, a := range c.Args {
		if a.Key == key {
			return a.Vals, true
		}
	}
	return nil, false
}

func (e *env) ranks(c *command, key string, def []int32) []int32 {
	vals, ok := e.list(c, key)
	if !ok {
		return def
	}
	rs := []int32{}
	for _, v := range vals {
		n, err := strconv.Atoi(v)
		if err != nil {
			e.t.Fatalf("%s: %s: %v", c.Pos, key, err)
		}
		rs = append(rs, int32(n))
	}
	return rs
}

// pos returns the first bare argument (a name), or fails.
func (e *env) name(c *command) string {
	if len(c.Args) == 0 || c.Args[0].Vals != nil {
		e.t.Fatalf("%s: %s needs a name", c.Pos, c.Name)
	}
	return c.Args[0].Key
}

func (e *env) client(c *command) *client {
	cl := e.clients[e.name(c)]
	if cl == nil {
		e.t.Fatalf("%s: no client %q", c.Pos, e.name(c))
	}
	return cl
}
