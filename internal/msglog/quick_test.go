package msglog_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ckpt/ckpt/internal/msglog"
	"github.com/ckpt/ckpt/internal/msglog/logstore"
)

// event is one step of a schedule: a message arriving, or (persist) the
// driver making every record it was given durable.
type event struct {
	persist bool
	m       msglog.Msg
}

// schedule makes a random arrival schedule over a few channels: every
// message arrives once or twice (a duplicate), in an order shuffled across
// and within channels (reordered messages, and gaps that a later copy
// fills as a retransmission would), with persists in between.
func schedule(rng *rand.Rand) (evs []event, total int) {
	var copies []msglog.Msg
	for from := 1; from <= 1+rng.IntN(4); from++ {
		n := 1 + rng.IntN(8)
		total += n
		for seq := uint64(1); seq <= uint64(n); seq++ {
			m := msglog.Msg{From: from, Seq: seq, Data: fmt.Appendf(nil, "m%d.%d", from, seq)}
			copies = append(copies, m)
			if rng.IntN(4) == 0 {
				copies = append(copies, m)
			}
		}
	}
	rng.Shuffle(len(copies), func(i, j int) { copies[i], copies[j] = copies[j], copies[i] })
	for _, m := range copies {
		evs = append(evs, event{m: m})
		if rng.IntN(3) == 0 {
			evs = append(evs, event{persist: true})
		}
	}
	return evs, total
}

// driver carries out a receiver's Ready over a store, as the runtime
// will: records are appended, and durable, only at a persist event.
type driver struct {
	t         *testing.T
	r         *msglog.Receiver
	store     logstore.Store
	pending   []msglog.Record
	delivered []msglog.Record
}

func (d *driver) ready(rd msglog.Ready) {
	d.pending = append(d.pending, rd.Persist...)
	d.delivered = append(d.delivered, rd.Deliver...)
	if rd.Truncate > 0 {
		if err := d.store.Truncate(rd.Truncate); err != nil {
			d.t.Fatal(err)
		}
	}
}

func (d *driver) step(e event) {
	if !e.persist {
		d.ready(d.r.Receive(e.m, 0))
		return
	}
	if len(d.pending) == 0 {
		return
	}
	if err := d.store.Append(d.pending); err != nil {
		d.t.Fatal(err)
	}
	last := d.pending[len(d.pending)-1].Index
	d.pending = nil
	d.ready(d.r.Persisted(last, 0))
}

func key(r msglog.Record) string { return fmt.Sprintf("%d:%d@%d:%s", r.From, r.Seq, r.Index, r.Data) }

func keys(recs []msglog.Record) []string {
	var s []string
	for _, r := range recs {
		s = append(s, key(r))
	}
	return s
}

// Random schedules, a crash at a random point after a checkpoint at a
// random point, sometimes a second crash during the replay, and live
// messages arriving while it runs: what the restarted application sees
// (the checkpoint's messages, the replay, then the rest as the senders
// send it again) holds every message once, in channel order, and the
// failure-free run's order wherever the log decided it — the whole
// sequence when nothing new arrived during the replay.
func TestCrashReplayMatchesFailureFree(t *testing.T) {
	for seed := range uint64(600) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { crashReplay(t, seed, memLog{}) })
	}
}

// The same over the protector's file, where the crash also tears the
// append it interrupts: the records in flight are written, and the file
// cut at a random byte among them.
func TestCrashReplayMatchesFailureFreeFile(t *testing.T) {
	for seed := range uint64(80) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			crashReplay(t, seed, &fileLog{path: filepath.Join(t.TempDir(), "log")})
		})
	}
}

// logKind makes the log of a crash test and crashes it.
type logKind interface {
	open(t *testing.T) logstore.Store
	// crash loses the log's driver with records in flight, and returns
	// the log as the restarted rank finds it.
	crash(t *testing.T, s logstore.Store, inFlight []msglog.Record, rng *rand.Rand) logstore.Store
}

type memLog struct{}

func (memLog) open(*testing.T) logstore.Store { return logstore.NewMem() }
func (memLog) crash(_ *testing.T, s logstore.Store, _ []msglog.Record, _ *rand.Rand) logstore.Store {
	return s
}

type fileLog struct{ path string }

