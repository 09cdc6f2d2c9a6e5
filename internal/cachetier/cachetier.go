// Package cachetier is the layout of checkpoints in a node's cache (tmpfs
// or a local SSD), the first level of storage:
//
//	NAME/rank-R/FILE      the files of rank R
//	NAME/rank-R.parity    redundancy data rank R holds for its set
//	NAME/manifest         written last: the checkpoint is complete
//
// Ranks on one node share its cache; each writes only its own files and
// parity, and every node writes the same manifest once every rank's data
// and parity are durable. A checkpoint exists in a cache exactly when its
// manifest does. The shared tier's layout is package sharedtier.
package cachetier

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/ckpt/ckpt/internal/manifest"
	"github.com/ckpt/ckpt/internal/sharedtier"
	"github.com/ckpt/ckpt/storage"
)

// FileObject is the name of rank's file of checkpoint name.
func FileObject(name string, rank int, file string) string {
	return fmt.Sprintf("%s/rank-%d/%s", name, rank, file)
}

// ParityObject is the name of the redundancy data rank holds for its set.
func ParityObject(name string, rank int) string { return fmt.Sprintf("%s/rank-%d.parity", name, rank) }

// ManifestObject is the name of checkpoint name's manifest, its commit
// marker.
func ManifestObject(name string) string { return name + "/manifest" }

// isManifest tells a checkpoint's manifest from a rank's file that happens
// to be named "manifest" (those sit one level deeper).
func isManifest(object string) bool {
	return strings.HasSuffix(object, "/manifest") && strings.Count(object, "/") == 1
}

// Load reads and decodes checkpoint name's manifest.
func Load(ctx context.Context, cache storage.Backend, name string) (*manifest.Manifest, error) {
	b, err := storage.Load(ctx, cache, ManifestObject(name))
	if err != nil {
		return nil, fmt.Errorf("no committed checkpoint %q in this node's cache: %w", name, err)
	}
	return manifest.Decode(b)
}

// List decodes every manifest in the cache, newest (highest ID) first.
// Manifests that cannot be read or fail their checksum are skipped: they
// mark no checkpoint, and restart and verification find the damage when
// they look at the candidates other nodes offer.
func List(ctx context.Context, cache storage.Backend) ([]*manifest.Manifest, error) {
	var names []string
	err := cache.List(ctx, "", func(i storage.Info) error {
		if isManifest(i.Name) {
			names = append(names, i.Name)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("ckpt: list the cache: %w", err)
	}
	var out []*manifest.Manifest
	for _, n := range names {
		b, err := storage.Load(ctx, cache, n)
		if err != nil {
			continue
		}
		m, err := manifest.Decode(b)
		if err != nil {
			continue
		}
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID > out[j].ID })
	return out, nil
}

// RemovePart removes rank's files and parity of checkpoint name, leaving
// other ranks' and the manifest: what a rank wrote for a commit that
// failed, or what is left of a part about to be rebuilt or fetched. It is
// best effort: whatever stays is overwritten or fails verification later.
func RemovePart(ctx context.Context, cache storage.Backend, name string, rank int) {
	prefix := fmt.Sprintf("%s/rank-%d", name, rank)
	var names []string
	cache.List(ctx, prefix, func(i storage.Info) error {
		// The prefix also matches rank-1 for rank-10's files.
		if strings.HasPrefix(i.Name, prefix+"/") || i.Name == prefix+".parity" {
			names = append(names, i.Name)
		}
		return nil
	})
	for _, n := range names {
		cache.Remove(ctx, n)
	}
}

// Remove deletes checkpoint name from the cache, its manifest first so
// that it stops existing before its data goes.
func Remove(ctx context.Context, cache storage.Backend, name string) error {
	return sharedtier.RemoveObjects(ctx, cache, ManifestObject(name), name+"/")
}

// Retain keeps the newest keep checkpoints of the cache and removes older
// ones, except those pinned says to keep (keep ≤ 0 keeps everything; the
// newest is never removed).
func Retain(ctx context.Context, cache storage.Backend, keep int, pinned func(name string) bool) error {
	if keep <= 0 {
		return nil
	}
	ms, err := List(ctx, cache)
	if err != nil {
		return err
	}
	for _, m := range ms[min(keep, len(ms)):] {
		if pinned != nil && pinned(m.Name) {
			continue
		}
		if err := Remove(ctx, cache, m.Name); err != nil {
			return err
		}
	}
	return nil
}
