// Package sharedtier is the layout of checkpoints on the shared tier, paper
// 000's lightweight storage: one object per rank, one manifest per
// checkpoint written last, nothing else.
//
//	NAME/rank-R.data     rank R's files, concatenated in manifest order
//	NAME.manifest        written last: the checkpoint exists on the tier
//
// Both writers of the tier use it: ranks flushing themselves (blocking) and
// staging servers pulling from the nodes (non-blocking). A checkpoint exists
// on the tier exactly when its manifest does, and the manifest is written
// only after every data object is durable, so a flush that fails or
// crashes half way leaves nothing a restart could take for a checkpoint.
package sharedtier

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/ckpt/ckpt/internal/manifest"
	"github.com/ckpt/ckpt/storage"
)

// DataObject is the name of rank's object of checkpoint name.
func DataObject(name string, rank int) string { return fmt.Sprintf("%s/rank-%d.data", name, rank) }

// ManifestObject is the name of checkpoint name's manifest.
func ManifestObject(name string) string { return name + ".manifest" }

// Commit writes the manifest of a checkpoint whose data objects are all
// durable: from then on the checkpoint exists on the tier. m is the
// checkpoint's manifest as cached; the tier's copy says LevelShared.
func Commit(ctx context.Context, b storage.Backend, m *manifest.Manifest) error {
	sm := *m
	sm.Level = manifest.LevelShared
	text, err := manifest.Encode(&sm)
	if err != nil {
		return err
	}
	_, err = storage.Save(ctx, b, ManifestObject(m.Name), bytes.NewReader(text))
	return err
}

// Exists tells whether checkpoint name is committed on the tier.
func Exists(ctx context.Context, b storage.Backend, name string) (bool, error) {
	_, err := b.Stat(ctx, ManifestObject(name))
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, storage.ErrNotExist):
		return false, nil
	}
	return false, err
}

// Holds tells whether the checkpoint committed on the tier under m's name
// is m itself (m as cached: the tier's copy says LevelShared). The error
// wraps storage.ErrNotExist when no checkpoint of the name is committed;
// a manifest that does not decode is not m.
func Holds(ctx context.Context, b storage.Backend, m *manifest.Manifest) (bool, error) {
	text, err := storage.Load(ctx, b, ManifestObject(m.Name))
	if err != nil {
		return false, err
	}
	sm := *m
	sm.Level = manifest.LevelShared
	want, err := manifest.Encode(&sm)
	if err != nil {
		return false, err
	}
	return bytes.Equal(text, want), nil
}

// List returns the checkpoints the tier holds, newest (highest ID) first.
// Manifests that cannot be read or decoded are skipped: such a checkpoint
// does not exist.
func List(ctx context.Context, b storage.Backend) ([]*manifest.Manifest, error) {
	var names []string
	err := b.List(ctx, "", func(i storage.Info) error {
		if strings.HasSuffix(i.Name, ".manifest") && !strings.Contains(i.Name, "/") {
			names = append(names, i.Name)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var out []*manifest.Manifest
	for _, n := range names {
		text, err := storage.Load(ctx, b, n)
		if err != nil {
			continue
		}
		if m, err := manifest.Decode(text); err == nil {
			out = append(out, m)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID > out[j].ID })
	return out, nil
}

// Remove deletes checkpoint name from the tier, its manifest first so that
// it stops existing before its data goes, then every object under NAME/
// (data objects and anything a flush left there). Missing objects are not
// an error.
func Remove(ctx context.Context, b storage.Backend, name string) error {
	return RemoveObjects(ctx, b, ManifestObject(name), name+"/")
}

// RemoveObjects removes the object marker, then every object whose name
// starts with prefix; objects already gone are skipped.
func RemoveObjects(ctx context.Context, b storage.Backend, marker, prefix string) error {
	if err := b.Remove(ctx, marker); err != nil && !errors.Is(err, storage.ErrNotExist) {
		return err
	}
	var names []string
	if err := b.List(ctx, prefix, func(i storage.Info) error { names = append(names, i.Name); return nil }); err != nil {
		return err
	}
	for _, n := range names {
		if err := b.Remove(ctx, n); err != nil && !errors.Is(err, storage.ErrNotExist) {
			return err
		}
	}
	return nil
}

// Retain keeps the newest keep checkpoints on the tier and removes older
// ones (keep ≤ 0 keeps everything; the newest is never removed).
func Retain(ctx context.Context, b storage.Backend, keep int) error {
	if keep <= 0 {
		return nil
	}
	ms, err := List(ctx, b)
	if err != nil {
		return err
	}
	for _, m := range ms[min(keep, len(ms)):] {
		if err := Remove(ctx, b, m.Name); err != nil {
			return err
		}
	}
	return nil
}
