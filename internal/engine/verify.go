package engine

import (
	"context"
	"fmt"
	"time"

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
	return verifyPart(ctx, cache, name, p, nil)
}

// verifyPart is VerifyPart that notes in seen the stamps of the files it
// verified (seen may be nil).
func verifyPart(ctx context.Context, cache storage.Backend, name string, p manifest.Part, seen *verifiedFiles) error {
	for _, f := range p.Files {
		size, hash := f.Stored()
		if err := verifyObject(ctx, cache, cachetier.FileObject(name, p.Rank, f.Name), size, hash, seen); err != nil {
			return err
		}
	}
	for _, f := range p.Parity {
		if err := verifyObject(ctx, cache, cachetier.ParityObject(name, p.Rank), f.Size, f.Hash, nil); err != nil {
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
	return checkPart(ctx, cache, name, p, nil)
}

// checkPart is CheckPart that notes in seen the stamps of the data files
// it verified (seen may be nil).
func checkPart(ctx context.Context, cache storage.Backend, name string, p manifest.Part, seen *verifiedFiles) (recovery.Held, error) {
	data, parity := p, p
	data.Parity, parity.Files = nil, nil
	derr := verifyPart(ctx, cache, name, data, seen)
	perr := verifyPart(ctx, cache, name, parity, nil)
	err := derr
	if err == nil {
		err = perr
	}
	return recovery.Held{Data: recovery.StateOf(derr), Parity: recovery.StateOf(perr), Why: ErrString(err)}, err
}

// verifyObject reads an object whole and checks its size and hash; when
// it matches and the object is a file whose stamp held still during the
// hash, the stamp is noted in seen.
func verifyObject(ctx context.Context, b storage.Backend, name string, size int64, want manifest.Hash, seen *verifiedFiles) error {
	at := time.Now()
	got, n, st, err := hashObject(ctx, b, name)
	switch {
	case err != nil:
		return fmt.Errorf("%s: %w", name, err)
	case n != size:
		return fmt.Errorf("%s: %w: %d bytes, the manifest says %d", name, manifest.ErrCorrupt, n, size)
	case got != want:
		return fmt.Errorf("%s: %w: content hash %s, the manifest says %s", name, manifest.ErrCorrupt, got, want)
	}
	if st != nil {
		seen.note(name, *st, want, at)
	}
	return nil
}

// hashObject computes an object's content hash: mapped and hashed on every
// core when it is a local file, else read and hashed in a pipeline. st is
// the file's stamp when it held still during the hash, else nil.
func hashObject(ctx context.Context, b storage.Backend, name string) (h manifest.Hash, n int64, st *fileStamp, err error) {
	if loc, ok := storage.As[storage.Locator](b); ok {
		if p, ok := loc.Path(name); ok {
			if h, n, s, stamped, ok := hashMapped(p); ok {
				if stamped {
					st = &s
				}
				return h, n, st, nil
			}
		}
	}
	r, err := b.Open(ctx, name, 0, -1)
	if err != nil {
		return manifest.Hash{}, 0, nil, err
	}
	defer r.Close()
	h, n, err = manifest.HashContent(r) // read and hashed in a pipeline
	return h, n, nil, err
}
