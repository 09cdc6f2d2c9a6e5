package engine

// Restart's input to the planner: which candidates there are and what
// every node of the job holds of them, built from what all ranks gathered.
// Which candidate a restart uses, and how, is internal/recovery's
// decision (recovery.Decide); restart.go and fetch.go carry it out.

import (
	"fmt"

	"github.com/ckpt/ckpt/internal/manifest"
	"github.com/ckpt/ckpt/internal/recovery"
)

// offer is what each rank knows of the checkpoints: the node it runs on,
// the manifests of that node's cache and (rank 0) of the shared tier.
type offer struct {
	Node   string   `json:"node"`
	Cache  [][]byte `json:"cache,omitempty"`
	Shared [][]byte `json:"shared,omitempty"`
}

// candidate is a checkpoint Restart may use, from the caches, the shared
// tier, or both.
type candidate struct {
	cache, shared *manifest.Manifest
	// cachedOn are the nodes whose cache offered a manifest of it that
	// decodes (recovery's Checkpoint.Manifests: Intact there).
	cachedOn map[string]bool
}

func (c candidate) any() *manifest.Manifest {
	if c.cache != nil {
		return c.cache
	}
	return c.shared
}

// nodeName is the node rank runs on as the planner sees it: a rank that
// names none (it could commit nothing: a manifest needs a node) still
// needs one, of its own, so that the input is valid and the job learns it
// has no checkpoint.
func nodeName(node string, rank int) string {
	if node == "" {
		return fmt.Sprintf("(rank %d)", rank)
	}
	return node
}

// mergeOffers turns what every rank offered into the candidates, in the
// order they were first offered (the planner orders them: recovery's rule
// 1), and the node of every rank. Manifests that do not decode are
// dropped: they mark no checkpoint, and their node counts as holding none.
// Of a checkpoint's cached manifests the lowest rank's is taken (they are
// identical unless one is corrupt, which fails to decode).
func mergeOffers(all []offer) ([]candidate, []string) {
	type key struct {
		name string
		id   uint64
	}
	byKey := map[key]int{}
	var out []candidate
	nodes := make([]string, len(all))
	add := func(b []byte, node string, shared bool) {
		m, err := manifest.Decode(b)
		if err != nil {
			return
		}
		k := key{m.Name, m.ID}
		i, ok := byKey[k]
		if !ok {
			i = len(out)
			byKey[k] = i
			out = append(out, candidate{cachedOn: map[string]bool{}})
		}
		c := &out[i]
		switch {
		case shared:
			c.shared = m
		case c.cache == nil:
			c.cache = m
		}
		if !shared {
			c.cachedOn[node] = true
		}
	}
	for r, o := range all {
		nodes[r] = nodeName(o.Node, r)
		for _, b := range o.Cache {
			add(b, nodes[r], false)
		}
		for _, b := range o.Shared {
			add(b, "", true)
		}
	}
	return out, nodes
}

// planInput is the planner's input for a job of size ranks from every
// rank's offer; its Checkpoints[i] is candidates[i]. Every rank computes it
// from the same gathered offers, so every rank plans alike. The caches'
// holdings (Held) are left unknown: the planner asks for them
// (recovery.Verify) only for the candidates it needs (its rule 4); the
// shared tier's objects are not checked beforehand (rule 10: the fetch
// verifies them).
func planInput(size int, all []offer) (recovery.Input, []candidate) {
	candidates, nodes := mergeOffers(all)
	in := recovery.Input{Ranks: size, Nodes: nodes}
	for _, c := range candidates {
		cp := recovery.FromManifest(c.any())
		cp.Manifests = map[string]recovery.State{}
		for n := range c.cachedOn {
			cp.Manifests[n] = recovery.Intact
		}
		if c.shared != nil {
			cp.Shared = &recovery.Shared{}
		}
		in.Checkpoints = append(in.Checkpoints, cp)
	}
	return in, candidates
}
