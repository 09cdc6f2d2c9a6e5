package uncoord

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"slices"
	"sync"
	"testing"

	"github.com/ckpt/ckpt/internal/msglog"
	"github.com/ckpt/ckpt/internal/msglog/logstore"
)

func TestSnapshotRoundTrip(t *testing.T) {
	s := Snapshot{
		Point: msglog.Point{Index: 7, Seqs: map[int]uint64{0: 3, 2: 4}},
		Sender: msglog.SenderState{Next: map[int]uint64{0: 5, 2: 2}, Acked: map[int]uint64{0: 4},
			Unacked: map[int][]msglog.Msg{0: {{From: 1, Seq: 5, Data: []byte("e")}}}},
		Pending: []Message{{From: 2, Data: []byte("p")}, {From: 0, Data: []byte("q")}, {From: 2, Data: []byte("r")}},
	}
	got, err := DecodeSnapshot(s.Bytes(), 1)
	if err != nil {
		t.Fatal(err)
	}
	want := s
	want.Sender.Acked = map[int]uint64{0: 4}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("decoded %+v, want %+v", got, want)
	}
	b := s.Bytes()
	for _, bad := range [][]byte{nil, []byte("ckU0"), b[:len(b)-1], append(bytes.Clone(b), 0)} {
		if _, err := DecodeSnapshot(bad, 1); err == nil {
			t.Errorf("DecodeSnapshot(%q) succeeded", bad)
		}
	}
}

func TestFrameRoundTripAndMalformed(t *testing.T) {
	for _, f := range []frame{{kind: kData, seq: 9, data: []byte("abc")}, {kind: kAck, seq: 3}, {kind: kHello, seq: 1}, {kind: kReply, seq: 2}, {kind: kRefuse}} {
		got, err := decodeFrame(f.append(nil))
		if err != nil || got.kind != f.kind || got.seq != f.seq || !bytes.Equal(got.data, f.data) {
			t.Errorf("frame %+v decoded as %+v, %v", f, got, err)
		}
	}
	for _, bad := range [][]byte{nil, {9}, {byte(kAck)}, {byte(kData), 1, 5, 'a'}, {byte(kRefuse), 0}} {
		if _, err := decodeFrame(bad); err == nil {
			t.Errorf("decodeFrame(%v) succeeded", bad)
		}
	}
}

func TestStartRefusesBadConfigAndSnapshot(t *testing.T) {
	ctx := testCtx(t)
	net := NewMemNet()
	for _, cfg := range []Config{
		{Rank: 0, Size: 0, Net: net.Endpoint(0), Log: logstore.NewMem()},
		{Rank: 2, Size: 2, Net: net.Endpoint(0), Log: logstore.NewMem()},
		{Rank: 0, Size: 2, Log: logstore.NewMem()},
		{Rank: 0, Size: 2, Net: net.Endpoint(0)},
	} {
		if r, err := Start(ctx, cfg); err == nil {
			r.Close()
			t.Errorf("Start(%+v) succeeded", cfg)
		}
	}
	_, err := Start(ctx, Config{Rank: 0, Size: 2, Net: net.Endpoint(0), Log: logstore.NewMem(), Restarted: true, Saved: []byte("junk")})
	if !errors.Is(err, ErrCannotServe) {
		t.Errorf("Start from a damaged snapshot: %v, want ErrCannotServe", err)
	}
}

