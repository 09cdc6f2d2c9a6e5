package coord

import (
	"fmt"
	"slices"
	"testing"

	"github.com/ckpt/ckpt/internal/wire"
)

// tree is a job in tree mode driven by direct calls: every message a relay
// sends upstream is handed to the coordinator at once, and every message
// the coordinator sends to a relay is handed to it at once. Local clients
// are one connection per rank.
type tree struct {
	tb     testing.TB
	size   int
	m      *Machine
	relays []*Relay
	got    int                // Results delivered to local clients by the last round
	msgs   []*wire.Collective // each rank's barrier message, reused
}

func newTree(tb testing.TB, size, nodes int) *tree {
	m, err := New(Config{Size: size, Token: "t"})
	if err != nil {
		tb.Fatal(err)
	}
	tr := &tree{tb: tb, size: size, m: m}
	per := size / nodes
	for n := range nodes {
		ranks := make([]int32, per)
		for i := range ranks {
			ranks[i] = int32(n*per + i)
		}
		r, err := NewRelay(RelayConfig{Token: "t", Node: fmt.Sprintf("n%d", n), Ranks: ranks})
		if err != nil {
			tb.Fatal(err)
		}
		tr.relays = append(tr.relays, r)
		tr.fromCoord(m.Connect(ConnID(n), 0))
		tr.fromRelay(n, r.Connect(Upstream, 0))
		for _, rank := range ranks {
			tr.fromRelay(n, r.Connect(ConnID(rank), 0))
			tr.fromRelay(n, r.Receive(ConnID(rank), &wire.Hello{Token: "t", Node: "x", Ranks: []int32{rank}}, 0))
		}
	}
	for rank := range size {
		tr.msgs = append(tr.msgs, &wire.Collective{Kind: wire.Barrier, Contribs: []wire.Contrib{{Rank: int32(rank)}}})
	}
	if st := m.Status(); st.Phase != Running {
		tb.Fatalf("tree not running: %+v", st)
	}
	return tr
}

// fromRelay carries out relay n's actions: upstream sends go to the
// coordinator, local sends are counted.
func (tr *tree) fromRelay(n int, rd Ready) {
	if len(rd.Closes) > 0 {
		tr.tb.Fatalf("relay %d closes %v", n, rd.Closes)
	}
	// Copy: the coordinator's answer reuses nothing of the relay's Ready,
	// but handing it on recursively must not see the slice change.
	sends := append([]Send(nil), rd.Sends...)
	for _, s := range sends {
		if s.Conn == Upstream {
			tr.fromCoord(tr.m.Receive(ConnID(n), s.Msg, 0))
		} else if _, ok := s.Msg.(*wire.Result); ok {
			tr.got++
		}
	}
}

func (tr *tree) fromCoord(rd Ready) {
	if len(rd.Closes) > 0 {
		tr.tb.Fatalf("coordinator closes %v", rd.Closes)
	}
	sends := append([]Send(nil), rd.Sends...)
	for _, s := range sends {
		tr.fromRelay(int(s.Conn), tr.relays[s.Conn].Receive(Upstream, s.Msg, 0))
	}
}

// barrier runs collective seq: every rank contributes to its relay.
func (tr *tree) barrier(seq uint64) {
	tr.got = 0
	per := tr.size / len(tr.relays)
	for n, r := range tr.relays {
		for i := range per {
			rank := n*per + i
			x := tr.msgs[rank]
			x.Seq = seq // barrier messages are not kept: reusing them is safe
			tr.fromRelay(n, r.Receive(ConnID(rank), x, 0))
		}
	}
	if tr.got != tr.size {
		tr.tb.Fatalf("barrier %d: %d of %d ranks got the result", seq, tr.got, tr.size)
	}
}

// A job of 16384 ranks on 64 nodes (002's scale) completes barriers
// through its relays.
func TestTree16K(t *testing.T) {
	tr := newTree(t, 16384, 64)
	for seq := uint64(1); seq <= 3; seq++ {
		tr.barrier(seq)
	}
}

// flat builds a coordinator whose conns connections hold size/conns ranks
// each (relays, seen from the coordinator), and the messages of one
// barrier round.
func flat(tb testing.TB, size, conns int) (*Machine, []*wire.Collective) {
	m, err := New(Config{Size: size, Token: "t"})
	if err != nil {
		tb.Fatal(err)
	}
	per := size / conns
	msgs := make([]*wire.Collective, conns)
	for c := range conns {
		ranks := make([]int32, per)
		msgs[c] = &wire.Collective{Kind: wire.Barrier, Contribs: make([]wire.Contrib, per)}
		for i := range ranks {
			ranks[i] = int32(c*per + i)
			msgs[c].Contribs[i].Rank = ranks[i]
		}
		m.Connect(ConnID(c), 0)
		m.Receive(ConnID(c), &wire.Hello{Token: "t", Ranks: ranks}, 0)
	}
	return m, msgs
}

func barrierRound(tb testing.TB, m *Machine, msgs []*wire.Collective, seq uint64) {
	var rd Ready
	for c, x := range msgs {
		x.Seq = seq // barrier messages are not kept: reusing them is safe
		rd = m.Receive(ConnID(c), x, 0)
	}
	if len(rd.Sends) != len(msgs) {
		tb.Fatalf("barrier %d: %d results for %d connections", seq, len(rd.Sends), len(msgs))
	}
}

