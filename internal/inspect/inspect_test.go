package inspect

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/ckpt/ckpt/internal/cachetier"
	"github.com/ckpt/ckpt/internal/engine"
	"github.com/ckpt/ckpt/internal/localcomm"
	"github.com/ckpt/ckpt/internal/storage/mem"
	"github.com/ckpt/ckpt/storage"
)

// commit writes checkpoint name on 4 ranks, one per node, with xor:4.
func commit(t *testing.T, caches map[string]storage.Backend, shared storage.Backend, name string, flush bool) {
	t.Helper()
	comms := localcomm.Job(4)
	errs := make([]error, 4)
	var wg sync.WaitGroup
	for r := range 4 {
		node := fmt.Sprintf("n%d", r)
		e := engine.New(engine.Config{Rank: r, Size: 4, Node: node, Cache: caches[node], Shared: shared,
			Scheme: "xor:4", Comm: comms[r]})
		wg.Go(func() {
			c, err := e.Start(name)
			var f *engine.File
			if err == nil {
				f, err = c.Create("data")
			}
			if err == nil {
				_, err = fmt.Fprintf(f, "rank %d of %s", r, name)
			}
			if err == nil {
				err = f.Close()
			}
			if err == nil {
				err = c.Commit(context.Background())
			}
			if err == nil && flush {
				err = e.Flush(context.Background(), name)
			}
			errs[r] = err
		})
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
}

// Verification says how a restart would recover each checkpoint: from
// the caches as they are, by rebuilding a lost member, or from the shared
// tier when a set lost more than its parity rebuilds.
func TestListAndVerify(t *testing.T) {
	ctx := context.Background()
	caches := map[string]storage.Backend{}
	for r := range 4 {
		caches[fmt.Sprintf("n%d", r)] = mem.New()
	}
	shared := mem.New()
	commit(t, caches, shared, "c1", true)
	commit(t, caches, shared, "c2", false)
	tiers := Tiers{Caches: caches, Shared: shared}

	list, err := ListCheckpoints(ctx, tiers)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].Name != "c2" || list[1].Name != "c1" || !list[1].InShared || list[0].InShared ||
		len(list[0].InCache) != 4 || list[0].Ranks != 4 || list[0].Scheme != "xor:4" || list[0].Bytes != int64(4*len("rank 0 of c2")) {
		t.Fatalf("ListCheckpoints = %+v", list)
	}
	how := func(l Listing) string {
		v := VerifyCheckpoint(ctx, tiers, l)
		return fmt.Sprintf("%v %s", v.Recoverable, v.How)
	}
	if got := how(list[0]); got != "true cache" {
		t.Errorf("intact c2: %s", got)
	}
	cachetier.RemovePart(ctx, caches["n1"], "c2", 1)
	if got := how(list[0]); got != "true rebuild" {
		t.Errorf("c2 without rank 1: %s", got)
	}
	cachetier.RemovePart(ctx, caches["n2"], "c2", 2)
	if got := how(list[0]); got != "false " {
		t.Errorf("c2 without ranks 1 and 2: %s", got)
	}
	cachetier.RemovePart(ctx, caches["n1"], "c1", 1)
	cachetier.RemovePart(ctx, caches["n2"], "c1", 2)
	if got := how(list[1]); got != "true shared" {
		t.Errorf("c1 without ranks 1 and 2, flushed: %s", got)
	}
}
