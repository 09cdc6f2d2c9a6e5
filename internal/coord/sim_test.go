package coord

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/wire"
)

// TestRandomized simulates jobs on a network that delivers messages in a
// random order (FIFO per connection and direction, as TCP does): a
// coordinator, some relays, and clients holding one or more ranks, some
// behind relays and some connected directly. Every client runs the same
// program: join, then a seeded sequence of collectives of every kind, a
// publish before each contribution and a lookup after each result, then
// leave. Checked:
//
//   - every client gets identical and correct results, and sees every key
//     published before a collective once it completed;
//   - without failures the job always finishes (no deadlock: when no
//     message is in flight, every client is done);
//   - with a crash (a client or a relay's link) every surviving client is
//     either done or told Abort: nobody waits forever. A relay whose link
//     is cut dials again at a random moment, or gives up after its
//     heartbeat timeout (the coordinator died); half the coordinators take
//     relays back (Config.Relays), the others abort at the cut.
func TestRandomized(t *testing.T) {
	seeds := 400
	if testing.Short() {
		seeds = 50
	}
	ends := map[Phase]int{}
	resumed := 0 // jobs that finished with a relay that dialled again
	for seed := range uint64(seeds) {
		s := runSim(t, seed, seed%3 == 0)
		ends[s.coord.Status().Phase]++
		if s.redialed && s.coord.Status().Phase == Finished {
			resumed++
		}
	}
	if resumed < seeds/100 {
		t.Fatalf("%d jobs finished with a relay resumed: the simulation no longer exercises resumption", resumed)
	}
	t.Logf("ends %v; %d finished with a relay resumed", ends, resumed)
	// Guard the test itself: crashes must hit running jobs.
	if ends[Aborted] < seeds/6 || ends[Finished] < seeds/2 {
		t.Fatalf("ends %v: the simulation no longer exercises both outcomes", ends)
	}
}

type simItem struct {
	msg wire.Msg // nil: end of stream
}

// simLink is a connection: a client (or a relay's upstream side) and the
// server it connects to, with the messages in flight each way.
type simLink struct {
	srv      StateMachine
	id       ConnID // the connection's id at srv
	client   *simClient
	relay    *Relay // set for a relay's link to the coordinator
	upClosed bool   // the relay closed its side
	toServer []simItem
	toClient []simItem
	open     bool // the server has not closed it
}

type simClient struct {
	name    string
	ranks   []int32
	link    *simLink
	welcome bool
	seq     uint64 // last collective it contributed to
	results map[uint64]string
	pending map[uint64]string // lookups awaiting a Value, by req
	req     uint64
	left    bool
	aborted bool
	crashed bool
	closed  bool
}

type sim struct {
	t       *testing.T
	seed    uint64
	rng     *rand.Rand
	size    int
	rounds  int
	kinds   []wire.Kind
	coord   *Machine
	links   []*simLink
	byConn  map[StateMachine]map[ConnID]*simLink
	relayUp map[*Relay]*simLink
	clients []*simClient
	pending []func() // connections not yet made
	// redialed: a relay's link was cut and it dialled again.
	redialed bool
}

