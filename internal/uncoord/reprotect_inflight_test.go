package uncoord

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/ckpt/ckpt/internal/msglog"
	"github.com/ckpt/ckpt/internal/msglog/logstore"
)

// gatedLog is a log whose first Append says it started (entered) and
// waits for release: a batch in flight to the protector.
type gatedLog struct {
	logstore.Store
	once             sync.Once
	entered, release chan struct{}
}

func (g *gatedLog) Append(recs []msglog.Record) error {
	g.once.Do(func() {
		close(g.entered)
		<-g.release
	})
	return g.Store.Append(recs)
}

// indexes are the indexes of the records of log after its base.
func indexes(t *testing.T, log logstore.Store) (base uint64, idx []uint64) {
	t.Helper()
	base, _, err := log.Bounds()
	if err != nil {
		t.Fatal(err)
	}
	if err := log.ReadAfter(base, func(r msglog.Record) error { idx = append(idx, r.Index); return nil }); err != nil {
		t.Fatal(err)
	}
	return base, idx
}

// A record on its way to the old log when the rank re-protects ends in
// the new log exactly once (Reprotect carries the persister's batch
// over, or the record was delivered before the snapshot, which then
// holds it), is delivered once, and the records after go to the new log
// only. Whether Reprotect or the old log's Append finishes first is up
// to the scheduler: both orders must hold.
func TestReprotectCarriesRecordsInFlight(t *testing.T) {
	ctx := testCtx(t)
	old := &gatedLog{Store: logstore.NewMem(), entered: make(chan struct{}), release: make(chan struct{})}
	d0, d1 := startPair(t, ctx, old)
	if err := d1.Send(ctx, 0, []byte("one")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-old.entered:
	case <-ctx.Done():
		t.Fatal("the first record never reached the log")
	}
	var (
		newLog *logstore.Mem
		snap   Snapshot
	)
	done := make(chan error, 1)
	go func() {
		done <- d0.Reprotect(func(base uint64) (logstore.Store, error) {
			newLog = logstore.NewMemAt(base)
			return newLog, nil
		}, func(s Snapshot) error { snap = s; return nil })
	}()
	close(old.release)
	if err := <-done; err != nil {
		t.Fatalf("Reprotect: %v", err)
	}
	if err := d1.Send(ctx, 0, []byte("two")); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"one", "two"} {
		got, err := d0.Recv(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Fatalf("received %q, want %q", got, want)
		}
	}
	if err := d0.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	base, idx := indexes(t, newLog)
	if base != snap.Point.Index {
		t.Errorf("the new log's base %d, want the snapshot's point %d", base, snap.Point.Index)
	}
	// Records 1 and 2 are behind the snapshot or in the new log, each
	// once.
	var all []uint64
	for i := uint64(1); i <= base; i++ {
		all = append(all, i)
	}
	all = append(all, idx...)
	if !slices.Equal(all, []uint64{1, 2}) {
		t.Errorf("behind the snapshot (point %d) and in the new log %v: want records 1 and 2 once each", base, idx)
	}
	if _, oldIdx := indexes(t, old.Store); len(oldIdx) > 1 {
		t.Errorf("the old log holds %v: a record after the re-protection went there", oldIdx)
	}
}

// A re-protection that cannot open its new log swaps nothing: the rank
// goes on logging to its log as before, and it can try again.
func TestReprotectFailureKeepsTheLog(t *testing.T) {
	ctx := testCtx(t)
	log0 := logstore.NewMem()
	d0, d1 := startPair(t, ctx, log0)
	refused := errors.New("no room at the new protector")
	err := d0.Reprotect(func(uint64) (logstore.Store, error) { return nil, refused },
		func(Snapshot) error { return nil })
	if !errors.Is(err, refused) {
		t.Fatalf("Reprotect: %v, want the open's error", err)
	}
	if err := d1.Send(ctx, 0, []byte("after")); err != nil {
		t.Fatal(err)
	}
	if got, err := d0.Recv(ctx, 1); err != nil || string(got) != "after" {
		t.Fatalf("Recv: %q, %v", got, err)
	}
	if _, idx := indexes(t, log0); len(idx) != 1 {
		t.Errorf("the kept log holds %v, want the one record received after the failed re-protection", idx)
	}
}

// startPair starts ranks 0 and 1 over a MemNet, rank 0 logging to log0;
// both are closed when the test ends.
func startPair(t *testing.T, ctx context.Context, log0 logstore.Store) (*Rank, *Rank) {
	t.Helper()
	net := NewMemNet()
	d0, err := Start(ctx, Config{Rank: 0, Size: 2, Net: net.Endpoint(0), Log: log0})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d0.Close() })
	d1, err := Start(ctx, Config{Rank: 1, Size: 2, Net: net.Endpoint(1), Log: logstore.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d1.Close() })
	return d0, d1
}
