package cluster_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/internal/cluster"
	"github.com/ckpt/ckpt/internal/engine"
	"github.com/ckpt/ckpt/internal/localcomm"
)

// A partition in the middle of the job makes the next commit fail on both
// sides, promptly, and leaves no checkpoint; after Heal a relaunched job
// commits again.
func TestPartitionFailsCommitOnBothSides(t *testing.T) {
	c := cluster.New(t, cluster.Config{Ranks: 8, Nodes: 4, Scheme: "xor:4", Mem: true})
	c.MustRun(func(ctx context.Context, r *cluster.Rank) error { return r.Write(ctx, "c1") })
	c.Partition(0, 1)
	for r, err := range c.Run(func(ctx context.Context, r *cluster.Rank) error { return r.Write(ctx, "c2") }) {
		if !errors.Is(err, localcomm.ErrPartitioned) {
			t.Errorf("rank %d: commit across a partition: %v, want ErrPartitioned", r, err)
		}
	}
	// The cut holds for a relaunch until it heals.
	c.Relaunch()
	for r, err := range c.Run(func(ctx context.Context, r *cluster.Rank) error { _, err := r.Engine.Restart(ctx); return err }) {
		if !errors.Is(err, localcomm.ErrPartitioned) {
			t.Errorf("rank %d: restart across a partition: %v, want ErrPartitioned", r, err)
		}
	}
	c.Heal()
	c.Relaunch()
	c.MustRun(func(ctx context.Context, r *cluster.Rank) error { return r.Restart(ctx, "c1", engine.SourceCache) })
	c.MustRun(func(ctx context.Context, r *cluster.Rank) error { return r.Write(ctx, "c3") })
	for n := range 4 {
		if got := c.Checkpoints(n); strings.Join(got, " ") != "c3 c1" {
			t.Errorf("node %d holds %v, want c3 c1 (c2 never committed)", n, got)
		}
	}
}

// A partition that comes in the middle of a commit, as the sets start to
// encode, fails the commit on every rank and hangs none. (That a transfer
// already blocked across the cut is woken is localcomm's own test.)
func TestPartitionDuringEncode(t *testing.T) {
	c := cluster.New(t, cluster.Config{Ranks: 4, Nodes: 4, Scheme: "xor:4", Mem: true})
	c.OnCreate(0, func(object string) bool { return strings.HasSuffix(object, ".parity") }, func() { c.Partition(0) })
	for r, err := range c.Run(func(ctx context.Context, r *cluster.Rank) error { return r.Write(ctx, "c1") }) {
		if !errors.Is(err, localcomm.ErrPartitioned) {
			t.Errorf("rank %d: %v, want ErrPartitioned", r, err)
		}
	}
}

// LoseNode during a commit makes every rank's commit fail; no node shows
// the checkpoint, and the previous one is restored after the relaunch,
// the lost node's share rebuilt. The node is lost while the sets encode
// (it starts its parity), before it (it writes its data), or as it
// writes the commit marker (the survivors must then remove theirs).
func TestLoseNodeDuringCommit(t *testing.T) {
	for _, at := range []string{".parity", "/state", "/manifest"} {
		t.Run(at, func(t *testing.T) {
			c := cluster.New(t, cluster.Config{Ranks: 8, Nodes: 4, Scheme: "xor:4"})
			c.MustRun(func(ctx context.Context, r *cluster.Rank) error { return r.Write(ctx, "c1") })
			c.LoseNodeAt(2, func(object string) bool { return strings.HasPrefix(object, "c2/") && strings.HasSuffix(object, at) })
			for r, err := range c.Run(func(ctx context.Context, r *cluster.Rank) error { return r.Write(ctx, "c2") }) {
				if err == nil {
					t.Errorf("rank %d committed c2 although node 2 was lost during the commit", r)
				}
			}
			for n := range 4 {
				if n == 2 {
					continue // lost
				}
				if got := c.Checkpoints(n); strings.Join(got, " ") != "c1" {
					t.Errorf("node %d holds %v after the failed commit, want only c1", n, got)
				}
			}
			c.Relaunch()
			if c.NodeName(2) == "node2" {
				t.Fatal("the lost node's slot was not given a spare")
			}
			c.MustRun(func(ctx context.Context, r *cluster.Rank) error { return r.Restart(ctx, "c1", engine.SourceRebuild) })
		})
	}
}

// Relaunch after LoseNode restarts from the rebuilt checkpoint, and the
// rebuilt caches are whole: the next relaunch needs nothing rebuilt.
func TestRelaunchAfterLoseNodeRestartsFromRebuild(t *testing.T) {
	c := cluster.New(t, cluster.Config{Ranks: 6, Nodes: 3, Scheme: "partner"})
	c.MustRun(func(ctx context.Context, r *cluster.Rank) error { return r.Write(ctx, "c1") })
	c.LoseNode(1)
	if _, err := c.Cache(1).Stat(context.Background(), "c1/manifest"); !errors.Is(err, cluster.ErrNodeLost) {
		t.Errorf("the lost node's cache answers: %v", err)
	}
	c.Relaunch()
	if got := c.Checkpoints(1); len(got) != 0 {
		t.Fatalf("the spare's cache holds %v, want nothing", got)
	}
	c.MustRun(func(ctx context.Context, r *cluster.Rank) error { return r.Restart(ctx, "c1", engine.SourceRebuild) })
	c.Relaunch()
	c.MustRun(func(ctx context.Context, r *cluster.Rank) error { return r.Restart(ctx, "c1", engine.SourceCache) })
}

// LoseNode between steps: the lost node's ranks do not run, the others'
// collective fails instead of waiting for them.
func TestLostNodesRanksFailTheStep(t *testing.T) {
	c := cluster.New(t, cluster.Config{Ranks: 4, Nodes: 2, Scheme: "partner", Mem: true})
	c.LoseNode(0)
	for r, err := range c.Run(func(ctx context.Context, r *cluster.Rank) error { return r.Write(ctx, "c1") }) {
		want := error(nil)
		if r%2 == 0 {
			want = cluster.ErrNodeLost
		}
		if err == nil || want != nil && !errors.Is(err, want) {
			t.Errorf("rank %d: %v, want an error (%v)", r, err, want)
		}
	}
}