func TestSendRecvCheckRanksAndContext(t *testing.T) {
	net := NewMemNet()
	r, err := Start(testCtx(t), Config{Rank: 0, Size: 2, Net: net.Endpoint(0), Log: logstore.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, to := range []int{-1, 0, 2} {
		if err := r.Send(testCtx(t), to, nil); err == nil {
			t.Errorf("Send to %d succeeded", to)
		}
		if _, err := r.Recv(testCtx(t), to); err == nil {
			t.Errorf("Recv from %d succeeded", to)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.Recv(ctx, 1); !errors.Is(err, context.Canceled) {
		t.Errorf("Recv with a done context: %v", err)
	}
}

// A message is delivered only once its record is durable: with a log whose
// appends fail, nothing is delivered and the rank stops.
func TestNothingDeliveredUnlessLogged(t *testing.T) {
	net := NewMemNet()
	ctx := testCtx(t)
	a, err := Start(ctx, Config{Rank: 0, Size: 2, Net: net.Endpoint(0), Log: logstore.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Start(ctx, Config{Rank: 1, Size: 2, Net: net.Endpoint(1), Log: failingLog{logstore.NewMem()}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := a.Send(ctx, 1, []byte("m")); err != nil {
		t.Fatal(err)
	}
	m, err := b.Recv(ctx, 0)
	if err == nil || m != nil || !errors.Is(err, errDiskFull) {
		t.Errorf("Recv with a log that cannot append: %q, %v; want errDiskFull", m, err)
	}
}

var errDiskFull = errors.New("disk full (injected)")

type failingLog struct{ *logstore.Mem }

func (failingLog) Append([]msglog.Record) error { return errDiskFull }

// Duplicated and stale data frames on the wire, before and during a
// recovery, change nothing.
func TestDuplicateAndStaleMessagesOnTheWire(t *testing.T) {
	const victim = 4
	j := newJob(t, crashOnce(victim, 25, nil))
	var dup int
	j.newNet = func(*testing.T) testNet {
		n := NewMemNet()
		last := map[[2]int][]byte{}
		// Every data frame goes twice, and the previous one on its
		// channel comes again after it.
		n.Filter = func(from, to int, msg []byte) [][]byte {
			if kind(msg[0]) != kData {
				return [][]byte{msg}
			}
			out := [][]byte{msg, msg}
			if prev := last[[2]int{from, to}]; prev != nil {
				out = append(out, prev)
			}
			last[[2]int{from, to}] = msg
			dup++
			return out
		}
		return memNet{n}
	}
	same(t, j.run(testCtx(t)), sequential())
	if j.whole != 0 || j.alone != 1 {
		t.Fatalf("%d whole-job restarts (%v), %d recovered alone; want 0 and 1", j.whole, j.cannot, j.alone)
	}
	var dups uint64
	for _, st := range j.stats {
		dups += st.Duplicates
	}
	if dups == 0 || dup == 0 {
		t.Errorf("no duplicates dropped (%d sent)", dup)
	}
}

// A receive from any rank takes the same message after a restart as
// before it: the replay gives the delivery order across channels, not
// only within each.
func TestRecvAnySameOrderAfterRestart(t *testing.T) {
	ctx := testCtx(t)
	net := NewMemNet()
	log := logstore.NewMem()
	start := func(r int, l logstore.Store, restarted bool, saved []byte) *Rank {
		d, err := Start(ctx, Config{Rank: r, Size: 3, Net: net.Endpoint(r), Log: l, Restarted: restarted, Saved: saved})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	s0, s1 := start(0, logstore.NewMem(), false, nil), start(1, logstore.NewMem(), false, nil)
	defer s0.Close()
	defer s1.Close()
	recv := start(2, log, false, nil)
	// Two senders race: the order in which rank 2 delivers their
	// messages is the network's.
	var wg sync.WaitGroup
	for i, s := range []*Rank{s0, s1} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range 20 {
				if err := s.Send(ctx, 2, []byte{byte(i), byte(k)}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	var before []Message
	for range 5 {
		m, err := recv.RecvAny(ctx)
		if err != nil {
			t.Fatal(err)
		}
		before = append(before, m)
	}
	snap := recv.Checkpoint() // after 5 messages: some may be pending in it
	if err := recv.Protected(snap); err != nil {
		t.Fatal(err)
	}
	for range 35 {
		m, err := recv.RecvAny(ctx)
		if err != nil {
			t.Fatal(err)
		}
		before = append(before, m)
	}
	net.Kill(2)
	recv.Close()

	again := start(2, log, true, snap.Bytes())
	defer again.Close()
	for i := 5; i < 40; i++ {
		m, err := again.RecvAny(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if m.From != before[i].From || !bytes.Equal(m.Data, before[i].Data) {
			t.Fatalf("receive %d after the restart: %v, before the failure %v", i, m, before[i])
		}
	}
	if st := again.Stats(); st.Replayed+uint64(len(snap.Pending)) != 35 {
		t.Errorf("replayed %d with %d pending in the checkpoint, want 35 together", st.Replayed, len(snap.Pending))
	}
}

// A hello said again while the last one still waits in the outbox (the
// peer unreachable, the writer retrying an earlier frame) is not queued
// twice: once the peer is back, each would be answered with everything it
// holds unacknowledged. Once the writer has taken it, the next is queued.
func TestHelloNotQueuedTwiceWhileOneWaits(t *testing.T) {
	o := &outbox{wake: make(chan struct{}, 1)}
	hellos := func(fs []frame) (seqs []uint64) {
		for _, f := range fs {
			if f.kind == kHello {
				seqs = append(seqs, f.seq)
			}
		}
		return seqs
	}
	o.pushHello(3)
	o.push(frame{kind: kReply, seq: 1})
	o.pushHello(5) // the writer has not taken the first: nothing more
	o.setAck(2)
	fs, ok := o.take()
	if got := hellos(fs); !ok || !slices.Equal(got, []uint64{3}) || fs[len(fs)-1].kind != kAck {
		t.Fatalf("first batch %+v: hellos %v, want [3], the ack last", fs, got)
	}
	o.pushHello(7) // the first one was taken (sent, perhaps lost): say it again
	o.pushHello(8)
	fs, _ = o.take()
	if got := hellos(fs); !slices.Equal(got, []uint64{7}) {
		t.Fatalf("second batch %+v: hellos %v, want [7]", fs, got)
	}
}
