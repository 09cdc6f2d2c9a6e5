package ckpt

import (
	"context"
	"encoding/gob"
	"fmt"
)

// valueFile is the file SaveValue writes.
const valueFile = "value.gob"

// SaveValue checkpoints v (encoded with encoding/gob) as the checkpoint
// name: Start, one file, Commit. It is collective, like Commit.
func SaveValue(ctx context.Context, s *Store, name string, v any) error {
	c, err := s.Start(name)
	if err != nil {
		return err
	}
	f, err := c.Create(valueFile)
	if err != nil {
		return err
	}
	if err := gob.NewEncoder(f).Encode(v); err != nil {
		f.Close()
		c.Abort()
		return fmt.Errorf("ckpt: encode value: %w", err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	return c.Commit(ctx)
}

// LoadValue restarts from the newest recoverable checkpoint and decodes the
// value SaveValue stored in it into v (a pointer). It is collective, like
// Restart.
func LoadValue(ctx context.Context, s *Store, v any) (*Restored, error) {
	r, err := s.Restart(ctx)
	if err != nil {
		return nil, err
	}
	rd, err := r.Open(valueFile)
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	if err := gob.NewDecoder(rd).Decode(v); err != nil {
		return nil, fmt.Errorf("ckpt: decode value from %q: %w", r.Name(), err)
	}
	return r, nil
}