// The coordinator's work per event grows with the event's message and the
// connections, not with the job: completing a barrier and ticking allocate
// the same for 16384 ranks on 64 connections as for 64 ranks on 64 (one
// Result for the barrier; nothing for a tick).
func TestWorkIsPerConnection(t *testing.T) {
	allocs := func(size int) (barrier, tick float64) {
		m, msgs := flat(t, size, 64)
		seq := uint64(0)
		barrier = testing.AllocsPerRun(20, func() {
			seq++
			barrierRound(t, m, msgs, seq)
		})
		tick = testing.AllocsPerRun(20, func() { m.Tick(0) })
		return barrier, tick
	}
	smallB, smallT := allocs(64)
	bigB, bigT := allocs(16384)
	if bigB != smallB || bigT != smallT || bigT != 0 {
		t.Fatalf("allocations per barrier %v (64 ranks) vs %v (16384 ranks), per tick %v vs %v",
			smallB, bigB, smallT, bigT)
	}
}

// BenchmarkTreeBarrier16K: one barrier of 16384 ranks through 64 relays,
// every local contribution and local result included.
func BenchmarkTreeBarrier16K(b *testing.B) {
	tr := newTree(b, 16384, 64)
	b.ReportAllocs()
	seq := uint64(0)
	for b.Loop() {
		seq++
		tr.barrier(seq)
	}
}

// BenchmarkMachineBarrier: the coordinator's share of a barrier, for 64
// relays of the given size and for one connection per rank.
func BenchmarkMachineBarrier(b *testing.B) {
	for _, bc := range []struct{ size, conns int }{{16384, 64}, {16384, 16384}, {64, 64}} {
		b.Run(fmt.Sprintf("ranks=%d/conns=%d", bc.size, bc.conns), func(b *testing.B) {
			m, msgs := flat(b, bc.size, bc.conns)
			b.ReportAllocs()
			seq := uint64(0)
			for b.Loop() {
				seq++
				barrierRound(b, m, msgs, seq)
			}
		})
	}
}

// BenchmarkMachineAllGather16K: an all-gather of 64-byte contributions of
// 16384 ranks over 64 connections; its Result is 1 MiB.
func BenchmarkMachineAllGather16K(b *testing.B) {
	const size, conns = 16384, 64
	m, msgs := flat(b, size, conns)
	data := make([]byte, 64)
	for _, x := range msgs {
		x.Kind = wire.AllGather
		for i := range x.Contribs {
			x.Contribs[i].Data = data
		}
	}
	b.SetBytes(size * 64)
	b.ReportAllocs()
	seq := uint64(0)
	for b.Loop() {
		seq++
		barrierRound(b, m, msgs, seq)
	}
}

// Forgetting a connection costs O(1), not a shift of every later one: a
// job of one connection per rank whose ranks leave and disconnect one
// after the other (in any order) does work linear in the ranks, counted
// as the slots compaction copies, at most one per connection forgotten.
// Before issue 17 each disconnect shifted the connections after it, so
// the job's end took O(ranks²): hours at 1M ranks.
func TestForgetIsConstantWork(t *testing.T) {
	for _, order := range []string{"connect", "reverse", "interleaved"} {
		for _, size := range []int{1000, 100000} {
			m, _ := flat(t, size, size)
			ids := make([]int, size)
			for i := range ids {
				ids[i] = i
			}
			switch order {
			case "reverse":
				slices.Reverse(ids)
			case "interleaved": // evens first, then odds: holes everywhere
				slices.SortStableFunc(ids, func(a, b int) int { return a%2 - b%2 })
			}
			for k, c := range ids {
				m.Receive(ConnID(c), &wire.Leave{Ranks: []int32{int32(c)}}, 0)
				m.Disconnect(ConnID(c), nil, 0)
				if got, want := m.Status().Conns, size-k-1; got != want {
					t.Fatalf("%s order, %d ranks: %d live connections after %d disconnects, want %d", order, size, got, k+1, want)
				}
			}
			if st := m.Status(); st.Phase != Finished {
				t.Fatalf("%s order, %d ranks: %+v, want finished", order, size, st)
			}
			if m.compacted > size {
				t.Errorf("%s order, %d ranks: compaction copied %d slots for %d disconnects, want at most one each",
					order, size, m.compacted, size)
			}
		}
	}
}

// Holes left by forgotten connections change nothing of the order in
// which the others are served: a broadcast still goes in connect order,
// before and after the compaction.
func TestConnOrderWithHoles(t *testing.T) {
	const size = 8
	m, err := New(Config{Size: size, Token: "t"})
	if err != nil {
		t.Fatal(err)
	}
	// Connections 100..115 connect; the odd ones drop before saying
	// Hello, leaving 8 holes beside 8 live ones, which the next event
	// compacts away; then 4 more connect (200..203).
	for c := range ConnID(16) {
		m.Connect(100+c, 0)
	}
	for c := ConnID(1); c < 16; c += 2 {
		m.Disconnect(100+c, nil, 0)
	}
	var want []ConnID
	rank := int32(0)
	hello := func(c ConnID) Ready {
		rd := m.Receive(c, &wire.Hello{Token: "t", Ranks: []int32{rank}}, 0)
		rank++
		return rd
	}
	for c := ConnID(0); c < 8; c += 2 {
		want = append(want, 100+c)
		hello(100 + c)
	}
	if m.compacted == 0 {
		t.Fatal("no compaction with as many holes as live connections")
	}
	for c := range ConnID(4) {
		m.Connect(200+c, 0)
		want = append(want, 200+c)
	}
	var rd Ready
	for _, c := range want[4:] {
		rd = hello(c)
	}
	var got []ConnID
	for _, s := range rd.Sends {
		got = append(got, s.Conn)
	}
	if !slices.Equal(got, want) || m.Status().Conns != 12 {
		t.Fatalf("Welcome went to %v (%d live), want %v in connect order", got, m.Status().Conns, want)
	}
}
