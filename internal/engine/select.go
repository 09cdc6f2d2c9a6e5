package engine

// Restart's selection: which candidates there are, and for each whether it
// can be used and how. Everything here is pure — it sees what the ranks
// reported and returns a decision with a reason — so that the planner of
// internal/recovery can take its place without touching the I/O of
// restart.go and flush.go.

import (
	"fmt"
	"sort"

	"github.com/ckpt/ckpt/internal/manifest"
)

// offer is what each rank knows of the checkpoints: the manifests of its
// node's cache and (rank 0) of the shared tier.
type offer struct {
	Cache  [][]byte `json:"cache,omitempty"`
	Shared [][]byte `json:"shared,omitempty"`
}

// candidate is a checkpoint Restart may use, from the caches, the shared
// tier, or both.
type candidate struct {
	cache, shared *manifest.Manifest
}

func (c candidate) any() *manifest.Manifest {
	if c.cache != nil {
		return c.cache
	}
	return c.shared
}

// mergeOffers turns what every rank offered into the candidates, newest
// (highest ID) first, ties by name. Manifests that do not decode are
// dropped: they mark no checkpoint. Of a checkpoint's cached manifests the
// lowest rank's is taken (they are identical unless one is corrupt, which
// fails to decode).
func mergeOffers(all []offer) []candidate {
	type key struct {
		name string
		id   uint64
	}
	byKey := map[key]*candidate{}
	var keys []key
	add := func(b []byte, shared bool) {
		m, err := manifest.Decode(b)
		if err != nil {
			return
		}
		k := key{m.Name, m.ID}
		c := byKey[k]
		if c == nil {
			c = &candidate{}
			byKey[k] = c
			keys = append(keys, k)
		}
		if shared {
			c.shared = m
		} else if c.cache == nil {
			c.cache = m
		}
	}
	for _, o := range all {
		for _, b := range o.Cache {
			add(b, false)
		}
		for _, b := range o.Shared {
			add(b, true)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].id != keys[j].id {
			return keys[i].id > keys[j].id
		}
		return keys[i].name < keys[j].name
	})
	out := make([]candidate, len(keys))
	for i, k := range keys {
		out[i] = *byKey[k]
	}
	return out
}

// unusable says why a job of size ranks cannot use m at all, "" if it can.
func unusable(m *manifest.Manifest, size int) string {
	if m.Ranks != size {
		return fmt.Sprintf("written by a job of %d ranks, this one has %d", m.Ranks, size)
	}
	return ""
}

// rankStatus is what every rank reports about a cached candidate.
type rankStatus struct {
	Intact bool   `json:"intact"`
	Why    string `json:"why,omitempty"`
}

// cacheDecision is what to do with a candidate in the caches: use it as it
// is (lost empty), rebuild the lost ranks, or skip it for reason.
type cacheDecision struct {
	lost   []int
	reason string
}

// decideCache decides from every rank's status whether m's sets can
// rebuild what they lost: no set may have lost more members than its
// parity rebuilds.
func decideCache(m *manifest.Manifest, status []rankStatus) cacheDecision {
	var d cacheDecision
	for r, st := range status {
		if !st.Intact {
			d.lost = append(d.lost, r)
		}
	}
	for si, set := range m.Sets {
		var setLost []int
		for _, r := range set {
			if !status[r].Intact {
				setLost = append(setLost, r)
			}
		}
		if len(setLost) > m.M {
			d.reason = fmt.Sprintf("set %d (ranks %v) lost %s, more than the %d its %s redundancy rebuilds (rank %d: %s)",
				si, set, rankWord(setLost), m.M, m.Scheme, setLost[0], status[setLost[0]].Why)
			return d
		}
	}
	return d
}

func rankWord(ranks []int) string {
	if len(ranks) == 1 {
		return fmt.Sprintf("rank %d", ranks[0])
	}
	return fmt.Sprintf("ranks %v", ranks)
}
