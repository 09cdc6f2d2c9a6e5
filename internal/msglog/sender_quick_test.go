package msglog_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/ckpt/ckpt/internal/msglog"
)

// A sender that fails and re-executes from its checkpoint, over a network
// that drops, duplicates and reorders, with acknowledgements that come
// late or never: its receiver (which does not fail) delivers every message
// exactly once, in order, with the bytes of the failure-free run; the
// re-execution does not send what the receiver already has durable.
func TestSenderCrashReexecution(t *testing.T) {
	skipped := uint64(0)
	for seed := range uint64(400) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { skipped += senderCrash(t, seed) })
	}
	if skipped == 0 {
		t.Fatal("no re-execution skipped a message: the test does not reach the case")
	}
}

func senderCrash(t *testing.T, seed uint64) (skipped uint64) {
	const from, to = 0, 1
	rng := rand.New(rand.NewPCG(seed, 3))
	n := 1 + rng.IntN(12)
	payload := func(i int) []byte { return fmt.Appendf(nil, "step %d", i) }
	c := rng.IntN(n + 1)     // checkpoint after step c
	k := c + rng.IntN(n-c+1) // crash after step k

	recv := msglog.NewReceiver(msglog.Point{})
	var wire []msglog.Msg // in flight, any order
	var acks []msglog.Ack // in flight back
	var got []msglog.Record
	var pending uint64
	net := func() { // the network and the receiver's driver move a little
		for range rng.IntN(3) {
			if len(wire) == 0 {
				break
			}
			i := rng.IntN(len(wire))
			m := wire[i]
			switch rng.IntN(5) {
			case 0: // dropped
				wire = append(wire[:i], wire[i+1:]...)
				continue
			case 1: // delivered and duplicated
			default:
				wire = append(wire[:i], wire[i+1:]...)
			}
			rd := recv.Receive(m, 0)
			if len(rd.Persist) > 0 {
				pending = rd.Persist[len(rd.Persist)-1].Index
			}
		}
		if pending > 0 && rng.IntN(2) == 0 {
			rd := recv.Persisted(pending, 0)
			got = append(got, rd.Deliver...)
			if rng.IntN(3) > 0 { // an ack may be lost
				acks = append(acks, rd.Acks...)
			}
		}
	}
	send := func(s *msglog.Sender, i int) {
		if m, ok := s.Send(from, to, payload(i)); ok {
			wire = append(wire, m)
		}
	}
	ackAll := func(s *msglog.Sender) {
		for _, a := range acks {
			if a.To != from {
				t.Fatalf("ack for rank %d", a.To)
			}
			s.Ack(to, a.Seq) // from the receiving rank
		}
		acks = nil
	}

	s := msglog.NewSender(msglog.SenderState{})
	var cp msglog.SenderState
	for i := 1; i <= k; i++ {
		if i-1 == c {
			cp = s.State()
		}
		send(s, i)
		net()
		ackAll(s)
	}
	if k == c {
		cp = s.State()
	}
	// The sender fails; its acks in flight are lost with it. It restarts
	// from its checkpoint, learns what the receiver holds, sends again
	// what it kept, and re-executes.
	acks = nil
	s = msglog.NewSender(cp)
	s.Ack(to, recv.Durable(from))
	wire = append(wire, s.Resend(to)...)
	for i := c + 1; i <= n; i++ {
		send(s, i)
		net()
		ackAll(s)
	}
	// Retransmissions on a timeout until everything is delivered.
	for round := 0; len(got) < n; round++ {
		if round > 10000 {
			t.Fatalf("delivered %d of %d after %d rounds", len(got), n, round)
		}
		if rng.IntN(4) == 0 {
			wire = append(wire, s.Resend(to)...)
		}
		net()
		ackAll(s)
	}
	for i, rec := range got {
		if rec.From != from || rec.Seq != uint64(i+1) || string(rec.Data) != string(payload(i+1)) {
			t.Fatalf("delivery %d: %d:%d %q", i+1, rec.From, rec.Seq, rec.Data)
		}
	}
	if len(got) != n {
		t.Fatalf("delivered %d, want %d", len(got), n)
	}
	return s.Skipped()
}
