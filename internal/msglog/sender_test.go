package msglog

import (
	"errors"
	"fmt"
	"testing"
)

func seqs(ms []Msg) string {
	s := ""
	for _, m := range ms {
		s += fmt.Sprintf("%d:%d ", m.From, m.Seq)
	}
	return s
}

// Each channel numbers its messages from 1; the sender keeps them until
// the receiver says they are durable, and a receiver that restarted gets
// again what its log did not keep.
func TestSenderNumbersAndKeeps(t *testing.T) {
	s := NewSender(SenderState{})
	for i, to := range []int{1, 2, 1, 1} {
		m, wire := s.Send(0, to, []byte{byte(i)})
		if !wire || m.From != 0 {
			t.Fatalf("Send %d: %+v, wire %v", i, m, wire)
		}
	}
	if got := seqs(s.Resend(1)); got != "0:1 0:2 0:3 " {
		t.Fatalf("unacked to 1: %s", got)
	}
	s.Ack(1, 2)
	s.Ack(1, 1) // an older ack changes nothing
	if got := seqs(s.Resend(1)); got != "0:3 " {
		t.Fatalf("unacked to 1 after ack 2: %s", got)
	}
	s.Ack(2, 1)
	if got := s.Resend(2); len(got) != 0 {
		t.Fatalf("unacked to 2 after ack 1: %s", seqs(got))
	}
	if m, _ := s.Send(0, 2, nil); m.Seq != 2 {
		t.Fatalf("next seq to 2 = %d, want 2", m.Seq)
	}
}

// A rank restarted from its checkpoint re-executes and sends again: the
// messages its receivers already have durable are not sent (Send says so),
// the others are, with the same sequence numbers; the messages unacked at
// the checkpoint are kept for a receiver that may still need them.
func TestSenderReexecutionSkips(t *testing.T) {
	s := NewSender(SenderState{})
	s.Send(0, 1, []byte("a"))
	st := s.State()
	s.Send(0, 1, []byte("b"))
	s.Send(0, 1, []byte("c"))
	// The rank fails; its receiver has 1 and 2 durable.
	r := NewSender(st)
	if got := seqs(r.Resend(1)); got != "0:1 " {
		t.Fatalf("unacked from the checkpoint: %s", got)
	}
	r.Ack(1, 2)
	var sent []uint64
	for _, d := range []string{"b", "c", "d"} {
		m, wire := r.Send(0, 1, []byte(d))
		if wire {
			sent = append(sent, m.Seq)
		}
	}
	if fmt.Sprint(sent) != "[3 4]" || r.Skipped() != 1 {
		t.Fatalf("sent %v, skipped %d; want [3 4], 1", sent, r.Skipped())
	}
	// The checkpoint's state is a copy: the first sender's later sends
	// did not change it.
	if st.Next[1] != 1 || len(st.Unacked[1]) != 1 {
		t.Fatalf("State shares with the sender: %+v", st)
	}
}

// A receiver that comes back gets what its log did not keep; one that
// comes back without what it acknowledged is an error, not a silent gap.
func TestSenderRecovered(t *testing.T) {
	s := NewSender(SenderState{})
	for range 4 {
		s.Send(0, 1, nil)
	}
	s.Ack(1, 2)
	ms, err := s.Recovered(1, 3)
	if err != nil || seqs(ms) != "0:4 " {
		t.Fatalf("Recovered(1, 3) = %s, %v; want 0:4", seqs(ms), err)
	}
	if _, err := s.Recovered(1, 1); !errors.Is(err, ErrAckedLost) {
		t.Fatalf("Recovered below the acknowledged: %v, want ErrAckedLost", err)
	}
}
