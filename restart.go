package ckpt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/ckpt/ckpt/internal/engine"
)

// Where a restart found its checkpoint.
const (
	SourceCache   = "cache"   // every rank's files intact in its node's cache
	SourceRebuild = "rebuild" // lost or corrupt members rebuilt from redundancy
	SourceShared  = "shared"  // fetched back from the shared tier
)

// Restored is the checkpoint Restart recovered, ready to be read.
type Restored struct {
	r       *engine.Restored
	own     *ownRestored // under the uncoordinated strategy
	Source  string       // SourceCache, SourceRebuild, SourceShared or SourceOwn
	Rebuilt []int        // ranks whose files were rebuilt
	Skipped []Skip       // newer candidates that could not be used, newest first
}

// Skip is a checkpoint Restart passed over, and why.
type Skip struct {
	Name   string
	ID     uint64
	Reason string
}

func (r *Restored) Name() string {
	if r.own != nil {
		return r.own.name
	}
	return r.r.Name()
}

// ID is the checkpoint's number in the job (0 for a rank's own, under
// the uncoordinated strategy).
func (r *Restored) ID() uint64 {
	if r.own != nil {
		return 0
	}
	return r.r.ID()
}

// Files lists this rank's files in the order they were created.
func (r *Restored) Files() []string {
	if r.own != nil {
		return slices.Clone(r.own.names)
	}
	return r.r.Files()
}

// Open reads one of this rank's files. Its content was verified by Restart;
// the reader fails at the end if the file changed since (checked by the
// file's stamp where Restart hashed it, else by hashing it as it is read:
// docs/STORE.md says what each catches). A rank's own checkpoint (the
// uncoordinated strategy) was verified when it was loaded and is read from
// memory.
func (r *Restored) Open(file string) (io.ReadCloser, error) {
	if r.own != nil {
		return r.own.open(file)
	}
	return r.r.Open(file)
}

// Path is the cache path of one of this rank's files, for applications that
// read their files themselves.
func (r *Restored) Path(file string) (string, error) {
	if r.own != nil {
		return "", fmt.Errorf("ckpt: checkpoint %q: a file's path: %w (uncoordinated: use Open)", r.own.name, ErrStrategy)
	}
	return r.r.Path(file)
}

// Restart finds the newest checkpoint the job can recover and makes every
// rank's files ready: intact in the cache, or rebuilt from the redundancy
// of their sets after nodes were lost or files corrupted, or fetched from
// the shared tier when the caches cannot recover it. Every byte is
// verified against the manifest's hashes before Restart returns; a
// checkpoint that cannot be verified is skipped for an older one, and the
// reasons are reported in Skipped. It is collective. With no recoverable
// checkpoint it returns an error wrapping ErrNoCheckpoint.
func (s *Store) Restart(ctx context.Context) (*Restored, error) {
	if s.alone {
		return nil, fmt.Errorf("ckpt: Store.Restart: %w (uncoordinated: use Job.Restart)", ErrStrategy)
	}
	return restored(s.eng.Restart(ctx))
}

// restored is the public face of an engine's restart.
func restored(er *engine.Restored, err error) (*Restored, error) {
	if err != nil {
		if errors.Is(err, engine.ErrNoCheckpoint) {
			err = &marked{err, ErrNoCheckpoint}
		}
		return nil, err
	}
	r := &Restored{r: er, Source: string(er.Source), Rebuilt: er.Rebuilt}
	for _, sk := range er.Skipped {
		r.Skipped = append(r.Skipped, Skip(sk))
	}
	return r, nil
}

// Flush copies a committed checkpoint from the caches to the shared tier
// (blocking: it returns once the copy is durable). It is collective. Every
// file is verified against the manifest as it is read from the cache; the
// shared manifest is written last, by rank 0, only after every rank's
// object is durable, so a failed flush leaves no checkpoint on the tier and
// the cached copy untouched.
func (s *Store) Flush(ctx context.Context, name string) error {
	if s.alone {
		return fmt.Errorf("ckpt: Store.Flush(%q): %w (a rank's own checkpoints stay in the caches)", name, ErrStrategy)
	}
	return s.eng.Flush(ctx, name)
}

// marked is err, its message unchanged, that also is as (errors.Is): an
// engine's error marked with the public sentinel it stands for.
type marked struct{ err, as error }

func (e *marked) Error() string   { return e.err.Error() }
func (e *marked) Unwrap() []error { return []error{e.err, e.as} }
