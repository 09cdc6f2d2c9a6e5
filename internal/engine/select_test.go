package engine

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/manifest"
)

// testManifest is a valid manifest of ranks ranks in sets of xor:n.
func testManifest(t *testing.T, name string, id uint64, ranks, n int, level string) *manifest.Manifest {
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
		Scheme: "xor", N: n, M: 1, Sets: sets, Level: level})
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
// checkpoint, newest first; undecodable manifests are no candidates.
func TestMergeOffers(t *testing.T) {
	c1 := testManifest(t, "c1", 1, 4, 2, manifest.LevelCache)
	c2 := testManifest(t, "c2", 2, 4, 2, manifest.LevelCache)
	s1 := testManifest(t, "c1", 1, 4, 2, manifest.LevelShared)
	s0 := testManifest(t, "c0", 1, 4, 2, manifest.LevelShared) // same ID: ties go by name
	got := mergeOffers([]offer{
		{Cache: encoded(t, c2, c1), Shared: encoded(t, s1, s0)},
		{Cache: append(encoded(t, c1), []byte("garbage"))},
		{},
	})
	var names []string
	for _, c := range got {
		where := ""
		if c.cache != nil {
			where += "+cache"
		}
		if c.shared != nil {
			where += "+shared"
		}
		names = append(names, c.any().Name+where)
	}
	want := []string{"c2+cache", "c0+shared", "c1+cache+shared"}
	if !slices.Equal(names, want) {
		t.Errorf("candidates %v, want %v", names, want)
	}
}

// A set rebuilds up to M lost members; one more makes the candidate
// unusable, and the reason names the set and the first lost rank's cause.
func TestDecideCache(t *testing.T) {
	m := testManifest(t, "c1", 1, 4, 2, manifest.LevelCache) // sets [0 1] [2 3], M 1
	ok := rankStatus{Intact: true}
	lost := rankStatus{Why: "gone"}
	for _, tc := range []struct {
		status []rankStatus
		lost   []int
		reason string
	}{
		{[]rankStatus{ok, ok, ok, ok}, nil, ""},
		{[]rankStatus{ok, lost, lost, ok}, []int{1, 2}, ""},
		{[]rankStatus{ok, ok, lost, lost}, []int{2, 3}, "set 1 (ranks [2 3]) lost ranks [2 3], more than the 1 its xor redundancy rebuilds (rank 2: gone)"},
	} {
		d := decideCache(m, tc.status)
		if !slices.Equal(d.lost, tc.lost) || d.reason != tc.reason {
			t.Errorf("decideCache(%v) = lost %v, %q; want %v, %q", tc.status, d.lost, d.reason, tc.lost, tc.reason)
		}
	}
	if r := unusable(m, 8); !strings.Contains(r, "4 ranks") || unusable(m, 4) != "" {
		t.Errorf("unusable: %q for 8 ranks, %q for 4", r, unusable(m, 4))
	}
}
