package coord

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/wire"
)

// TestAloneRandomized drives a Config.Uncoordinated coordinator through
// seeded sequences of rank losses (end of stream, error, Fail, silence),
// Hellos of the lost ranks' next processes (also before the old
// connection's end, which they replace), Hellos for ranks that no
// connection holds alone, key–value traffic and Leaves, with no
// collective. Checked after every event: the job never aborts; every rank
// is either held or vacant (Joined + Recovering = Size); the notices say
// exactly who was lost and who rejoined; a Hello for a held rank and
// another is refused. At the end the vacant ranks rejoin, every rank
// leaves, and the job finishes.
func TestAloneRandomized(t *testing.T) {
	lost, rejoined := 0, 0
	for seed := range uint64(200) {
		l, r := aloneSim(t, seed)
		lost, rejoined = lost+l, rejoined+r
	}
	// Guard the test itself: it must lose and rejoin ranks.
	if lost < 200 || rejoined < 200 {
		t.Fatalf("%d losses, %d rejoins over 200 jobs: the simulation no longer exercises recovery", lost, rejoined)
	}
	t.Logf("%d losses, %d rejoins in the job", lost, rejoined)
}

// aloneSim runs one seeded job and returns how many ranks were lost and how
// many rejoined while it ran.
func aloneSim(t *testing.T, seed uint64) (lost, rejoined int) {
	rng := rand.New(rand.NewPCG(seed, 7))
	size := 2 + rng.IntN(6)
	m, err := New(Config{Size: size, Token: "t", Incarnation: 1, Uncoordinated: true,
		HeartbeatTimeout: 10 * time.Second, JoinTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	var now time.Duration
	next := ConnID(0)
	holder := make([]ConnID, size) // 0: vacant
	left := make([]bool, size)
	fatalf := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d: "+format, append([]any{seed}, args...)...)
	}
	expect := func(rd Ready, kind NoticeKind, rank int32) {
		t.Helper()
		for _, n := range rd.Notices {
			if n.Kind == kind && slices.Equal(n.Ranks, []int32{rank}) {
				return
			}
		}
		fatalf("no %v notice for rank %d in %v", kind, rank, rd.Notices)
	}
	hello := func(r int32) Ready {
		next++
		m.Connect(next, now)
		rd := m.Receive(next, &wire.Hello{Token: "t", Incarnation: 1, Node: "n", Ranks: []int32{r}}, now)
		return rd
	}
	for r := range size {
		hello(int32(r))
		holder[r] = next
	}
	if m.Status().Phase != Running {
		fatalf("not running after every rank joined: %v", m.Status())
	}
	for range 60 {
		r := int32(rng.IntN(size))
		switch op := rng.IntN(6); {
		case left[r]:
		case holder[r] == 0:
			rd := hello(r)
			expect(rd, NoticeRejoined, r)
			holder[r] = next
			rejoined++
		case op == 0:
			expect(m.Disconnect(holder[r], nil, now), NoticeLost, r)
			holder[r] = 0
			lost++
		case op == 1:
			expect(m.Receive(holder[r], &wire.Fail{Reason: "crashed"}, now), NoticeLost, r)
			holder[r] = 0
			lost++
		case op == 2:
			// Silence: every other held rank speaks, r does not.
			now += 6 * time.Second
			m.Tick(now)
			for q, c := range holder {
				if c != 0 && int32(q) != r {
					m.Receive(c, &wire.Heartbeat{}, now)
				}
			}
			now += 6 * time.Second
			expect(m.Tick(now), NoticeLost, r)
			for q, c := range holder {
				if c != 0 && int32(q) != r {
					m.Receive(c, &wire.Heartbeat{}, now)
				}
			}
			holder[r] = 0
			lost++
		case op == 3 && rng.IntN(2) == 0:
			// The next process's Hello before the old connection's end
			// replaces it.
			rd := hello(r)
			expect(rd, NoticeLost, r)
			expect(rd, NoticeRejoined, r)
			holder[r] = next
			lost++
			rejoined++
		case op == 3:
			q := (r + 1) % int32(size)
			next++
			m.Connect(next, now)
			rd := m.Receive(next, &wire.Hello{Token: "t", Incarnation: 1, Node: "n", Ranks: []int32{r, q}}, now)
			if len(rd.Sends) != 1 || rd.Sends[0].Msg.Type() != wire.TypeRefused || len(rd.Notices) != 0 {
				fatalf("a Hello for ranks %d and %d, which no connection holds alone, was not refused: %v %v", r, q, rd.Sends, rd.Notices)
			}
		case op == 4:
			m.Receive(holder[r], &wire.Publish{Req: 1, Key: "addr", Value: []byte{byte(r)}}, now)
			m.Receive(holder[r], &wire.Lookup{Req: 2, Key: "addr"}, now)
		default:
			m.Receive(holder[r], &wire.Leave{Ranks: []int32{r}}, now)
			left[r] = true
		}
		st := m.Status()
		vacant := 0
		for _, c := range holder {
			if c == 0 {
				vacant++
			}
		}
		if st.Phase != Running && st.Phase != Finished || st.Joined+st.Recovering != size ||
			st.Recovering != vacant || len(m.Recovering()) != vacant || st.Rejoined != rejoined {
			fatalf("after %d losses and %d rejoins (%d vacant): %+v", lost, rejoined, vacant, st)
		}
	}
	for r := range size {
		if holder[r] == 0 {
			expect(hello(int32(r)), NoticeRejoined, int32(r))
			holder[r] = next
		}
	}
	for r := range size {
		if !left[r] {
			m.Receive(holder[r], &wire.Leave{Ranks: []int32{int32(r)}}, now)
		}
	}
	if st := m.Status(); st.Phase != Finished {
		fatalf("not finished after every rank left: %+v", st)
	}
	return lost, rejoined
}
