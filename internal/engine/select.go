package engine

// Restart's input to the planner: which candidates there are and what
// every node of the job holds of them, built from what all ranks gathered.
// Which candidate a restart uses, and how, is internal/recovery's
// decision (recovery.Decide); restart.go and fetch.go carry it out.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/ckpt/ckpt/internal/group"
	"github.com/ckpt/ckpt/internal/manifest"
	"github.com/ckpt/ckpt/internal/recovery"
)

// offer is what each rank knows of the checkpoints: the node it runs on,
// the manifests of that node's cache and (rank 0) of the shared tier.
type offer struct {
	Node   string
	Cache  [][]byte
	Shared [][]byte
}

// appendOffer appends o's wire form to b: the node, then each list, each
// a count and then every text, every string and text preceded by its
// length (uvarints). Every rank receives every rank's offer, each with
// its checkpoints' manifests of one part per rank: n² bytes per rank, so
// they travel as they are, not as JSON, whose base64 and scanning of every
// byte cost each rank more than decoding the few distinct manifests
// (issue 17's profile at 32 ranks).
func appendOffer(b []byte, o offer) []byte {
	b = binary.AppendUvarint(b, uint64(len(o.Node)))
	b = append(b, o.Node...)
	for _, list := range [][][]byte{o.Cache, o.Shared} {
		b = binary.AppendUvarint(b, uint64(len(list)))
		for _, text := range list {
			b = binary.AppendUvarint(b, uint64(len(text)))
			b = append(b, text...)
		}
	}
	return b
}

// parseOffer reads appendOffer's form, which must fill b exactly. The
// texts share b's memory.
func parseOffer(b []byte) (offer, error) {
	next := func() ([]byte, error) {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			return nil, errors.New("offer truncated")
		}
		out := b[k : k+int(n) : k+int(n)]
		b = b[k+int(n):]
		return out, nil
	}
	var o offer
	node, err := next()
	if err != nil {
		return o, err
	}
	o.Node = string(node)
	for _, list := range []*[][]byte{&o.Cache, &o.Shared} {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) { // every text takes a byte at least
			return o, errors.New("offer truncated")
		}
		b = b[k:]
		for range n {
			text, err := next()
			if err != nil {
				return o, err
			}
			*list = append(*list, text)
		}
	}
	if len(b) > 0 {
		return o, fmt.Errorf("%d bytes after the offer", len(b))
	}
	return o, nil
}

// gatherOffers is AllGather of every rank's offer.
func gatherOffers(ctx context.Context, g group.Group, mine offer) ([]offer, error) {
	raw, err := g.AllGather(ctx, appendOffer(nil, mine))
	if err != nil {
		return nil, err
	}
	out := make([]offer, len(raw))
	for r, b := range raw {
		if out[r], err = parseOffer(b); err != nil {
			return nil, fmt.Errorf("offer from rank %d: %w", r, err)
		}
	}
	return out, nil
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

// decodeFunc decodes a manifest's text: manifest.Decode, or a test's
// counting wrapper of it.
type decodeFunc func([]byte) (*manifest.Manifest, error)

// mergeOffers turns what every rank offered into the candidates, in the
// order they were first offered (the planner orders them: recovery's rule
// 1), and the node of every rank. Manifests that do not decode are
// dropped: they mark no checkpoint, and their node counts as holding none.
// Of a checkpoint's cached manifests the lowest rank's is taken (they are
// identical unless one is corrupt, which fails to decode).
//
// Each distinct text is decoded once (issue 17): every rank offers its
// node's manifests, so a job of n ranks offers each checkpoint's manifest,
// of n parts, about n times, and decoding every copy cost each rank n
// decodes of size n (1.1 of 2.02 s of CPU in a profile of a 32-rank
// restart, all ranks in one process). Identical texts decode to the same
// manifest (Decode is a function of the text, which it checks whole: its
// hash, every rule, the canonical form), so a copy's decode is its first
// one's: no check is skipped. known holds texts this rank already decoded
// or encoded itself (its own offer: Decode(Encode(m)) is m), taken as
// they are; it may be nil.
func mergeOffers(all []offer, decode decodeFunc, known map[string]*manifest.Manifest) ([]candidate, []string) {
	type key struct {
		name string
		id   uint64
	}
	byKey := map[key]int{}
	var out []candidate
	nodes := make([]string, len(all))
	// decoded memoises decode by text; nil for a text that failed.
	decoded := make(map[string]*manifest.Manifest, len(known))
	for text, m := range known {
		decoded[text] = m
	}
	add := func(b []byte, node string, shared bool) {
		m, ok := decoded[string(b)]
		if !ok {
			var err error
			if m, err = decode(b); err != nil {
				m = nil
			}
			decoded[string(b)] = m
		}
		if m == nil {
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
// decode and known are mergeOffers'.
func planInput(size int, all []offer, decode decodeFunc, known map[string]*manifest.Manifest) (recovery.Input, []candidate) {
	candidates, nodes := mergeOffers(all, decode, known)
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