func (f *fileLog) open(t *testing.T) logstore.Store {
	l, err := logstore.OpenFile(f.path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func (f *fileLog) crash(t *testing.T, s logstore.Store, inFlight []msglog.Record, rng *rand.Rand) logstore.Store {
	size := func() int64 {
		st, err := os.Stat(f.path)
		if err != nil {
			t.Fatal(err)
		}
		return st.Size()
	}
	before := size()
	if len(inFlight) > 0 {
		if err := s.Append(inFlight); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(f.path, before+rng.Int64N(size()-before)); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	return f.open(t)
}

func crashReplay(t *testing.T, seed uint64, kind logKind) {
	rng := rand.New(rand.NewPCG(seed, 16))
	evs, total := schedule(rng)
	evs = append(evs, event{persist: true})

	ref := &driver{t: t, r: msglog.NewReceiver(msglog.Point{}), store: logstore.NewMem()}
	for _, e := range evs {
		ref.step(e)
	}
	want := keys(ref.delivered)
	if len(want) != total {
		t.Fatalf("failure-free run delivered %d of %d messages", len(want), total)
	}

	// The run that fails: a checkpoint at event c (protected at once,
	// half the time), a crash after event k.
	k := rng.IntN(len(evs) + 1)
	c := rng.IntN(k + 1)
	store := kind.open(t)
	d := &driver{t: t, r: msglog.NewReceiver(msglog.Point{}), store: store}
	var cp msglog.Point
	var cpSeen []msglog.Record
	for i, e := range evs[:k] {
		if i == c {
			cp, cpSeen = d.r.Point(), slices.Clone(d.delivered)
			if rng.IntN(2) == 0 {
				d.ready(d.r.Protected(cp))
			}
		}
		d.step(e)
	}
	if c == k {
		cp, cpSeen = d.r.Point(), slices.Clone(d.delivered)
	}
	if !slices.Equal(keys(d.delivered), want[:len(d.delivered)]) {
		t.Fatalf("before the crash delivered %v, not a prefix of %v", keys(d.delivered), want)
	}
	if uint64(len(cpSeen)) != cp.Index {
		t.Fatalf("checkpoint at index %d has seen %d messages", cp.Index, len(cpSeen))
	}
	store = kind.crash(t, store, d.pending, rng)
	_, durable, _ := store.Bounds()

	// Recovery; the first attempt may fail again mid-replay.
	var replays [][]string
	var live []msglog.Msg
	var r *msglog.Receiver
	var replayed []msglog.Record
	for attempt := 0; ; attempt++ {
		r = msglog.NewReceiver(cp.Clone())
		r.BeginReplay(0)
		replayed = nil
		stopAt := -1
		if attempt == 0 && rng.IntN(3) == 0 {
			stopAt = rng.IntN(int(durable-cp.Index) + 1)
		}
		n := 0
		errStop := fmt.Errorf("crash during replay")
		err := store.ReadAfter(cp.Index, func(rec msglog.Record) error {
			if n == stopAt {
				return errStop
			}
			n++
			for rng.IntN(3) == 0 {
				m := evs[rng.IntN(len(evs))]
				if !m.persist {
					live = append(live, m.m)
					if rd := r.Receive(m.m, 0); !rd.Empty() {
						t.Fatalf("live message during replay acted: %+v", rd)
					}
				}
			}
			rd, err := r.Replay(rec, 0)
			replayed = append(replayed, rd.Deliver...)
			return err
		})
		replays = append(replays, keys(replayed))
		if err == errStop {
			live = nil
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		break
	}
	if len(replays) == 2 && !slices.Equal(replays[0], replays[1][:len(replays[0])]) {
		t.Fatalf("the second replay %v does not repeat the first %v", replays[1], replays[0])
	}
	rd, err := r.EndReplay(0)
	if err != nil {
		t.Fatal(err)
	}
	beyond := false
	for _, m := range live {
		beyond = beyond || m.Seq > r.Durable(m.From)
	}
	after := &driver{t: t, r: r, store: store}
	after.ready(rd)
	for _, e := range evs { // the senders send everything not acknowledged again
		after.step(e)
	}
	after.step(event{persist: true})

	got := keys(slices.Concat(cpSeen, replayed, after.delivered))
	if uint64(len(cpSeen)+len(replayed)) != durable {
		t.Fatalf("checkpoint %d + replay %d messages, the log held %d", len(cpSeen), len(replayed), durable)
	}
	if !slices.Equal(got[:durable], want[:durable]) {
		t.Fatalf("up to the log's end got %v, want %v", got[:durable], want[:durable])
	}
	if !beyond && !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	// Whatever arrived during the replay: every message once, in
	// channel order, indexes counting up.
	next := map[int]uint64{}
	all := slices.Concat(cpSeen, replayed, after.delivered)
	for i, rec := range all {
		if rec.Index != uint64(i+1) || rec.Seq != next[rec.From]+1 || string(rec.Data) != fmt.Sprintf("m%d.%d", rec.From, rec.Seq) {
			t.Fatalf("delivery %d is %s, after %v", i+1, key(rec), got[:i])
		}
		next[rec.From] = rec.Seq
	}
	if len(all) != total {
		t.Fatalf("delivered %d of %d messages", len(all), total)
	}
}
