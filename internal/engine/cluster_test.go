package engine_test

// Scenarios of the engine on an in-process cluster (internal/cluster):
// ranks on nodes commit, nodes are lost or objects corrupted, the job is
// relaunched and restarts.

import (
	"context"
	"fmt"
	"testing"

	"github.com/ckpt/ckpt/internal/cluster"
	"github.com/ckpt/ckpt/internal/engine"
)

// A checkpoint committed across nodes restarts from the caches as they
// are, every rank with its own bytes, and the next commit continues the
// sequence of IDs.
func TestCommitRestartAcrossNodes(t *testing.T) {
	for _, scheme := range []string{"partner", "xor:4", "rs:4+2"} {
		t.Run(scheme, func(t *testing.T) {
			c := cluster.New(t, cluster.Config{Ranks: 12, Nodes: 6, Scheme: scheme, Mem: true})
			c.MustRun(func(ctx context.Context, r *cluster.Rank) error { return r.Write(ctx, "c1") })
			c.MustRun(func(ctx context.Context, r *cluster.Rank) error { return r.Write(ctx, "c2") })
			c.Relaunch()
			c.MustRun(func(ctx context.Context, r *cluster.Rank) error {
				if err := r.Restart(ctx, "c2", engine.SourceCache); err != nil {
					return err
				}
				if err := r.Write(ctx, "c3"); err != nil {
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
			c.MustRun(func(ctx context.Context, r *cluster.Rank) error { return r.Write(ctx, "c1") })
			c.LoseNode(4)
			c.Relaunch()
			c.MustRun(func(ctx context.Context, r *cluster.Rank) error { return r.Restart(ctx, "c1", engine.SourceRebuild) })
		})
	}
}

// A flipped byte in a cache object is found and repaired.
func TestCorruptIsRebuilt(t *testing.T) {
	c := cluster.New(t, cluster.Config{Ranks: 4, Nodes: 4, Scheme: "xor:4", Mem: true})
	c.MustRun(func(ctx context.Context, r *cluster.Rank) error { return r.Write(ctx, "c1") })
	c.Corrupt(3, "c1/rank-3/state")
	c.Relaunch()
	c.MustRun(func(ctx context.Context, r *cluster.Rank) error { return r.Restart(ctx, "c1", engine.SourceRebuild) })
}

// Losing two nodes of an XOR set, one more than it rebuilds, falls back
// to the shared tier.
func TestDoubleLossFallsBackToShared(t *testing.T) {
	c := cluster.New(t, cluster.Config{Ranks: 8, Nodes: 4, Scheme: "xor:4", Shared: true, Mem: true})
	c.MustRun(func(ctx context.Context, r *cluster.Rank) error {
		if err := r.Write(ctx, "c1"); err != nil {
			return err
		}
		return r.Engine.Flush(ctx, "c1")
	})
	c.LoseNode(0)
	c.LoseNode(3)
	c.Relaunch()
	c.MustRun(func(ctx context.Context, r *cluster.Rank) error { return r.Restart(ctx, "c1", engine.SourceShared) })
}
