package cluster

import (
	"bytes"
	"context"
	"fmt"
	"io"

	"github.com/ckpt/ckpt/internal/engine"
)

// State is what rank r writes into checkpoint name in the scenarios: sizes
// differ between ranks and span several 4 KiB blocks, and the bytes name
// both the checkpoint and the rank, so a restore of the wrong one shows.
func State(name string, r int) []byte {
	return bytes.Repeat([]byte(fmt.Sprintf("%s rank %d;", name, r)), 500+97*r)
}

// Write is a rank's step that checkpoints State(name, rank) as the file
// "state" of checkpoint name and commits it (collective).
func (r *Rank) Write(ctx context.Context, name string) error {
	c, err := r.Engine.Start(name)
	if err != nil {
		return err
	}
	f, err := c.Create("state")
	if err != nil {
		return err
	}
	if _, err := f.Write(State(name, r.ID)); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return c.Commit(ctx)
}

// Restart is a rank's step that restarts (collective) and checks that it
// got checkpoint name from source, with the bytes Write wrote.
func (r *Rank) Restart(ctx context.Context, name string, source engine.Source) error {
	res, err := r.Engine.Restart(ctx)
	if err != nil {
		return err
	}
	if res.Name() != name || res.Source != source {
		return fmt.Errorf("restored %s from %s, want %s from %s (skipped %+v)", res.Name(), res.Source, name, source, res.Skipped)
	}
	rd, err := res.Open("state")
	if err != nil {
		return err
	}
	defer rd.Close()
	got, err := io.ReadAll(rd)
	if err != nil {
		return err
	}
	if !bytes.Equal(got, State(name, r.ID)) {
		return fmt.Errorf("rank %d: restored bytes differ", r.ID)
	}
	return nil
}
