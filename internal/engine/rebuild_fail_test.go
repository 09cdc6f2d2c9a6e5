package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ckpt/ckpt/internal/cachetier"
	"github.com/ckpt/ckpt/internal/localcomm"
	"github.com/ckpt/ckpt/internal/storage/mem"
	"github.com/ckpt/ckpt/storage"
)

// The failures of a pipelined rebuild (issue 17), made to happen: a job of
// 4 ranks, XOR over the 4, loses node n1; rank 1 restarts on a spare whose
// part of checkpoint c2 must be rebuilt while its survivors' reads or the
// spare's writes fail. c1 is the older checkpoint, rebuilt when c2 cannot
// be. Each rank's file spans many blocks, so a failure lands mid-stripe.

const failFileSize = 50_000 // bytes per rank: 13 chunks of 4 KiB blocks per shard

func failData(r int, name string) []byte {
	b := make([]byte, failFileSize+r*777) // sizes differ: padding is exercised too
	for i := range b {
		b[i] = byte(i*7 + r*13 + len(name))
	}
	copy(b, fmt.Sprintf("rank %d of %s", r, name))
	return b
}

// commitBig commits checkpoint name on every rank with failData.
func commitBig(t *testing.T, nodes []string, caches map[string]storage.Backend, name string) {
	t.Helper()
	onRanks(t, nodes, caches, "xor:4", func(e *Engine) error {
		c, err := e.Start(name)
		if err != nil {
			return err
		}
		f, err := c.Create("data")
		if err != nil {
			return err
		}
		if _, err := f.Write(failData(e.Rank, name)); err != nil {
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		return c.Commit(context.Background())
	})
}

// restartAll runs Restart on every rank with ctx and returns what each got.
func restartAll(ctx context.Context, nodes []string, caches map[string]storage.Backend) ([]*Restored, []error) {
	comms := localcomm.Job(len(nodes))
	res := make([]*Restored, len(nodes))
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for r, node := range nodes {
		e := New(Config{Rank: r, Size: len(nodes), Node: node, Cache: caches[node], Scheme: "xor:4",
			BlockSize: 4096, Comm: comms[r]})
		wg.Go(func() { res[r], errs[r] = e.Restart(ctx) })
	}
	wg.Wait()
	return res, errs
}

// partObjects lists what cache holds of rank's part of checkpoint name.
func partObjects(t *testing.T, cache storage.Backend, name string, rank int) []string {
	t.Helper()
	var out []string
	prefix := fmt.Sprintf("%s/rank-%d", name, rank)
	err := cache.List(context.Background(), prefix, func(i storage.Info) error {
		if strings.HasPrefix(i.Name, prefix+"/") || i.Name == prefix+".parity" {
			out = append(out, i.Name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// rangeFault is a survivor's cache whose ranged reads of checkpoint
// name's objects (the rebuild's reads: a restart's verification reads each
// object whole) are damaged from byte from on: 100 bytes flipped (few
// enough that the rebuilt padding stays zero and only the hash can tell),
// or cut short.
type rangeFault struct {
	storage.Backend
	name     string
	from     int64
	truncate bool
	hits     atomic.Int64
}

func (b *rangeFault) Open(ctx context.Context, obj string, off, length int64) (io.ReadCloser, error) {
	rc, err := b.Backend.Open(ctx, obj, off, length)
	if err != nil || length < 0 || !strings.HasPrefix(obj, b.name+"/") || off+length <= b.from {
		return rc, err
	}
	data, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		return nil, err
	}
	b.hits.Add(1)
	cut := int(max(0, b.from-off))
	if b.truncate {
		data = data[:cut]
	} else {
		for i := cut; i < min(len(data), cut+100); i++ {
			data[i] ^= 0x5a
		}
	}
	return io.NopCloser(bytes.NewReader(data)), nil
}

// writeFault is the spare's cache: once it has taken limit bytes of
// checkpoint name's objects, every write fails, or onLimit runs and the
// writes go on.
type writeFault struct {
	storage.Backend
	name    string
	limit   int64
	onLimit func() // nil: fail the writes
	written atomic.Int64
	fired   atomic.Bool
}

var errDiskGone = errors.New("disk gone")

func (b *writeFault) Create(ctx context.Context, obj string) (storage.Writer, error) {
	w, err := b.Backend.Create(ctx, obj)
	if err != nil || !strings.HasPrefix(obj, b.name+"/") {
		return w, err
	}
	return &faultWriter{Writer: w, b: b}, nil
}

type faultWriter struct {
	storage.Writer
	b *writeFault
}

func (w *faultWriter) Write(p []byte) (int, error) {
	if w.b.written.Add(int64(len(p))) > w.b.limit {
		if w.b.onLimit == nil {
			return 0, errDiskGone
		}
		if w.b.fired.CompareAndSwap(false, true) {
			w.b.onLimit()
		}
	}
	return w.Writer.Write(p)
}

// setupLoss commits c1 and c2 on 4 nodes and replaces n1 by an empty
// spare; it returns the nodes the job restarts on and their caches.
func setupLoss(t *testing.T) ([]string, map[string]storage.Backend) {
	nodes := []string{"n0", "n1", "n2", "n3"}
	caches := map[string]storage.Backend{}
	for _, n := range nodes {
		caches[n] = mem.New()
	}
	commitBig(t, nodes, caches, "c1")
	commitBig(t, nodes, caches, "c2")
	delete(caches, "n1")
	caches["spare"] = mem.New()
	return []string{"n0", "spare", "n2", "n3"}, caches
}

// checkFellBack checks that every rank restarted from c1, rebuilt, with
// c2 skipped for a reason containing why (the reason quotes the first
// rank's error, often only that its peer failed), that the spare holds nothing of
// c2's part, and that rank 1 reads its c1 data back exactly.
func checkFellBack(t *testing.T, res []*Restored, errs []error, caches map[string]storage.Backend, why string) {
	t.Helper()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
		if res[r].Name() != "c1" || res[r].Source != SourceRebuild || len(res[r].Skipped) != 1 ||
			res[r].Skipped[0].Name != "c2" || !strings.Contains(res[r].Skipped[0].Reason, why) {
			t.Fatalf("rank %d restored %s from %s, skipped %+v; want c1 rebuilt and c2 skipped for %q",
				r, res[r].Name(), res[r].Source, res[r].Skipped, why)
		}
	}
	if left := partObjects(t, caches["spare"], "c2", 1); len(left) != 0 {
		t.Errorf("the failed rebuild of c2 left %v in the spare's cache", left)
	}
	rc, err := res[1].Open("data")
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || !bytes.Equal(got, failData(1, "c1")) {
		t.Errorf("rank 1 reads %d bytes of c1, %v; want its data", len(got), err)
	}
}

// A survivor whose data turns bad after the restart verified it (bytes
// flipped from mid-stripe on, as the rebuild reads them) makes the
// spare's rebuilt file fail its hash on the way out: it is not committed,
// the rebuild of c2 fails, and the job restarts from c1.
func TestRebuildCorruptSurvivorMidStripe(t *testing.T) {
	nodes, caches := setupLoss(t)
	bad := &rangeFault{Backend: caches["n2"], name: "c2", from: 9000}
	caches["n2"] = bad
	res, errs := restartAll(context.Background(), nodes, caches)
	if bad.hits.Load() == 0 {
		t.Fatal("the rebuild never read the damaged range: the test proves nothing")
	}
	checkFellBack(t, res, errs, caches, "rebuild of rank 1 failed")
}

// A survivor whose file is cut short under the rebuild fails it; nothing
// of c2's part stays on the spare.
func TestRebuildTruncatedSurvivor(t *testing.T) {
	nodes, caches := setupLoss(t)
	bad := &rangeFault{Backend: caches["n3"], name: "c2", from: 9000, truncate: true}
	caches["n3"] = bad
	res, errs := restartAll(context.Background(), nodes, caches)
	if bad.hits.Load() == 0 {
		t.Fatal("the rebuild never read the damaged range: the test proves nothing")
	}
	checkFellBack(t, res, errs, caches, "rebuild of rank 1 failed")
}

// The spare's disk failing part way through the rebuild, after the data
// file was written and committed and while the parity is written, leaves
// nothing of c2's part: not even the good data file, since the part is
// incomplete.
func TestRebuildWriteError(t *testing.T) {
	nodes, caches := setupLoss(t)
	spare := &writeFault{Backend: caches["spare"], name: "c2", limit: failFileSize + 777 + 4096}
	caches["spare"] = spare
	res, errs := restartAll(context.Background(), nodes, caches)
	caches["spare"] = spare.Backend
	checkFellBack(t, res, errs, caches, errDiskGone.Error())
}

// Cancelling the restart mid-rebuild ends it on every rank with the
// cancellation, and leaves nothing of the part being rebuilt.
func TestRebuildCancelled(t *testing.T) {
	nodes, caches := setupLoss(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	spare := &writeFault{Backend: caches["spare"], name: "c2", limit: 20_000, onLimit: cancel}
	caches["spare"] = spare
	_, errs := restartAll(ctx, nodes, caches)
	if !spare.fired.Load() {
		t.Fatal("the rebuild never reached the cancellation: the test proves nothing")
	}
	for r, err := range errs {
		// Some ranks learn it from the group, whose error quotes it.
		if err == nil || !errors.Is(err, context.Canceled) && !strings.Contains(err.Error(), context.Canceled.Error()) {
			t.Errorf("rank %d: %v, want the cancellation", r, err)
		}
	}
	for _, name := range []string{"c1", "c2"} {
		if left := partObjects(t, spare.Backend, name, 1); len(left) != 0 {
			t.Errorf("the cancelled rebuild left %v in the spare's cache", left)
		}
	}
	if _, err := cachetier.Load(context.Background(), spare.Backend, "c2"); err == nil {
		t.Error("the spare holds c2's manifest after a cancelled rebuild")
	}
}
