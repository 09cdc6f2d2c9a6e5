package inspect

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/cachetier"
	"github.com/ckpt/ckpt/internal/engine"
	"github.com/ckpt/ckpt/internal/localcomm"
	"github.com/ckpt/ckpt/internal/manifest"
	"github.com/ckpt/ckpt/internal/sharedtier"
	"github.com/ckpt/ckpt/internal/storage/mem"
	"github.com/ckpt/ckpt/storage"
)

// fourCaches are the empty caches of nodes n0 to n3, for commit.
func fourCaches() map[string]storage.Backend {
	caches := map[string]storage.Backend{}
	for r := range 4 {
		caches[fmt.Sprintf("n%d", r)] = mem.New()
	}
	return caches
}

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
	caches := fourCaches()
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
	// The planner's reason names the set and its lost ranks.
	lostSet := "set 0 (ranks [0 1 2 3]) lost ranks [1 2], xor:4 rebuilds at most 1 per set"
	if v := VerifyCheckpoint(ctx, tiers, list[0]); !strings.HasPrefix(v.Reason, lostSet) || !strings.HasSuffix(v.Reason, "; no copy on the shared tier") ||
		v.Ranks[1].OK || v.Ranks[2].OK || !v.Ranks[0].OK || v.Shared != "" {
		t.Errorf("c2 without ranks 1 and 2: %+v", v)
	}
	cachetier.RemovePart(ctx, caches["n1"], "c1", 1)
	cachetier.RemovePart(ctx, caches["n2"], "c1", 2)
	if got := how(list[1]); got != "true shared" {
		t.Errorf("c1 without ranks 1 and 2, flushed: %s", got)
	}
	if v := VerifyCheckpoint(ctx, tiers, list[1]); !strings.HasPrefix(v.Reason, lostSet) || v.Shared != "ok" {
		t.Errorf("c1 from the shared tier: reason %q, shared %q", v.Reason, v.Shared)
	}
	// A corrupt shared object as well: not recoverable, and said why.
	if err := saveObject(ctx, shared, sharedtier.DataObject("c1", 3), "garbage"); err != nil {
		t.Fatal(err)
	}
	if v := VerifyCheckpoint(ctx, tiers, list[1]); v.Recoverable || !strings.HasPrefix(v.Shared, "rank 3: ") ||
		!strings.HasSuffix(v.Reason, "the shared tier's copy is incomplete: rank 3 corrupt") {
		t.Errorf("c1 with a corrupt shared object: %+v", v)
	}
}

// A rank whose parity alone is corrupt is lost as a whole (recovery's rule
// 5): its checkpoint is rebuilt, not used as it is; a second member of the
// set lost makes it unrecoverable from the caches.
func TestVerifyCorruptParity(t *testing.T) {
	ctx := context.Background()
	caches := fourCaches()
	commit(t, caches, nil, "c1", false)
	tiers := Tiers{Caches: caches}
	list, err := ListCheckpoints(ctx, tiers)
	if err != nil || len(list) != 1 {
		t.Fatalf("ListCheckpoints = %+v, %v", list, err)
	}
	if err := saveObject(ctx, caches["n3"], cachetier.ParityObject("c1", 3), "not the parity"); err != nil {
		t.Fatal(err)
	}
	v := VerifyCheckpoint(ctx, tiers, list[0])
	if !v.Recoverable || v.How != engine.SourceRebuild || v.Ranks[3].OK || !strings.Contains(v.Ranks[3].Problem, "parity") {
		t.Errorf("c1 with rank 3's parity corrupt: %+v", v)
	}
	delete(caches, "n0")
	v = VerifyCheckpoint(ctx, tiers, list[0])
	if v.Recoverable || v.Ranks[0].Problem != "no cache for node n0" ||
		!strings.HasPrefix(v.Reason, "set 0 (ranks [0 1 2 3]) lost ranks [0 3], xor:4 rebuilds at most 1 per set (rank 0 on n0: data and parity missing; rank 3 on n3: parity corrupt)") {
		t.Errorf("c1 without n0's cache and rank 3's parity: %+v", v)
	}
}

func saveObject(ctx context.Context, b storage.Backend, name, content string) error {
	_, err := storage.Save(ctx, b, name, strings.NewReader(content))
	return err
}

