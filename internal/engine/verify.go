package engine

import (
	"context"
	"fmt"

	"github.com/ckpt/ckpt/internal/cachetier"
	"github.com/ckpt/ckpt/internal/manifest"
	"github.com/ckpt/ckpt/internal/recovery"
	"github.com/ckpt/ckpt/storage"
)

// VerifyPart checks a rank's files and parity of checkpoint name in a
// node's cache against the manifest's part: every byte is hashed. A
// compressed file is checked in its stored form (File.Stored), without
// decompressing it.
func VerifyPart(ctx context.Context, cache storage.Backend, name string, p manifest.Part) error {
	for _, f := range p.Files {
		size, hash := f.Stored()
		if err := verifyObject(ctx, cache, cachetier.FileObject(name, p.Rank, f.Name), size, hash); err != nil {
			return err
		}
	}
	for _, f := range p.Parity {
		if err := verifyObject(ctx, cache, cachetier.ParityObject(name, p.Rank), f.Size, f.Hash); err != nil {
			return err
		}
	}
	return nil
}

// CheckPart checks a rank's files of checkpoint name in a node's cache as
// the planner wants them (recovery.Held): its data files and its parity
// apart, every byte hashed, each State from the first failure (a bad
// parity alone loses the member too: recovery's rule 5). err is the first
// failure, data before parity, as VerifyPart returns it.
func CheckPart(ctx context.Context, cache storage.Backend, name string, p manifest.Part) (recovery.Held, error) {
	data, parity := p, p
	data.Parity, parity.Files = nil, nil
	derr := VerifyPart(ctx, cache, name, data)
	perr := VerifyPart(ctx, cache, name, parity)
	err := derr
	if err == nil {
		err = perr
	}
	return recovery.Held{Data: recovery.StateOf(derr), Parity: recovery.StateOf(perr), Why: ErrString(err)}, err
}

// verifyObject reads an object whole and checks its size and hash.
func verifyObject(ctx context.Context, b storage.Backend, name string, size int64, want manifest.Hash) error {
	got, n, err := hashObject(ctx, b, name)
	switch {
	case err != nil:
		return fmt.Errorf("%s: %w", name, err)
	case n != size:
		return fmt.Errorf("%s: %w: %d bytes, the manifest says %d", name, manifest.ErrCorrupt, n, size)
	case got != want:
		return fmt.Errorf("%s: %w: content hash %s, the manifest says %s", name, manifest.ErrCorrupt, got, want)
	}
	return nil
}

// hashObject computes an object's content hash: mapped and hashed on every
// core when it is a local file, else read and hashed in a pipeline.
func hashObject(ctx context.Context, b storage.Backend, name string) (manifest.Hash, int64, error) {
	if loc, ok := storage.As[storage.Locator](b); ok {
		if p, ok := loc.Path(name); ok {
			if h, n, ok := hashMapped(p); ok {
				return h, n, nil
			}
		}
	}
	r, err := b.Open(ctx, name, 0, -1)
	if err != nil {
		return manifest.Hash{}, 0, err
	}
	defer r.Close()
	return manifest.HashContent(r) // read and hashed in a pipeline
}
