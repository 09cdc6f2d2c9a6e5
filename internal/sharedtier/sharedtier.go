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
// does not exist for a restart. Scan reports them too.
func List(ctx context.Context, b storage.Backend) ([]*manifest.Manifest, error) {
	ms, _, err := scan(ctx, b, isManifest, manifest.Decode, nil)
	return ms, err
}

// Scan is List that also returns the manifests it skipped, so that tools
// can report them as damaged rather than let the checkpoint vanish.
func Scan(ctx context.Context, b storage.Backend) ([]*manifest.Manifest, []Unreadable, error) {
	return scan(ctx, b, isManifest, manifest.Decode, nil)
}

// isManifest tells a checkpoint's manifest on the tier, and its name.
func isManifest(object string) (string, bool) {
	name, ok := strings.CutSuffix(object, ".manifest")
	return name, ok && !strings.Contains(object, "/")
}

// Unreadable is a manifest object that exists but marks no checkpoint:
// it could not be read, or it does not decode (a failed checksum, invalid
// content).
type Unreadable struct {
	Name   string // the checkpoint's name, from the object's
	Object string
	Err    error
}

// ScanManifests loads and decodes every object of b that nameOf says is a
// checkpoint's manifest (returning the checkpoint's name) with decode
// (manifest.Decode, or a memo of it): the manifests that decode, newest
// (highest ID) first, and the others, by object name. It is the listing
// of both tiers (package cachetier's layout too).
func ScanManifests(ctx context.Context, b storage.Backend, nameOf func(object string) (string, bool),
	decode func([]byte) (*manifest.Manifest, error)) ([]*manifest.Manifest, []Unreadable, error) {
	return scan(ctx, b, nameOf, decode, nil)
}

// scan is ScanManifests that also records the size of every object of
// the listing in sizes, if not nil.
func scan(ctx context.Context, b storage.Backend, nameOf func(object string) (string, bool),
	decode func([]byte) (*manifest.Manifest, error), sizes map[string]int64) ([]*manifest.Manifest, []Unreadable, error) {
	var objects []string
	err := b.List(ctx, "", func(i storage.Info) error {
		if sizes != nil {
			sizes[i.Name] = i.Size
		}
		if _, ok := nameOf(i.Name); ok {
			objects = append(objects, i.Name)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	sort.Strings(objects)
	var out []*manifest.Manifest
	var bad []Unreadable
	for _, o := range objects {
		name, _ := nameOf(o)
		text, err := storage.Load(ctx, b, o)
		if err != nil {
			if errors.Is(err, storage.ErrNotExist) {
				continue // removed since it was listed (retention)
			}
			bad = append(bad, Unreadable{Name: name, Object: o, Err: fmt.Errorf("unreadable: %w", err)})
			continue
		}
		m, err := decode(text)
		if err != nil {
			bad = append(bad, Unreadable{Name: name, Object: o, Err: err})
			continue
		}
		out = append(out, m)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].ID > out[j].ID })
	return out, bad, nil
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

// Retain keeps the newest keep checkpoints on the tier and, beyond them,
// the newest recoverable one (Check), and removes the others (keep ≤ 0
// keeps everything; the newest is never removed). Manifests that do not
// decode are left alone: their age is unknown, and ckpt ls and verify
// report them as damaged.
func Retain(ctx context.Context, b storage.Backend, keep int) error {
	if keep <= 0 {
		return nil
	}
	// The listing that finds the manifests gives every object's size:
	// Check's test without a request per object.
	sizes := map[string]int64{}
	ms, _, err := scan(ctx, b, isManifest, manifest.Decode, sizes)
	if err != nil {
		return err
	}
	sizeOf := func(object string) (int64, error) {
		n, ok := sizes[object]
		if !ok {
			return 0, fmt.Errorf("%s: %w", object, storage.ErrNotExist)
		}
		return n, nil
	}
	list := make([]Candidate, len(ms))
	for i, m := range ms {
		list[i] = Candidate{Name: m.Name, ID: m.ID, Recoverable: check(m, sizeOf) == nil}
	}
	for _, name := range Doomed(list, keep) {
		if err := Remove(ctx, b, name); err != nil {
			return err
		}
	}
	return nil
}

// Check tells cheaply whether a fetch could restore checkpoint m from the
// tier: its manifest decoded (m is that manifest), and every rank's data
// object is present with the size the manifest gives it. Contents are not
// hashed (that is ckpt verify's work, and a fetch verifies every byte): a
// flipped bit passes Check.
func Check(ctx context.Context, b storage.Backend, m *manifest.Manifest) error {
	return check(m, func(object string) (int64, error) {
		i, err := b.Stat(ctx, object)
		return i.Size, err
	})
}

// check is Check with the objects' sizes from sizeOf.
func check(m *manifest.Manifest, sizeOf func(object string) (int64, error)) error {
	for _, p := range m.Parts {
		var want int64
		for _, f := range p.Files {
			n, _ := f.Stored() // a compressed file's object is its stored form
			want += n
		}
		object := DataObject(m.Name, p.Rank)
		n, err := sizeOf(object)
		switch {
		case err != nil:
			return fmt.Errorf("rank %d: %w", p.Rank, err)
		case n != want:
			return fmt.Errorf("rank %d: %w: %s is %d bytes, the manifest says %d", p.Rank, manifest.ErrCorrupt, object, n, want)
		}
	}
	return nil
}
