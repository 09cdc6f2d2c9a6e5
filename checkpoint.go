package ckpt

import (
	"context"
	"errors"
	"fmt"

	"github.com/ckpt/ckpt/internal/engine"
)

// Checkpoint is a checkpoint being written by this rank: Start it, create
// its files, then Commit (collective) or Abort.
type Checkpoint struct {
	c   *engine.Checkpoint
	own *ownCheckpoint // under the uncoordinated strategy
}

// File is a file of a checkpoint being written: an io.WriteCloser into the
// node's cache. Close makes it durable; Commit needs every file closed.
type File struct {
	f   *engine.File
	own *ownFile // under the uncoordinated strategy
}

// Start begins a checkpoint named name on this rank. It is local; Commit is
// the collective step. Names are single path elements (letters, digits,
// '-', '_', '.'; see manifest.ValidName).
func (s *Store) Start(name string) (*Checkpoint, error) {
	if s.alone {
		return nil, fmt.Errorf("ckpt: Store.Start(%q): %w (uncoordinated: use Job.Checkpoint)", name, ErrStrategy)
	}
	c, err := s.eng.Start(name)
	if err != nil {
		return nil, err
	}
	return &Checkpoint{c: c}, nil
}

// Name is the checkpoint's name.
func (c *Checkpoint) Name() string {
	if c.own != nil {
		return c.own.name
	}
	return c.c.Name()
}

// Create opens a new file of the checkpoint for writing. Bytes stream
// straight into the node's cache; nothing is held in memory (under the
// uncoordinated strategy they are, until Job.Checkpoint saves the rank's
// checkpoint as one file).
func (c *Checkpoint) Create(file string) (*File, error) {
	if c.own != nil {
		return c.own.create(file)
	}
	f, err := c.c.Create(file)
	if err != nil {
		return nil, err
	}
	return &File{f: f}, nil
}

// Path routes a file the application writes itself, SCR style: it returns
// the path in the node's cache where the application must write file before
// Commit, which then hashes it. It needs a cache on a file system, and
// the coordinated strategy.
func (c *Checkpoint) Path(file string) (string, error) {
	if c.own != nil {
		return "", fmt.Errorf("ckpt: checkpoint %q: a file's path: %w (uncoordinated: use Create)", c.own.name, ErrStrategy)
	}
	return c.c.Path(file)
}

func (f *File) Write(p []byte) (int, error) {
	if f.own != nil {
		return f.own.write(p)
	}
	return f.f.Write(p)
}

// Close makes the file durable in the cache (under the uncoordinated
// strategy: complete; the checkpoint is durable when Job.Checkpoint
// returns).
func (f *File) Close() error {
	if f.own != nil {
		f.own.closed = true
		return nil
	}
	return f.f.Close()
}

// Commit makes the checkpoint complete on every rank: it is collective.
// Each rank's files are hashed, the redundancy sets encode their parity
// across nodes, and once every rank's data and parity are durable each node
// writes the manifest, the commit marker. If any rank fails, every rank
// returns an error and the checkpoint does not exist (the previous one stays
// current).
func (c *Checkpoint) Commit(ctx context.Context) error {
	if c.own != nil {
		return fmt.Errorf("ckpt: checkpoint %q: Commit: %w (Job.Checkpoint saves it)", c.own.name, ErrStrategy)
	}
	return engineError(c.c.Commit(ctx))
}

// ErrCheckpointFailed is wrapped by the error of Job.Checkpoint and
// Checkpoint.Commit when every rank learned, together, that the checkpoint
// failed (a rank could not write its part, its disk full, or a node its
// manifest): no rank keeps any of it, the previous checkpoint stays
// current, and the job may go on computing and checkpoint again later,
// as an SCR application goes on after a checkpoint it marked invalid.
// Any other error from a checkpoint leaves the ranks unsure of each
// other: end the rank (the launcher relaunches the job).
var ErrCheckpointFailed = errors.New("the checkpoint failed on every rank")

// engineError marks an engine's configuration error with ErrConfig, and a
// checkpoint that failed on every rank with ErrCheckpointFailed.
func engineError(err error) error {
	switch {
	case errors.Is(err, engine.ErrConfig):
		return configError(err)
	case errors.Is(err, engine.ErrCheckpointFailed):
		return &marked{err, ErrCheckpointFailed}
	}
	return err
}

// Abort discards the checkpoint on this rank. Use it instead of Commit only
// when every rank aborts; otherwise the ranks that commit wait in vain.
func (c *Checkpoint) Abort() error {
	if c.own != nil {
		return fmt.Errorf("ckpt: checkpoint %q: Abort: %w (return an error from save)", c.own.name, ErrStrategy)
	}
	return c.c.Abort()
}
