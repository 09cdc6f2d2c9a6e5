package msglog

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func msg(from int, seq uint64) Msg {
	return Msg{From: from, Seq: seq, Data: fmt.Appendf(nil, "%d:%d", from, seq)}
}

// ids names records as from:seq@index, the form the tests compare.
func ids(recs []Record) string {
	var b strings.Builder
	for i, r := range recs {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%d:%d@%d", r.From, r.Seq, r.Index)
	}
	return b.String()
}

func wantIDs(t *testing.T, what string, got []Record, want string) {
	t.Helper()
	if g := ids(got); g != want {
		t.Fatalf("%s = [%s], want [%s]", what, g, want)
	}
}

// A message is logged first and delivered only once its record is
// durable; then its sender is acknowledged.
func TestLogBeforeDeliver(t *testing.T) {
	r := NewReceiver(Point{})
	rd := r.Receive(msg(1, 1), 0)
	wantIDs(t, "Persist", rd.Persist, "1:1@1")
	if len(rd.Deliver)+len(rd.Acks) != 0 {
		t.Fatalf("delivered or acknowledged before the record is durable: %+v", rd)
	}
	if err := rd.Persist[0].Verify(); err != nil {
		t.Fatalf("the receiver's own record fails its hash: %v", err)
	}
	rd = r.Receive(msg(2, 1), time.Second)
	wantIDs(t, "Persist", rd.Persist, "2:1@2")
	// Records become durable in order; a partial Persisted delivers
	// only those.
	rd = r.Persisted(1, 2*time.Second)
	wantIDs(t, "Deliver", rd.Deliver, "1:1@1")
	if fmt.Sprint(rd.Acks) != "[{1 1}]" {
		t.Fatalf("Acks = %v, want [{1 1}]", rd.Acks)
	}
	if rd := r.Persisted(1, 2*time.Second); !rd.Empty() {
		t.Fatalf("a repeated Persisted acted: %+v", rd)
	}
	rd = r.Persisted(2, 5*time.Second)
	wantIDs(t, "Deliver", rd.Deliver, "2:1@2")
	if p := r.Point(); p.Index != 2 || fmt.Sprint(p.Seqs) != "map[1:1 2:1]" {
		t.Fatalf("Point = %+v", p)
	}
	st := r.Stats()
	// Something waited for the protector from 0 to 5 s.
	if st.PersistWait != 5*time.Second || st.RecordsLogged != 2 || st.BytesLogged != 6 || st.Delivered != 2 {
		t.Fatalf("Stats = %+v", st)
	}
}

func TestPersistedBeyondLoggedPanics(t *testing.T) {
	r := NewReceiver(Point{})
	r.Receive(msg(1, 1), 0)
	defer func() {
		if recover() == nil {
			t.Fatal("Persisted beyond the last record did not panic")
		}
	}()
	r.Persisted(2, 0)
}

// A message its channel already has is dropped, whether logged and not
// yet durable, delivered, or waiting in the buffer.
func TestDuplicatesDropped(t *testing.T) {
	r := NewReceiver(Point{})
	r.Receive(msg(1, 1), 0)
	if rd := r.Receive(msg(1, 1), 0); !rd.Empty() {
		t.Fatalf("duplicate of a logged message acted: %+v", rd)
	}
	r.Persisted(1, 0)
	if rd := r.Receive(msg(1, 1), 0); !rd.Empty() {
		t.Fatalf("duplicate of a delivered message acted: %+v", rd)
	}
	r.Receive(msg(1, 3), 0)
	if rd := r.Receive(msg(1, 3), 0); !rd.Empty() {
		t.Fatalf("duplicate of a buffered message acted: %+v", rd)
	}
	rd := r.Receive(msg(1, 2), 0)
	wantIDs(t, "Persist", rd.Persist, "1:2@2 1:3@3")
	if st := r.Stats(); st.Duplicates != 3 {
		t.Fatalf("Duplicates = %d, want 3", st.Duplicates)
	}
}

// Messages overtaking each other on a channel are put back in order; a
// lost one leaves a gap that waits for its retransmission, while other
// channels go on.
func TestReorderAndGap(t *testing.T) {
	r := NewReceiver(Point{})
	for _, seq := range []uint64{3, 1, 5} {
		rd := r.Receive(msg(1, seq), 0)
		if seq == 1 {
			wantIDs(t, "Persist", rd.Persist, "1:1@1")
		} else if len(rd.Persist) != 0 {
			t.Fatalf("seq %d logged ahead of the gap: %s", seq, ids(rd.Persist))
		}
	}
	wantIDs(t, "Persist", r.Receive(msg(2, 1), 0).Persist, "2:1@2")
	// 2 was lost; its retransmission fills the gap up to the next one.
	wantIDs(t, "Persist", r.Receive(msg(1, 2), 0).Persist, "1:2@3 1:3@4")
	wantIDs(t, "Persist", r.Receive(msg(1, 4), 0).Persist, "1:4@5 1:5@6")
	wantIDs(t, "Deliver", r.Persisted(6, 0).Deliver, "1:1@1 2:1@2 1:2@3 1:3@4 1:4@5 1:5@6")
	if len(r.buffered) != 0 {
		t.Fatalf("buffer not empty: %v", r.buffered)
	}
}

func TestMsgSeqZeroPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("a message with sequence number 0 did not panic")
		}
	}()
	NewReceiver(Point{}).Receive(Msg{From: 1}, 0)
}

// logOf runs a receiver over arrivals, everything durable at once, and
// returns the records it logged.
func logOf(t *testing.T, arrivals []Msg) []Record {
	t.Helper()
	r := NewReceiver(Point{})
	var log []Record
	for _, m := range arrivals {
		rd := r.Receive(m, 0)
		log = append(log, rd.Persist...)
		if len(rd.Persist) > 0 {
			r.Persisted(rd.Persist[len(rd.Persist)-1].Index, 0)
		}
	}
	return log
}

// replay restarts a receiver from p and replays log's records after it.
func replay(t *testing.T, p Point, log []Record) (*Receiver, []Record, error) {
	t.Helper()
	r := NewReceiver(p)
	r.BeginReplay(0)
	var got []Record
	for _, rec := range log {
		if rec.Index <= p.Index {
			continue
		}
		rd, err := r.Replay(rec, 0)
		got = append(got, rd.Deliver...)
		if err != nil {
			return r, got, err
		}
	}
	rd, err := r.EndReplay(time.Second)
	got = append(got, rd.Deliver...)
	return r, got, err
}

// A replay from a checkpoint delivers the records after its point in
// their original order across channels (a receive from any source gets
// the same message), and tells every sender what the log holds.
func TestReplayReproducesOrder(t *testing.T) {
	log := logOf(t, []Msg{msg(2, 1), msg(1, 1), msg(3, 1), msg(1, 2), msg(2, 2), msg(1, 3)})
	p := Point{Index: 2, Seqs: map[int]uint64{1: 1, 2: 1}}
	r, got, err := replay(t, p, log)
	if err != nil {
		t.Fatal(err)
	}
	wantIDs(t, "replayed", got, "3:1@3 1:2@4 2:2@5 1:3@6")
	if p := r.Point(); p.Index != 6 || fmt.Sprint(p.Seqs) != "map[1:3 2:2 3:1]" {
		t.Fatalf("Point after replay = %+v", p)
	}
	if st := r.Stats(); st.Replayed != 4 || st.ReplayTime != time.Second {
		t.Fatalf("Stats = %+v", st)
	}
	// New messages continue the indexes.
	wantIDs(t, "Persist", r.Receive(msg(3, 2), 0).Persist, "3:2@7")
}

func TestReplayEndAcksEveryChannel(t *testing.T) {
	log := logOf(t, []Msg{msg(2, 1), msg(1, 1), msg(1, 2)})
	r := NewReceiver(Point{Index: 1, Seqs: map[int]uint64{2: 1}})
	r.BeginReplay(0)
	for _, rec := range log[1:] {
		if _, err := r.Replay(rec, 0); err != nil {
			t.Fatal(err)
		}
	}
	rd, err := r.EndReplay(0)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(rd.Acks) != "[{1 2} {2 1}]" {
		t.Fatalf("Acks = %v, want [{1 2} {2 1}]", rd.Acks)
	}
	if r.Durable(1) != 2 || r.Durable(2) != 1 || r.Durable(7) != 0 {
		t.Fatalf("Durable = %d %d %d", r.Durable(1), r.Durable(2), r.Durable(7))
	}
}

// A corrupt record fails the replay with an error naming it; nothing of it
// is delivered, and the receiver refuses to go on.
func TestReplayCorruptRecord(t *testing.T) {
	log := logOf(t, []Msg{msg(1, 1), msg(1, 2), msg(2, 1), msg(1, 3)})
	log[2].Data = []byte("2:X") // one byte changed on the protector's disk
	r, got, err := replay(t, Point{}, log)
	wantIDs(t, "delivered", got, "1:1@1 1:2@2")
	var re *ReplayError
	if !errors.As(err, &re) || !errors.Is(err, ErrCorrupt) || re.After != 2 || re.Index != 3 {
		t.Fatalf("err = %v, want a ReplayError after 2 wrapping ErrCorrupt", err)
	}
	if want := "msglog: replaying the log record after index 2 (it says index 3, rank 2 seq 1): record corrupt: hash mismatch"; !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("err = %q, want prefix %q", err, want)
	}
	if _, err := r.Replay(log[3], 0); !errors.Is(err, ErrFailed) || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Replay after the failure: %v", err)
	}
	if _, err := r.EndReplay(0); !errors.Is(err, ErrFailed) {
		t.Fatalf("EndReplay after the failure: %v", err)
	}
	if rd := r.Receive(msg(1, 3), 0); !rd.Empty() || r.Err() == nil {
		t.Fatalf("a failed receiver took a live message: %+v", rd)
	}
}

