package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ckpt/ckpt/internal/cachetier"
	"github.com/ckpt/ckpt/internal/localcomm"
	"github.com/ckpt/ckpt/internal/manifest"
	"github.com/ckpt/ckpt/internal/recovery"
	"github.com/ckpt/ckpt/internal/storage/mem"
	"github.com/ckpt/ckpt/storage"
)

// onRanks runs fn on one engine per rank of a job whose rank r runs on
// nodes[r] with that node's cache, concurrently, and fails the test with
// the first error.
func onRanks(t *testing.T, nodes []string, caches map[string]storage.Backend, scheme string, fn func(e *Engine) error) []*Engine {
	t.Helper()
	comms := localcomm.Job(len(nodes))
	engines := make([]*Engine, len(nodes))
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for r, node := range nodes {
		engines[r] = New(Config{Rank: r, Size: len(nodes), Node: node, Cache: caches[node], Scheme: scheme,
			BlockSize: 4096, Comm: comms[r]})
		wg.Go(func() { errs[r] = fn(engines[r]) })
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	return engines
}

func rankData(r int, name string) string {
	return fmt.Sprintf("rank %d of %s, %*d", r, name, 1000*(r+1), r)
}

// commitAll commits checkpoint name with one file per rank.
func commitAll(t *testing.T, nodes []string, caches map[string]storage.Backend, name string) {
	t.Helper()
	onRanks(t, nodes, caches, "xor:2", func(e *Engine) error {
		c, err := e.Start(name)
		if err != nil {
			return err
		}
		f, err := c.Create("data")
		if err != nil {
			return err
		}
		if _, err := io.WriteString(f, rankData(e.Rank, name)); err != nil {
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		return c.Commit(context.Background())
	})
}

// A real restart after a node was lost and parity files were corrupted
// does what the planner decides from the same facts: the newer checkpoint,
// whose lost node and corrupt parity fall in one set, is skipped with the
// planner's reason; the older one is rebuilt in two sets at once (the lost
// node's rank, and a rank whose parity alone was bad: recovery's rule 5);
// the manifest is written into the new node's cache; every rebuilt byte,
// parity included, verifies.
func TestRestartAppliesPlan(t *testing.T) {
	ctx := context.Background()
	nodes := []string{"n0", "n1", "n2", "n3"}
	caches := map[string]storage.Backend{}
	for _, n := range nodes {
		caches[n] = mem.New()
	}
	commitAll(t, nodes, caches, "c1")
	commitAll(t, nodes, caches, "c2")
	m1, err := cachetier.Load(ctx, caches["n0"], "c1")
	if err != nil {
		t.Fatal(err)
	}
	m2, err := cachetier.Load(ctx, caches["n0"], "c2")
	if err != nil {
		t.Fatal(err)
	}
	if len(m1.Sets) != 2 || m1.M != 1 {
		t.Fatalf("c1's sets %v, M %d; want two sets of xor:2", m1.Sets, m1.M)
	}
	// Node n1 is lost: rank 1 restarts on a spare with an empty cache.
	// In c2 the parity of rank 1's partner is corrupt (its set lost two);
	// in c1 that of a rank of the other set (each set lost one).
	set1 := m1.Sets[m1.Parts[1].Set]
	partner := set1[0]
	if partner == 1 {
		partner = set1[1]
	}
	other := m1.Sets[1-m1.Parts[1].Set][0]
	corrupt := func(name string, r int) {
		t.Helper()
		b := caches[nodes[r]]
		obj := cachetier.ParityObject(name, r)
		data, err := storage.Load(ctx, b, obj)
		if err != nil || len(data) == 0 {
			t.Fatalf("parity of rank %d of %s: %d bytes, %v", r, name, len(data), err)
		}
		data[len(data)/2] ^= 1
		if _, err := storage.Save(ctx, b, obj, bytes.NewReader(data)); err != nil {
			t.Fatal(err)
		}
	}
	corrupt("c2", partner)
	corrupt("c1", other)
	delete(caches, "n1")
	caches["spare"] = mem.New()
	now := []string{"n0", "spare", "n2", "n3"}

	// The plan from the same facts, gathered by hand.
	in := recovery.Input{Ranks: 4, Nodes: now}
	ok := recovery.Held{Data: recovery.Intact, Parity: recovery.Intact}
	for _, c := range []struct {
		m   *manifest.Manifest
		bad int
	}{{m1, other}, {m2, partner}} {
		cp := recovery.FromManifest(c.m)
		cp.Manifests = map[string]recovery.State{"n0": recovery.Intact, "n2": recovery.Intact, "n3": recovery.Intact}
		cp.Held = []recovery.Held{ok, ok, ok, ok}
		cp.Held[1] = recovery.Held{Data: recovery.Missing, Parity: recovery.Missing}
		cp.Held[c.bad] = recovery.Held{Data: recovery.Intact, Parity: recovery.Corrupt}
		in.Checkpoints = append(in.Checkpoints, cp)
	}
	plan, err := recovery.Decide(in)
	if err != nil {
		t.Fatal(err)
	}
	wantRebuilt := []int{1, other}
	slices.Sort(wantRebuilt)
	if plan.Action != recovery.Rebuild || plan.Name != "c1" || !slices.Equal(plan.Rebuilt, wantRebuilt) ||
		len(plan.Rebuild) != 2 || len(plan.Skipped) != 1 || plan.Skipped[0].Name != "c2" ||
		!slices.Equal(plan.WriteManifest, []string{"spare"}) {
		t.Fatalf("the plan is not the case this test is about:\n%s", plan)
	}

	restored := make([]*Restored, 4)
	engines := onRanks(t, now, caches, "xor:2", func(e *Engine) error {
		res, err := e.Restart(ctx)
		restored[e.Rank] = res
		return err
	})
	// The skip reason is the plan's, with what each rank's check found
	// quoted after its state (Held.Why, which the hand-made facts lack).
	why := plan.Skipped[0].Reason
	lostRank1 := why[:strings.Index(why, "missing")+len("missing")] + " (c2/rank-1/data: "
	badParity := fmt.Sprintf("rank %d on n%d: parity corrupt (c2/rank-%d.parity: ", partner, partner, partner)
	for r, res := range restored {
		if res.Name() != plan.Name || res.ID() != plan.ID || res.Source != SourceRebuild ||
			!slices.Equal(res.Rebuilt, plan.Rebuilt) || len(res.Skipped) != 1 ||
			res.Skipped[0].Name != "c2" || res.Skipped[0].ID != 2 || !strings.HasPrefix(res.Skipped[0].Reason, lostRank1) ||
			!strings.Contains(res.Skipped[0].Reason, badParity) || !strings.HasSuffix(res.Skipped[0].Reason, "; no copy on the shared tier") {
			t.Errorf("rank %d restored %s (id %d) from %s, rebuilt %v, skipped %+v; the plan:\n%s",
				r, res.Name(), res.ID(), res.Source, res.Rebuilt, res.Skipped, plan)
		}
		if engines[r].LastID() != plan.ID {
			t.Errorf("rank %d: LastID %d, want %d", r, engines[r].LastID(), plan.ID)
		}
		// Every file and parity of the rank verifies in its node's cache,
		// and the data reads back as written.
		if err := VerifyPart(ctx, caches[now[r]], "c1", m1.Parts[r]); err != nil {
			t.Errorf("rank %d after the restart: %v", r, err)
		}
		rc, err := res.Open("data")
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || string(got) != rankData(r, "c1") {
			t.Errorf("rank %d reads %d bytes, %v; want its c1 data", r, len(got), err)
		}
	}
	if _, err := cachetier.Load(ctx, caches["spare"], "c1"); err != nil {
		t.Errorf("the spare's cache holds no manifest of c1: %v", err)
	}
}

// Restart passes over the checkpoints Eligible rejects, for the newest it
// accepts, and says there is none when it accepts none.
func TestRestartEligible(t *testing.T) {
	ctx := context.Background()
	nodes := []string{"n0", "n1"}
	caches := map[string]storage.Backend{"n0": mem.New(), "n1": mem.New()}
	for _, name := range []string{"a", "b", "c"} {
		commitAll(t, nodes, caches, name)
	}
	for _, c := range []struct {
		reject []string
		want   string
	}{{nil, "c"}, {[]string{"c"}, "b"}, {[]string{"c", "b"}, "a"}, {[]string{"a", "b", "c"}, ""}} {
		got := make([]string, len(nodes))
		onRanks(t, nodes, caches, "xor:2", func(e *Engine) error {
			e.Eligible = func(name string, _ uint64) bool { return !slices.Contains(c.reject, name) }
			r, err := e.Restart(ctx)
			if err != nil {
				if c.want == "" && errors.Is(err, ErrNoCheckpoint) {
					return nil
				}
				return err
			}
			got[e.Rank] = r.Name()
			return nil
		})
		for r, g := range got {
			if g != c.want {
				t.Errorf("rejecting %v: rank %d restarted from %q, want %q", c.reject, r, g, c.want)
			}
		}
	}
}
