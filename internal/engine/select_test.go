package engine

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/group"
	"github.com/ckpt/ckpt/internal/manifest"
	"github.com/ckpt/ckpt/internal/recovery"
)

// testManifest is a valid manifest of ranks ranks in sets of xor:n.
func testManifest(t *testing.T, name string, id uint64, ranks, n int, level manifest.Level) *manifest.Manifest {
	t.Helper()
	var sets [][]int
	for r := 0; r < ranks; r += n {
		var set []int
		for i := r; i < min(r+n, ranks); i++ {
			set = append(set, i)
		}
		sets = append(sets, set)
	}
	parts := make([]manifest.Part, ranks)
	for si, set := range sets {
		for mi, r := range set {
			parts[r] = manifest.Part{Rank: r, Node: "n", Set: si, Member: mi,
				Files: []manifest.File{{Rank: r, Name: "f", Size: 1}}}
		}
	}
	m, err := manifest.Merge(parts, manifest.Meta{Name: name, ID: id, Created: time.Unix(1, 0).UTC(), Ranks: ranks,
		Scheme: "xor", SetSize: n, M: 1, Sets: sets, Level: level})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func encoded(t *testing.T, ms ...*manifest.Manifest) [][]byte {
	var out [][]byte
	for _, m := range ms {
		b, err := manifest.Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// Every rank's cache and the shared tier merge into one candidate per
// checkpoint, with the nodes whose cache holds it; undecodable manifests
// are no candidates and mark no node. The planner tries them newest first,
// ties by name (recovery's rule 1): a job of another size skips them all,
// in that order.
func TestMergeOffers(t *testing.T) {
	c1 := testManifest(t, "c1", 1, 4, 2, manifest.LevelCache)
	c2 := testManifest(t, "c2", 2, 4, 2, manifest.LevelCache)
	s1 := testManifest(t, "c1", 1, 4, 2, manifest.LevelShared)
	s0 := testManifest(t, "c0", 1, 4, 2, manifest.LevelShared) // same ID: ties go by name
	all := []offer{
		{Node: "a", Cache: encoded(t, c2, c1), Shared: encoded(t, s1, s0)},
		{Node: "b", Cache: append(encoded(t, c1), []byte("garbage"))},
		{Node: "a", Cache: [][]byte{[]byte("garbage")}},
		{}, // a rank that names no node still gets one of its own
	}
	got, nodes := mergeOffers(all, manifest.Decode, nil)
	if want := []string{"a", "b", "a", "(rank 3)"}; !slices.Equal(nodes, want) {
		t.Errorf("nodes %v, want %v", nodes, want)
	}
	var names []string
	for _, c := range got {
		where := ""
		if c.cache != nil {
			where += "+cache"
		}
		if c.shared != nil {
			where += "+shared"
		}
		on := slices.Sorted(maps.Keys(c.cachedOn))
		names = append(names, c.any().Name+where+"@"+strings.Join(on, ","))
	}
	slices.Sort(names)
	want := []string{"c0+shared@", "c1+cache+shared@a,b", "c2+cache@a"}
	if !slices.Equal(names, want) {
		t.Errorf("candidates %v, want %v", names, want)
	}
	if got[0].cache != nil && got[0].cache.Level != manifest.LevelCache {
		t.Errorf("the cached manifest of %s is not the cache's", got[0].cache.Name)
	}

	// A job of 8 ranks: the 4 above and 4 whose nodes' caches hold nothing.
	in, cands := planInput(8, append(all, offer{Node: "c"}, offer{Node: "c"}, offer{Node: "d"}, offer{Node: "d"}), manifest.Decode, nil)
	for i, c := range cands {
		if in.Checkpoints[i].Name != c.any().Name || in.Checkpoints[i].ID != c.any().ID {
			t.Fatalf("input checkpoint %d is %s, candidate %s", i, in.Checkpoints[i].Name, c.any().Name)
		}
	}
	p, err := recovery.Decide(in)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, sk := range p.Skipped {
		order = append(order, sk.Name)
		if !strings.Contains(sk.Reason, "4 ranks, this one has 8") {
			t.Errorf("%s skipped for %q, want the job size", sk.Name, sk.Reason)
		}
	}
	if p.Action != recovery.None || !slices.Equal(order, []string{"c2", "c0", "c1"}) {
		t.Errorf("plan %v skipping %v, want none skipping [c2 c0 c1]", p.Action, order)
	}
}

// Each distinct manifest text is decoded once, however many ranks offer it
// (issue 17: every rank decoding every rank's copy was n² decodes of n
// parts): 32 ranks offering the same cached manifest, rank 0 the shared
// one, and some ranks the same garbage cost one decode each, and none for
// a text the rank knows (its own offer). A copy that differs by one byte
// is decoded on its own and, corrupt, marks no node: the memo never lets
// a bad copy pass for a good one.
func TestMergeOffersDecodesEachTextOnce(t *testing.T) {
	const ranks = 32
	cached := testManifest(t, "c1", 1, ranks, 4, manifest.LevelCache)
	text := encoded(t, cached)[0]
	shared := encoded(t, testManifest(t, "c1", 1, ranks, 4, manifest.LevelShared))[0]
	bad := slices.Clone(text)
	bad[len(bad)/2] ^= 1 // inside the body: its hash no longer matches
	if _, err := manifest.Decode(bad); err == nil {
		t.Fatal("the flipped copy decodes")
	}
	all := make([]offer, ranks)
	for r := range all {
		all[r] = offer{Node: fmt.Sprintf("n%d", r), Cache: [][]byte{text}}
		switch {
		case r == 0:
			all[r].Shared = [][]byte{shared}
		case r == 7:
			all[r].Cache = [][]byte{bad}
		case r%5 == 0:
			all[r].Cache = append(all[r].Cache, []byte("garbage"))
		}
	}
	for _, tc := range []struct {
		known map[string]*manifest.Manifest
		want  int
	}{
		{nil, 4}, // the cached text, the shared one, the flipped copy, the garbage
		{map[string]*manifest.Manifest{string(text): cached}, 3},
	} {
		decodes := map[string]int{}
		count := func(b []byte) (*manifest.Manifest, error) {
			decodes[string(b)]++
			return manifest.Decode(b)
		}
		got, _ := mergeOffers(all, count, tc.known)
		n := 0
		for text, c := range decodes {
			if c != 1 {
				t.Errorf("known %d: a text of %d bytes decoded %d times", len(tc.known), len(text), c)
			}
			n += c
		}
		if n != tc.want {
			t.Errorf("known %d: %d decodes, want %d", len(tc.known), n, tc.want)
		}
		if len(got) != 1 || got[0].cache == nil || got[0].shared == nil || got[0].shared.Level != manifest.LevelShared {
			t.Fatalf("known %d: candidates %+v, want c1 cached and shared", len(tc.known), got)
		}
		if len(got[0].cachedOn) != ranks-1 || got[0].cachedOn["n7"] {
			t.Errorf("known %d: cached on %d nodes (n7: %v), want all %d but n7", len(tc.known),
				len(got[0].cachedOn), got[0].cachedOn["n7"], ranks-1)
		}
	}
}

// The planner's decision from the ranks' reports: a set rebuilds up to M
// lost members (a bad parity loses the member too); one more makes the
// caches fail, and the reason names the set, its lost ranks and what each
// lacks. A manifest only some nodes hold is written back on the others.
func TestPlanFromHeld(t *testing.T) {
	m := testManifest(t, "c1", 1, 4, 2, manifest.LevelCache) // sets [0 1] [2 3], M 1, all on node n
	all := []offer{{Node: "n", Cache: encoded(t, m)}, {Node: "n"}, {Node: "n"}, {Node: "spare"}}
	ok := recovery.Held{Data: recovery.Intact, Parity: recovery.Intact}
	lost := recovery.Held{Data: recovery.Missing, Parity: recovery.Missing, Why: "gone"}
	badParity := recovery.Held{Data: recovery.Intact, Parity: recovery.Corrupt, Why: "bit flip"}
	for _, tc := range []struct {
		held    []recovery.Held
		action  recovery.Action
		rebuilt []int
		lost    [2][]int // LostMembers of sets 0 and 1
		reason  string
	}{
		{[]recovery.Held{ok, ok, ok, ok}, recovery.UseCache, nil, [2][]int{}, ""},
		{[]recovery.Held{ok, lost, badParity, ok}, recovery.Rebuild, []int{1, 2}, [2][]int{{1}, {0}}, ""},
		{[]recovery.Held{ok, ok, badParity, lost}, recovery.None, nil, [2][]int{}, "set 1 (ranks [2 3]) lost ranks [2 3], xor rebuilds at most 1 per set " +
			"(rank 2 on n: parity corrupt (bit flip); rank 3 on spare, moved from n: data and parity missing (gone)); no copy on the shared tier"},
	} {
		in, _ := planInput(4, all, manifest.Decode, nil)
		p, err := recovery.Decide(in)
		if err != nil || p.Action != recovery.Verify || p.Name != "c1" {
			t.Fatalf("before the check: %v %s, %v; want verify c1", p.Action, p.Name, err)
		}
		in.Checkpoints[0].Held = tc.held
		p, err = recovery.Decide(in)
		if err != nil {
			t.Fatal(err)
		}
		reason := ""
		if len(p.Skipped) > 0 {
			reason = p.Skipped[0].Reason
		}
		if p.Action != tc.action || !slices.Equal(p.Rebuilt, tc.rebuilt) || reason != tc.reason ||
			!slices.Equal(p.LostMembers(0), tc.lost[0]) || !slices.Equal(p.LostMembers(1), tc.lost[1]) {
			t.Errorf("held %v: %v rebuilt %v lost %v %v, %q; want %v %v %v, %q", tc.held, p.Action, p.Rebuilt,
				p.LostMembers(0), p.LostMembers(1), reason, tc.action, tc.rebuilt, tc.lost, tc.reason)
		}
		if tc.action != recovery.None && !slices.Equal(p.WriteManifest, []string{"spare"}) {
			t.Errorf("held %v: manifest written on %v, want [spare]", tc.held, p.WriteManifest)
		}
	}
}

// An offer travels as its texts (appendOffer), not as JSON: it comes back
// unchanged, empty lists and an empty node included, and gatherOffers
// hands every rank every rank's offer. A message cut short anywhere, or
// with bytes after it, is an error naming the rank, never a shorter offer.
func TestOfferWire(t *testing.T) {
	m := encoded(t, testManifest(t, "c1", 1, 4, 2, manifest.LevelCache))[0]
	offers := []offer{
		{Node: "node-a", Cache: [][]byte{m, []byte("garbage")}, Shared: [][]byte{m}},
		{Node: "b", Cache: [][]byte{{}}},
		{},
	}
	for _, o := range offers {
		b := appendOffer(nil, o)
		got, err := parseOffer(b)
		if err != nil {
			t.Fatalf("%q: %v", o.Node, err)
		}
		if got.Node != o.Node || !slices.EqualFunc(got.Cache, o.Cache, bytes.Equal) ||
			!slices.EqualFunc(got.Shared, o.Shared, bytes.Equal) {
			t.Errorf("offer %q came back as %+v", o.Node, got)
		}
		for cut := range len(b) {
			if _, err := parseOffer(b[:cut]); err == nil {
				t.Errorf("%q cut to %d of %d bytes parses", o.Node, cut, len(b))
			}
		}
		if _, err := parseOffer(append(b, 0)); err == nil || !strings.Contains(err.Error(), "after the offer") {
			t.Errorf("%q with a byte after it: %v", o.Node, err)
		}
	}

	comms := group.Local(len(offers))
	all := make([][]offer, len(offers))
	var wg sync.WaitGroup
	for r := range offers {
		wg.Go(func() {
			var err error
			if all[r], err = gatherOffers(context.Background(), comms[r], offers[r]); err != nil {
				t.Errorf("rank %d: %v", r, err)
			}
		})
	}
	wg.Wait()
	for r, got := range all {
		for i, o := range got {
			if o.Node != offers[i].Node || len(o.Cache) != len(offers[i].Cache) || len(o.Shared) != len(offers[i].Shared) {
				t.Errorf("rank %d got offer %d as %+v", r, i, o)
			}
		}
	}

	// A rank whose message is not an offer fails the gather on every rank.
	bad := group.Local(2)
	errs := make([]error, 2)
	wg.Go(func() { _, errs[0] = gatherOffers(context.Background(), bad[0], offers[0]) })
	wg.Go(func() { _, errs[1] = bad[1].AllGather(context.Background(), []byte{5, 'x'}) })
	wg.Wait()
	if errs[1] != nil || errs[0] == nil || !strings.Contains(errs[0].Error(), "offer from rank 1: offer truncated") {
		t.Errorf("a truncated offer from rank 1: %v", errs)
	}
}