// flipByte flips a byte in the middle of an object, as a bad disk would.
func flipByte(t *testing.T, b storage.Backend, object string) {
	t.Helper()
	ctx := context.Background()
	data, err := storage.Load(ctx, b, object)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0x20
	if _, err := storage.Save(ctx, b, object, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
}

// A corrupt manifest is listed as damage of its checkpoint, never skipped:
// in one node's cache (the others' copies still give the checkpoint back,
// and that node's files count as what they are), on the shared tier (the
// tier no longer offers it), and as a checkpoint's only manifest (listed
// on its own, not recoverable). A manifest that decodes but differs from
// the others is damage too.
func TestCorruptManifests(t *testing.T) {
	ctx := context.Background()
	caches := fourCaches()
	shared := mem.New()
	commit(t, caches, shared, "c1", true)
	commit(t, caches, shared, "c2", false)
	commit(t, caches, shared, "c3", true)
	tiers := Tiers{Caches: caches, Shared: shared}
	// c3 is on the shared tier alone, and its manifest there is corrupt.
	for _, c := range caches {
		if err := cachetier.Remove(ctx, c, "c3"); err != nil {
			t.Fatal(err)
		}
	}
	flipByte(t, shared, sharedtier.ManifestObject("c3"))
	flipByte(t, caches["n1"], cachetier.ManifestObject("c2"))
	flipByte(t, shared, sharedtier.ManifestObject("c1"))

	list, err := ListCheckpoints(ctx, tiers)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range list {
		got = append(got, fmt.Sprintf("%s %d %v %v %d", l.Name, l.ID, l.InCache, l.InShared, len(l.Damaged)))
	}
	want := []string{"c2 2 [n0 n2 n3] false 1", "c1 1 [n0 n1 n2 n3] false 1", "c3 0 [] false 1"}
	if !slices.Equal(got, want) {
		t.Fatalf("ListCheckpoints = %q, want %q", got, want)
	}
	checkDamage := func(d Damage, tier, node, object string) {
		t.Helper()
		if d.Tier != tier || d.Node != node || d.Object != object || !strings.Contains(d.Problem, "manifest checksum") {
			t.Errorf("damage = %+v, want %s %s %s with a failed checksum", d, tier, node, object)
		}
	}
	checkDamage(list[0].Damaged[0], TierCache, "n1", "c2/manifest")
	checkDamage(list[1].Damaged[0], TierShared, "", "c1.manifest")
	checkDamage(list[2].Damaged[0], TierShared, "", "c3.manifest")
	if list[2].Manifest != nil {
		t.Errorf("c3 has a manifest: %+v", list[2])
	}

	// c2: n1's files are intact against the other nodes' manifest, so a
	// restart uses them and writes the manifest back.
	v := VerifyCheckpoint(ctx, tiers, list[0])
	if !v.Recoverable || v.How != engine.SourceCache || len(v.Damaged) != 1 {
		t.Errorf("c2 with n1's manifest corrupt: %+v", v)
	}
	// One more member lost elsewhere: still rebuildable.
	cachetier.RemovePart(ctx, caches["n2"], "c2", 2)
	if v := VerifyCheckpoint(ctx, tiers, list[0]); !v.Recoverable || v.How != engine.SourceRebuild {
		t.Errorf("c2 with n1's manifest corrupt and rank 2 lost: %+v", v)
	}
	// n1's files lost too: two members of the set, not recoverable.
	cachetier.RemovePart(ctx, caches["n1"], "c2", 1)
	if v := VerifyCheckpoint(ctx, tiers, list[0]); v.Recoverable || !strings.Contains(v.Reason, "lost ranks [1 2]") {
		t.Errorf("c2 with ranks 1 and 2 lost: %+v", v)
	}
	// c1: the caches give it back; the shared tier no longer would.
	cachetier.RemovePart(ctx, caches["n0"], "c1", 0)
	cachetier.RemovePart(ctx, caches["n3"], "c1", 3)
	if v := VerifyCheckpoint(ctx, tiers, list[1]); v.Recoverable || v.Shared != "" || len(v.Damaged) != 1 {
		t.Errorf("c1 with two members lost and its shared manifest corrupt: %+v", v)
	}
	// c3: no manifest decodes.
	if v := VerifyCheckpoint(ctx, tiers, list[2]); v.Recoverable || v.Name != "c3" || v.Reason != "no manifest of it decodes" || len(v.Damaged) != 1 {
		t.Errorf("c3: %+v", v)
	}

	// A copy that decodes but differs (another Created time) is damage of
	// the node that holds it; the node still counts as holding it, as a
	// restart would take it.
	m := *list[1].Manifest
	m.Created = m.Created.Add(time.Second)
	text, err := manifest.Encode(&m)
	if err != nil {
		t.Fatal(err)
	}
	if err := saveObject(ctx, caches["n3"], cachetier.ManifestObject("c1"), string(text)); err != nil {
		t.Fatal(err)
	}
	list, err = ListCheckpoints(ctx, tiers)
	if err != nil {
		t.Fatal(err)
	}
	l := list[1]
	if l.Name != "c1" || len(l.InCache) != 4 || len(l.Damaged) != 2 || l.Damaged[0].Node != "n3" ||
		l.Damaged[0].Problem != "decodes, but differs from the manifest in n0's cache" {
		t.Errorf("c1 with n3's copy differing: %+v", l)
	}
}
