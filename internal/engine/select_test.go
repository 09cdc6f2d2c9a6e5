package engine

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

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
	got, nodes := mergeOffers(all)
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
	in, cands := planInput(8, append(all, offer{Node: "c"}, offer{Node: "c"}, offer{Node: "d"}, offer{Node: "d"}))
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
		in, _ := planInput(4, all)
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