// runSim runs one simulated job and returns it, ended.
func runSim(t *testing.T, seed uint64, crash bool) *sim {
	s := &sim{t: t, seed: seed, rng: rand.New(rand.NewPCG(seed, 7)),
		byConn: map[StateMachine]map[ConnID]*simLink{}, relayUp: map[*Relay]*simLink{}}
	s.size = 1 + s.rng.IntN(12)
	s.rounds = 1 + s.rng.IntN(6)
	for range s.rounds {
		s.kinds = append(s.kinds, []wire.Kind{wire.Barrier, wire.AllGather, wire.Decide, wire.Commit}[s.rng.IntN(4)])
	}
	var err error
	s.coord, err = New(Config{Size: s.size, Token: "tok", Incarnation: 3, Decide: decideMax, Relays: seed%2 == 1})
	if err != nil {
		t.Fatal(err)
	}
	s.byConn[s.coord] = map[ConnID]*simLink{}

	// Deal the ranks to nodes of 1–4 ranks; a node is behind a relay or
	// not, and its ranks are held by clients of 1–2 ranks each.
	perm := s.rng.Perm(s.size)
	for len(perm) > 0 {
		n := min(len(perm), 1+s.rng.IntN(4))
		node := perm[:n]
		perm = perm[n:]
		name := fmt.Sprintf("n%d", len(s.pending))
		srv := StateMachine(s.coord)
		if s.rng.IntN(2) == 0 {
			var ranks []int32
			for _, r := range node {
				ranks = append(ranks, int32(r))
			}
			r, err := NewRelay(RelayConfig{Token: "tok", Incarnation: 3, Node: name, Ranks: ranks, MaxFrame: 40 + s.rng.IntN(100)})
			if err != nil {
				t.Fatal(err)
			}
			s.byConn[r] = map[ConnID]*simLink{}
			srv = r
			s.pending = append(s.pending, func() { s.dialUp(r) })
		}
		for len(node) > 0 {
			k := min(len(node), 1+s.rng.IntN(2))
			c := &simClient{name: fmt.Sprintf("%s/c%d", name, len(s.clients)), results: map[uint64]string{},
				pending: map[uint64]string{}}
			for _, r := range node[:k] {
				c.ranks = append(c.ranks, int32(r))
			}
			node = node[k:]
			s.clients = append(s.clients, c)
			s.pending = append(s.pending, func() { s.dial(c, srv, name) })
		}
	}

	crashAt := -1
	if crash {
		crashAt = s.rng.IntN(6*s.size*(s.rounds+1) + 10)
	}
	crashed := false
	for step := 0; ; step++ {
		if step == crashAt || (crashAt >= 0 && step > crashAt && !crashed) {
			crashed = s.crash()
		}
		if !s.step() {
			break
		}
		if step > 1_000_000 {
			t.Fatalf("seed %d: no end after %d steps", seed, step)
		}
	}
	if crashed && s.coord.cfg.Relays && s.coord.Status().Phase == Running {
		// A relay that gave up never comes back: the coordinator waits
		// for it until the heartbeat timeout, then tells the others,
		// which meanwhile heartbeat as clients do.
		tick := func(now time.Duration) {
			s.apply(s.coord, s.coord.Tick(now))
			seen := map[*Relay]bool{}
			for _, l := range s.links {
				if r := l.relay; r != nil && !seen[r] {
					seen[r] = true
					s.apply(r, r.Tick(now))
				}
			}
		}
		tick(DefaultHeartbeatTimeout / 2)
		for _, c := range s.clients {
			s.send(c, &wire.Heartbeat{})
		}
		for s.step() {
		}
		tick(DefaultHeartbeatTimeout + 1)
		for s.step() {
		}
	}
	s.check(crashed)
	return s
}

func (s *sim) dial(c *simClient, srv StateMachine, node string) {
	l := &simLink{srv: srv, id: ConnID(len(s.byConn[srv]) + 1), client: c, open: true}
	s.byConn[srv][l.id] = l
	s.links = append(s.links, l)
	c.link = l
	s.apply(srv, srv.Connect(l.id, 0))
	s.send(c, &wire.Hello{Token: "tok", Incarnation: 3, Node: node, Ranks: c.ranks})
}

func (s *sim) dialUp(r *Relay) {
	l := &simLink{srv: s.coord, id: ConnID(len(s.byConn[s.coord]) + 1), relay: r, open: true}
	s.byConn[s.coord][l.id] = l
	s.links = append(s.links, l)
	s.relayUp[r] = l
	s.apply(s.coord, s.coord.Connect(l.id, 0))
	s.apply(r, r.Connect(Upstream, 0))
}

// step does one random thing: makes a pending connection or delivers one
// message; it reports false when nothing is left to do.
func (s *sim) step() bool {
	type choice struct {
		l    *simLink
		down bool
	}
	var choices []choice
	for _, l := range s.links {
		if len(l.toServer) > 0 {
			choices = append(choices, choice{l, false})
		}
		if len(l.toClient) > 0 {
			choices = append(choices, choice{l, true})
		}
	}
	n := len(choices) + len(s.pending)
	if n == 0 {
		return false
	}
	i := s.rng.IntN(n)
	if i >= len(choices) {
		i -= len(choices)
		f := s.pending[i]
		s.pending = slices.Delete(s.pending, i, i+1)
		f()
		return true
	}
	ch := choices[i]
	if !ch.down {
		it := ch.l.toServer[0]
		ch.l.toServer = ch.l.toServer[1:]
		if it.msg == nil {
			s.apply(ch.l.srv, ch.l.srv.Disconnect(ch.l.id, nil, 0))
		} else {
			s.apply(ch.l.srv, ch.l.srv.Receive(ch.l.id, s.roundTrip(it.msg), 0))
		}
		return true
	}
	it := ch.l.toClient[0]
	ch.l.toClient = ch.l.toClient[1:]
	if r := ch.l.relay; r != nil {
		if it.msg == nil {
			s.apply(r, r.Disconnect(Upstream, nil, 0))
		} else {
			s.apply(r, r.Receive(Upstream, s.roundTrip(it.msg), 0))
		}
		return true
	}
	s.clientGets(ch.l.client, it.msg)
	return true
}

