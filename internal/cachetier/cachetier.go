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
// mark no checkpoint here, and a restart treats this node as holding none
// (it writes the manifest back if the checkpoint is used). Scan reports
// them too.
func List(ctx context.Context, cache storage.Backend) ([]*manifest.Manifest, error) {
	ms, _, err := Scan(ctx, cache)
	return ms, err
}

// Scan is List that also returns the manifests it skipped, so that tools
// can report them as damaged.
func Scan(ctx context.Context, cache storage.Backend) ([]*manifest.Manifest, []sharedtier.Unreadable, error) {
	return ScanWith(ctx, cache, manifest.Decode)
}

// ScanWith is Scan with a decoder of its own: a memo of manifest.Decode
// spares a caller that lists the cache at every commit (retention) from
// decoding the same manifests again.
func ScanWith(ctx context.Context, cache storage.Backend, decode func([]byte) (*manifest.Manifest, error)) ([]*manifest.Manifest, []sharedtier.Unreadable, error) {
	ms, bad, err := sharedtier.ScanManifests(ctx, cache, func(object string) (string, bool) {
		return strings.TrimSuffix(object, "/manifest"), isManifest(object)
	}, decode)
	if err != nil {
		return nil, nil, fmt.Errorf("ckpt: list the cache: %w", err)
	}
	return ms, bad, nil
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

// Retain removes the doomed checkpoints (sharedtier.Doomed's answer for
// the job's caches) from this node's cache, except those pinned says to
// keep. A doomed checkpoint this cache does not hold is skipped; one whose
// manifest here is damaged goes too.
func Retain(ctx context.Context, cache storage.Backend, doomed []string, pinned func(name string) bool) error {
	for _, name := range doomed {
		if pinned != nil && pinned(name) {
			continue
		}
		if err := Remove(ctx, cache, name); err != nil {
			return err
		}
	}
	return nil
}