// Every field is covered by the hash: a change in any is caught.
func TestRecordHashCoversEveryField(t *testing.T) {
	good := logOf(t, []Msg{msg(1, 1)})[0]
	for name, bad := range map[string]func(*Record){
		"index": func(r *Record) { r.Index++ },
		"from":  func(r *Record) { r.From++ },
		"seq":   func(r *Record) { r.Seq++ },
		"data":  func(r *Record) { r.Data = append([]byte(nil), r.Data[:len(r.Data)-1]...) },
		"sum":   func(r *Record) { r.Sum ^= 1 },
	} {
		rec := good
		bad(&rec)
		if err := rec.Verify(); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s changed: Verify = %v", name, err)
		}
	}
}

// Intact records in the wrong order (a log that lost or repeated records)
// fail the replay too.
func TestReplayOutOfOrder(t *testing.T) {
	log := logOf(t, []Msg{msg(1, 1), msg(1, 2), msg(1, 3)})
	for name, tc := range map[string]struct {
		log  []Record
		want string
	}{
		"index skipped": {[]Record{log[0], log[2]}, "index 3, want 2"},
		"repeated":      {[]Record{log[0], log[0]}, "index 1, want 2"},
		"seq skipped": {[]Record{log[0], {Index: 2, From: 1, Seq: 3, Data: nil, Sum: Hash(2, 1, 3, nil)}},
			"rank 1 seq 3, want seq 2"},
	} {
		_, got, err := replay(t, Point{}, tc.log)
		if !errors.Is(err, ErrOutOfOrder) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want ErrOutOfOrder saying %q", name, err, tc.want)
		}
		if len(got) != 1 {
			t.Errorf("%s: delivered %s", name, ids(got))
		}
	}
}

// During replay the log decides: live messages it already holds are
// dropped, at once or when the replay reaches them; the rest wait for
// EndReplay, then follow in order, with their gaps and duplicates handled
// as always.
func TestLiveMessagesDuringReplay(t *testing.T) {
	log := logOf(t, []Msg{msg(1, 1), msg(2, 1), msg(1, 2), msg(2, 2)})
	r := NewReceiver(Point{})
	r.BeginReplay(0)
	var got []Record
	step := func(rd Ready) {
		if len(rd.Persist) > 0 {
			rd2 := r.Persisted(rd.Persist[len(rd.Persist)-1].Index, 0)
			got = append(got, rd2.Deliver...)
		}
		got = append(got, rd.Deliver...)
	}
	rp := func(i int) {
		rd, err := r.Replay(log[i], 0)
		if err != nil {
			t.Fatal(err)
		}
		step(rd)
	}
	rp(0)
	rp(1)
	for _, m := range []Msg{
		msg(1, 1), // replayed already: dropped at once
		msg(2, 2), // in the log, not replayed yet: buffered, then dropped
		msg(1, 4), // beyond the log, with a gap
		msg(2, 3), // beyond the log
		msg(2, 3), // a duplicate of a buffered one
	} {
		if rd := r.Receive(m, 0); !rd.Empty() {
			t.Fatalf("live %d:%d during replay acted: %+v", m.From, m.Seq, rd)
		}
	}
	rp(2)
	rp(3)
	rd, err := r.EndReplay(0)
	if err != nil {
		t.Fatal(err)
	}
	wantIDs(t, "logged at EndReplay", rd.Persist, "2:3@5")
	step(rd)
	step(r.Receive(msg(1, 3), 0)) // the retransmission that fills the gap
	wantIDs(t, "delivered", got, "1:1@1 2:1@2 1:2@3 2:2@4 2:3@5 1:3@6 1:4@7")
	if st := r.Stats(); st.Duplicates != 3 {
		t.Fatalf("Duplicates = %d, want 3", st.Duplicates)
	}
}