// roundTrip passes a message through the codec, as a socket would.
func (s *sim) roundTrip(m wire.Msg) wire.Msg {
	frame, err := wire.Encode(m)
	if err != nil {
		s.t.Fatalf("seed %d: encode %v: %v", s.seed, m, err)
	}
	out, err := wire.Decode(frame)
	if err != nil {
		s.t.Fatalf("seed %d: decode %v: %v", s.seed, m, err)
	}
	return out
}

// apply carries out the actions of a Ready returned by srv.
func (s *sim) apply(srv StateMachine, rd Ready) {
	for _, snd := range rd.Sends {
		l := s.linkOf(srv, snd.Conn)
		if l == nil {
			s.t.Fatalf("seed %d: send to unknown connection %v", s.seed, snd.Conn)
		}
		if snd.Conn == Upstream {
			if l.relayOpen() {
				l.toServer = append(l.toServer, simItem{snd.Msg})
			}
		} else if l.open {
			l.toClient = append(l.toClient, simItem{snd.Msg})
		}
	}
	for _, cl := range rd.Closes {
		l := s.linkOf(srv, cl.Conn)
		if cl.Conn == Upstream {
			// The relay closes: the coordinator reads what was sent, then
			// end of stream; nothing more reaches the relay.
			if l.relayOpen() {
				l.toServer = append(l.toServer, simItem{nil})
				l.toClient = nil
				l.upClosed = true
			}
			continue
		}
		if l.open {
			l.open = false
			l.toClient = append(l.toClient, simItem{nil})
			l.toServer = nil
		}
	}
}

func (l *simLink) relayOpen() bool { return !l.upClosed }

func (s *sim) linkOf(srv StateMachine, c ConnID) *simLink {
	if c == Upstream {
		return s.relayUp[srv.(*Relay)]
	}
	return s.byConn[srv][c]
}

func (s *sim) send(c *simClient, m wire.Msg) {
	if c.crashed || c.closed {
		return
	}
	c.link.toServer = append(c.link.toServer, simItem{m})
}

// data is rank r's contribution to collective seq.
func simData(kind wire.Kind, r int32, seq uint64) []byte {
	switch kind {
	case wire.Barrier:
		return nil
	case wire.Commit:
		return wire.AppendVote(nil, fmt.Sprintf("ck%d", seq), true)
	}
	return fmt.Appendf(nil, "%d/%d", r, seq)
}

// expected is the Result every client must get for collective seq.
func (s *sim) expected(seq uint64) string {
	kind := s.kinds[seq-1]
	all := make([][]byte, s.size)
	for r := range all {
		all[r] = simData(kind, int32(r), seq)
	}
	res := &wire.Result{Seq: seq, Kind: kind}
	switch kind {
	case wire.AllGather:
		res.Data = all
	case wire.Decide:
		best, _ := decideMax(seq, all)
		res.Data = [][]byte{best}
	case wire.Commit:
		res.Data = [][]byte{wire.AppendVote(nil, fmt.Sprintf("ck%d", seq), true)}
	}
	return resultKey(res)
}

func resultKey(r *wire.Result) string {
	return fmt.Sprintf("%d %v %q", r.Seq, r.Kind, bytes.Join(r.Data, []byte{0}))
}

// contribute publishes its ranks' keys for the next collective, then
// contributes to it, in one or two messages.
func (s *sim) contribute(c *simClient) {
	c.seq++
	for _, r := range c.ranks {
		c.req++
		s.send(c, &wire.Publish{Req: c.req, Key: fmt.Sprintf("p/%d/%d", r, c.seq), Value: []byte("v")})
	}
	kind := s.kinds[c.seq-1]
	var cs []wire.Contrib
	for _, r := range c.ranks {
		cs = append(cs, wire.Contrib{Rank: r, Data: simData(kind, r, c.seq)})
	}
	cut := len(cs)
	if len(cs) > 1 && s.rng.IntN(2) == 0 {
		cut = 1
	}
	s.send(c, &wire.Collective{Seq: c.seq, Kind: kind, Contribs: cs[:cut]})
	if cut < len(cs) {
		s.send(c, &wire.Collective{Seq: c.seq, Kind: kind, Contribs: cs[cut:]})
	}
}

