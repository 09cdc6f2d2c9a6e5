package engine

import (
	"slices"
	"testing"

	"github.com/ckpt/ckpt/internal/manifest"
	"github.com/ckpt/ckpt/internal/recovery"
	"github.com/ckpt/ckpt/internal/sharedtier"
)

// Retention's view of the caches, from what the ranks reported: newest
// first, and recoverable exactly when the planner would use or rebuild
// it — a set that lost two members is not, one that lost one is, a rank
// that reported nothing of a checkpoint lost its part, and a checkpoint of
// another number of ranks is no use to this job.
func TestCacheCandidates(t *testing.T) {
	intact := recovery.Held{Data: recovery.Intact, Parity: recovery.Intact}
	lost := recovery.Held{Data: recovery.Missing, Parity: recovery.Missing}
	var summaries []recovery.Checkpoint
	for _, m := range []*manifest.Manifest{
		testManifest(t, "c1", 1, 4, 2, manifest.LevelCache),
		testManifest(t, "c3", 3, 4, 2, manifest.LevelCache),
		testManifest(t, "c2", 2, 4, 2, manifest.LevelCache),
		testManifest(t, "c4", 4, 8, 2, manifest.LevelCache),
	} {
		summaries = append(summaries, recovery.FromManifest(m))
	}
	// Sets are [0 1] and [2 3]; every rank runs on node n, where all were
	// written. c3 lost ranks 0 and 1 (one set), c2 rank 3 (reported
	// nothing of it).
	held := func(r int) map[string]recovery.Held {
		h := map[string]recovery.Held{"c1#1": intact, "c2#2": intact, "c3#3": intact}
		if r <= 1 {
			h["c3#3"] = lost
		}
		if r == 3 {
			delete(h, "c2#2")
		}
		return h
	}
	var all []retainReport
	for r := range 4 {
		rep := retainReport{Node: "n", Held: held(r)}
		if r == 0 {
			rep.Checkpoints = summaries
		}
		all = append(all, rep)
	}
	want := []sharedtier.Candidate{{Name: "c4", ID: 4}, {Name: "c3", ID: 3}, {Name: "c2", ID: 2, Recoverable: true}, {Name: "c1", ID: 1, Recoverable: true}}
	if got := cacheCandidates(4, all); !slices.Equal(got, want) {
		t.Errorf("cacheCandidates = %+v, want %+v", got, want)
	}
	// Rank 2 lost c2 too: its set [2 3] lost both members.
	all[2].Held["c2#2"] = lost
	want[2].Recoverable = false
	if got := cacheCandidates(4, all); !slices.Equal(got, want) {
		t.Errorf("c2 without ranks 2 and 3: cacheCandidates = %+v, want %+v", got, want)
	}
}