// A second failure in the middle of a replay: the replay starts again
// from the same checkpoint and gives the same order.
func TestSecondFailureDuringReplay(t *testing.T) {
	log := logOf(t, []Msg{msg(1, 1), msg(2, 1), msg(2, 2), msg(3, 1), msg(1, 2), msg(3, 2)})
	p := Point{Index: 1, Seqs: map[int]uint64{1: 1}}
	r := NewReceiver(p)
	r.BeginReplay(0)
	for _, rec := range log[1:3] {
		if _, err := r.Replay(rec, 0); err != nil {
			t.Fatal(err)
		}
	}
	// r is lost here.
	_, got, err := replay(t, p, log)
	if err != nil {
		t.Fatal(err)
	}
	wantIDs(t, "second replay", got, "2:1@2 2:2@3 3:1@4 1:2@5 3:2@6")
}

func TestBeginReplayAfterLoggingPanics(t *testing.T) {
	r := NewReceiver(Point{})
	r.Receive(msg(1, 1), 0)
	defer func() {
		if recover() == nil {
			t.Fatal("BeginReplay with a record pending did not panic")
		}
	}()
	r.BeginReplay(0)
}

// Once a checkpoint is protected the log is truncated to its point, once.
func TestProtectedTruncates(t *testing.T) {
	r := NewReceiver(Point{})
	for _, m := range []Msg{msg(1, 1), msg(1, 2), msg(2, 1)} {
		r.Receive(m, 0)
	}
	r.Persisted(2, 0)
	p := r.Point()
	r.Persisted(3, 0)
	if rd := r.Protected(p); rd.Truncate != 2 || len(rd.Persist)+len(rd.Deliver)+len(rd.Acks) != 0 {
		t.Fatalf("Protected = %+v, want Truncate 2", rd)
	}
	if rd := r.Protected(p); !rd.Empty() {
		t.Fatalf("Protected again = %+v", rd)
	}
	if st := r.Stats(); st.TruncatedTo != 2 {
		t.Fatalf("TruncatedTo = %d", st.TruncatedTo)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("Protected beyond the delivered point did not panic")
		}
	}()
	r.Protected(Point{Index: 4})
}

// The wait for the protector is counted once however many records wait
// together, and not while nothing waits.
func TestPersistWaitUnion(t *testing.T) {
	r := NewReceiver(Point{})
	r.Receive(msg(1, 1), 10*time.Millisecond)
	r.Receive(msg(1, 2), 15*time.Millisecond)
	r.Persisted(1, 20*time.Millisecond)
	r.Persisted(2, 30*time.Millisecond)
	r.Receive(msg(1, 3), 100*time.Millisecond)
	r.Persisted(3, 101*time.Millisecond)
	if got := r.Stats().PersistWait; got != 21*time.Millisecond {
		t.Fatalf("PersistWait = %v, want 21ms", got)
	}
}

func TestPointEncoding(t *testing.T) {
	for _, p := range []Point{{}, {Index: 7, Seqs: map[int]uint64{0: 3, 5: 4, 100000: 1 << 40}}} {
		got, err := DecodePoint(AppendPoint(nil, p))
		if err != nil || got.Index != p.Index || fmt.Sprint(got.Seqs) != fmt.Sprint(p.Seqs) {
			t.Fatalf("round trip of %+v = %+v, %v", p, got, err)
		}
	}
	good := AppendPoint(nil, Point{Index: 2, Seqs: map[int]uint64{1: 1, 2: 1}})
	for name, b := range map[string][]byte{
		"truncated":      good[:len(good)-1],
		"trailing":       append(append([]byte(nil), good...), 0),
		"unsorted":       {2, 2, 2, 1, 1, 1},
		"repeated rank":  {2, 2, 1, 1, 1, 1},
		"huge count":     {2, 0x80, 0x80, 0x04},
		"rank too large": {2, 1, 0x80, 0x80, 0x80, 0x80, 0x08, 1},
	} {
		if _, err := DecodePoint(b); err == nil {
			t.Errorf("%s: DecodePoint(%x) accepted it", name, b)
		}
	}
}

// A message too far ahead is dropped, not buffered: its sender sends it
// again, and then it is taken.
func TestWindowBoundsBuffer(t *testing.T) {
	r := NewReceiver(Point{}, WithWindow(3))
	for _, seq := range []uint64{3, 4, 2} {
		if rd := r.Receive(msg(1, seq), 0); !rd.Empty() {
			t.Fatalf("seq %d acted: %+v", seq, rd)
		}
	}
	if st := r.Stats(); st.BeyondWindow != 1 || len(r.buffered[1]) != 2 {
		t.Fatalf("BeyondWindow %d, buffered %v; want 1 and seqs 2, 3", st.BeyondWindow, r.buffered[1])
	}
	wantIDs(t, "Persist", r.Receive(msg(1, 1), 0).Persist, "1:1@1 1:2@2 1:3@3")
	wantIDs(t, "Persist", r.Receive(msg(1, 4), 0).Persist, "1:4@4")
}
