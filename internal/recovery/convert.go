package recovery

import (
	"errors"
	"io/fs"
	"slices"

	"github.com/ckpt/ckpt/internal/manifest"
)

// FromManifest returns the candidate a manifest describes: its name, ID,
// ranks, scheme, sets and the node of every rank. The driver adds what the
// tiers hold (Manifests, Held, Shared). The sets are copied.
func FromManifest(m *manifest.Manifest) Checkpoint {
	c := Checkpoint{Name: m.Name, ID: m.ID, Ranks: m.Ranks, Scheme: m.Scheme, M: m.M,
		Sets: make([][]int, len(m.Sets)), Nodes: make([]string, len(m.Parts))}
	for i, set := range m.Sets {
		c.Sets[i] = slices.Clone(set)
	}
	for i, p := range m.Parts {
		c.Nodes[i] = p.Node
	}
	return c
}

// StateOf turns the error of a check of one object into a State: nil is
// Intact, an error matching fs.ErrNotExist (storage.ErrNotExist does) is
// Missing, and any other error — a wrong size or hash, an unreadable
// object — is Corrupt.
func StateOf(err error) State {
	switch {
	case err == nil:
		return Intact
	case errors.Is(err, fs.ErrNotExist):
		return Missing
	}
	return Corrupt
}