func (s *sim) clientGets(c *simClient, m wire.Msg) {
	if c.crashed {
		return
	}
	switch x := m.(type) {
	case nil:
		c.closed = true
	case *wire.Welcome:
		if c.welcome || int(x.Size) != s.size || x.Incarnation != 3 {
			s.t.Fatalf("seed %d: %s: bad %v", s.seed, c.name, x)
		}
		c.welcome = true
		s.contribute(c)
	case *wire.Result:
		if x.Seq != c.seq || c.results[x.Seq] != "" {
			s.t.Fatalf("seed %d: %s: unexpected %v (at seq %d)", s.seed, c.name, x, c.seq)
		}
		if got, want := resultKey(x), s.expected(x.Seq); got != want {
			s.t.Fatalf("seed %d: %s: result %s, want %s", s.seed, c.name, got, want)
		}
		c.results[x.Seq] = resultKey(x)
		// Every rank published before contributing: all keys of this
		// collective are visible now.
		c.req++
		key := fmt.Sprintf("p/%d/%d", s.rng.IntN(s.size), x.Seq)
		c.pending[c.req] = key
		s.send(c, &wire.Lookup{Req: c.req, Key: key, Wait: s.rng.IntN(2) == 0})
		if int(c.seq) < s.rounds {
			s.contribute(c)
		} else {
			c.left = true
			s.send(c, &wire.Leave{Ranks: c.ranks})
		}
	case *wire.Value:
		key, ok := c.pending[x.Req]
		if !ok || key != x.Key || !x.Found {
			s.t.Fatalf("seed %d: %s: bad %v (wanted %q)", s.seed, c.name, x, key)
		}
		delete(c.pending, x.Req)
	case *wire.Ack, *wire.Heartbeat:
	case *wire.Abort:
		c.aborted = true
	default:
		s.t.Fatalf("seed %d: %s: unexpected %v", s.seed, c.name, m)
	}
}

// crash makes a random client that has been welcomed crash, or cuts a
// random relay's link to the coordinator; it reports whether it did.
func (s *sim) crash() bool {
	var welcomed []*simClient
	for _, c := range s.clients {
		if c.welcome && !c.crashed && !c.closed {
			welcomed = append(welcomed, c)
		}
	}
	if len(welcomed) == 0 {
		return false
	}
	if len(s.relayUp) > 0 && s.rng.IntN(3) == 0 {
		for _, l := range s.links {
			if l.relay != nil && l.open && !l.upClosed {
				r := l.relay
				l.toServer, l.toClient, l.upClosed, l.open = nil, nil, true, false
				s.apply(s.coord, s.coord.Disconnect(l.id, fmt.Errorf("reset"), 0))
				s.apply(r, r.Disconnect(Upstream, fmt.Errorf("reset"), 0))
				if s.rng.IntN(2) == 0 {
					s.pending = append(s.pending, func() { s.dialUp(r) })
					s.redialed = true
				} else {
					// Time passes for this relay alone, its ranks
					// heartbeating: it gives up on the coordinator.
					half := DefaultHeartbeatTimeout / 2
					s.apply(r, r.Tick(half))
					for id, l := range s.byConn[r] {
						if l.open && !l.client.crashed {
							s.apply(r, r.Receive(id, &wire.Heartbeat{}, half))
						}
					}
					s.apply(r, r.Tick(DefaultHeartbeatTimeout+1))
				}
				return true
			}
		}
	}
	c := welcomed[s.rng.IntN(len(welcomed))]
	c.crashed = true
	c.link.toClient = nil
	if c.link.open {
		c.link.toServer = append(c.link.toServer, simItem{nil})
	}
	return true
}

func (s *sim) check(crashed bool) {
	done := 0
	for _, c := range s.clients {
		switch {
		case c.crashed:
		case c.left && len(c.pending) == 0 && len(c.results) == s.rounds:
			done++
		case crashed && c.aborted:
		default:
			s.t.Fatalf("seed %d (size %d, crash %v): %s stuck: welcome %v seq %d results %d pending %d left %v aborted %v closed %v",
				s.seed, s.size, crashed, c.name, c.welcome, c.seq, len(c.results), len(c.pending), c.left, c.aborted, c.closed)
		}
	}
	st := s.coord.Status()
	switch {
	case !crashed && st.Phase != Finished:
		s.t.Fatalf("seed %d: no crash but the coordinator is %v", s.seed, st.Phase)
	case crashed && st.Phase != Finished && st.Phase != Aborted:
		s.t.Fatalf("seed %d: after a crash the coordinator is %v", s.seed, st.Phase)
	}
	if st.Phase == Finished {
		for seq, k := range s.kinds {
			if k == wire.Commit && st.CommitSeq < uint64(seq+1) {
				s.t.Fatalf("seed %d: commit seq %d not recorded (%+v)", s.seed, seq+1, st)
			}
		}
	}
}
