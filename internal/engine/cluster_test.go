package engine_test

// Scenarios of the engine on an in-process cluster (internal/cluster):
// ranks on nodes commit, nodes are lost or objects corrupted, the job is
// relaunched and restarts.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/ckpt/ckpt/internal/cluster"
	"github.com/ckpt/ckpt/internal/engine"
)

// data is what rank r writes into checkpoint name: sizes differ between
// ranks and span several 4 KiB blocks.
func data(name string, r int) []byte {
	return bytes.Repeat([]byte(fmt.Sprintf("%s rank %d;", name, r)), 500+97*r)
}

func write(ctx context.Context, r *cluster.Rank, name string) error {
	c, err := r.Engine.Start(name)
	if err != nil {
		return err
	}
	f, err := c.Create("state")
	if err != nil {
		return err
	}
	if _, err := f.Write(data(name, r.ID)); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return c.Commit(ctx)
}

// restart restarts a rank and checks that it got name from source, with
// the bytes it wrote.
func restart(ctx context.Context, r *cluster.Rank, name, source string) error {
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
	if !bytes.Equal(got, data(name, r.ID)) {
		return fmt.Errorf("rank %d: restored bytes differ", r.ID)
	}
	return nil
}

// A checkpoint committed across nodes restarts from the caches as they
// are, every rank with its own bytes, and the next commit continues the
// sequence of IDs.
func TestCommitRestartAcrossNodes(t *testing.T) {
	for _, scheme := range []string{"partner", "xor:4", "rs:4+2"} {
		t.Run(scheme, func(t *testing.T) {
			c := cluster.New(t, cluster.Config{Ranks: 12, Nodes: 6, Scheme: scheme, Mem: true})
			c.MustRun(func(ctx context.Context, r *cluster.Rank) error { return write(ctx, r, "c1") })
			c.MustRun(func(ctx context.Context, r *cluster.Rank) error { return write(ctx, r, "c2") })
			c.Relaunch()
			c.MustRun(func(ctx context.Context, r *cluster.Rank) error {
				if err := restart(ctx, r, "c2", engine.SourceCache); err != nil {
					return err
				}
				if err := write(ctx, r, "c3"); err != nil {
					return err
				}
				if id := r.Engine.LastID(); id != 3 {
					return fmt.Errorf("c3 has ID %d, want 3", id)
				}
				return nil
			})
		})
	}
}

// A lost node's share is rebuilt from its sets, onto the spare that took
// its place.
func TestLoseNodeRebuilds(t *testing.T) {
	for _, scheme := range []string{"partner", "xor:4", "rs:4+2"} {
		t.Run(scheme, func(t *testing.T) {
			c := cluster.New(t, cluster.Config{Ranks: 12, Nodes: 6, Scheme: scheme, Mem: true})
			c.MustRun(func(ctx context.Context, r *cluster.Rank) error { return write(ctx, r, "c1") })
			c.LoseNode(4)
			c.Relaunch()
			c.MustRun(func(ctx context.Context, r *cluster.Rank) error { return restart(ctx, r, "c1", engine.SourceRebuild) })
		})
	}
}

// A flipped byte in a cache object is found and repaired.
func TestCorruptIsRebuilt(t *testing.T) {
	c := cluster.New(t, cluster.Config{Ranks: 4, Nodes: 4, Scheme: "xor:4", Mem: true})
	c.MustRun(func(ctx context.Context, r *cluster.Rank) error { return write(ctx, r, "c1") })
	c.Corrupt(3, "c1/rank-3/state")
	c.Relaunch()
	c.MustRun(func(ctx context.Context, r *cluster.Rank) error { return restart(ctx, r, "c1", engine.SourceRebuild) })
}

// Losing two nodes of an XOR set, one more than it rebuilds, falls back
// to the shared tier.
func TestDoubleLossFallsBackToShared(t *testing.T) {
	c := cluster.New(t, cluster.Config{Ranks: 8, Nodes: 4, Scheme: "xor:4", Shared: true, Mem: true})
	c.MustRun(func(ctx context.Context, r *cluster.Rank) error {
		if err := write(ctx, r, "c1"); err != nil {
			return err
		}
		return r.Engine.Flush(ctx, "c1")
	})
	c.LoseNode(0)
	c.LoseNode(3)
	c.Relaunch()
	c.MustRun(func(ctx context.Context, r *cluster.Rank) error { return restart(ctx, r, "c1", engine.SourceShared) })
}
