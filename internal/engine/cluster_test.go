package engine_test

// Scenarios of the engine on an in-process cluster (internal/cluster):
// ranks on nodes commit, nodes are lost or objects corrupted, the job is
// relaunched and restarts.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/ckpt/ckpt/internal/cachetier"
	"github.com/ckpt/ckpt/internal/cluster"
	"github.com/ckpt/ckpt/internal/engine"
	"github.com/ckpt/ckpt/storage"
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

// A corrupt manifest in one node's cache neither fails the restart nor
// skips the checkpoint: the node offers none, its ranks' files are checked
// against the other nodes' manifest like any others, used when intact and
// rebuilt when not, and the manifest is written back.
func TestCorruptManifestOnOneNode(t *testing.T) {
	for _, tc := range []struct {
		what    string
		dataToo bool
		source  engine.Source
	}{
		{"files intact", false, engine.SourceCache},
		{"files corrupt too", true, engine.SourceRebuild},
	} {
		t.Run(tc.what, func(t *testing.T) {
			c := cluster.New(t, cluster.Config{Ranks: 4, Nodes: 4, Scheme: "xor:4", Mem: true})
			c.MustRun(func(ctx context.Context, r *cluster.Rank) error { return r.Write(ctx, "c1") })
			c.Corrupt(2, cachetier.ManifestObject("c1"))
			if tc.dataToo {
				c.Corrupt(2, cachetier.FileObject("c1", 2, "state"))
			}
			if got := c.Checkpoints(2); len(got) != 0 {
				t.Fatalf("node 2 lists %v with its manifest corrupt", got)
			}
			c.Relaunch()
			c.MustRun(func(ctx context.Context, r *cluster.Rank) error { return r.Restart(ctx, "c1", tc.source) })
			if got := c.Checkpoints(2); !slices.Equal(got, []string{"c1"}) {
				t.Errorf("node 2 lists %v after the restart, want its manifest written back", got)
			}
		})
	}
}

// A rank that cannot write its part (its node's disk is full) fails the
// checkpoint for every rank at once: each returns an error instead of
// waiting in Commit for a rank that gave up, the previous checkpoint
// stays current, and the job goes on to commit the next one.
func TestFailedWriteFailsEveryRank(t *testing.T) {
	c := cluster.New(t, cluster.Config{Ranks: 4, Nodes: 2, Scheme: "xor:2", Mem: true})
	c.MustRun(func(ctx context.Context, r *cluster.Rank) error { return r.Write(ctx, "c1") })
	errs := make([]error, 4)
	c.MustRun(func(ctx context.Context, r *cluster.Rank) error {
		ck, err := r.Engine.Start("c2")
		if err != nil {
			return err
		}
		f, err := ck.Create("state")
		if err != nil {
			return err
		}
		if r.ID == 1 {
			f.Write([]byte("half a state"))
			errs[1] = ck.Fail(ctx, fmt.Errorf("write state: %w", syscall.ENOSPC))
			return nil
		}
		f.Write(cluster.State("c2", r.ID))
		if err := f.Close(); err != nil {
			return err
		}
		errs[r.ID] = ck.Commit(ctx)
		return nil
	})
	for r, err := range errs {
		switch {
		case err == nil:
			t.Fatalf("rank %d committed c2, which rank 1 could not write", r)
		case r == 1 && !errors.Is(err, syscall.ENOSPC):
			t.Fatalf("rank 1's error %v does not say why", err)
		case r != 1 && !strings.Contains(err.Error(), "rank 1: write state: "+syscall.ENOSPC.Error()):
			t.Fatalf("rank %d's error %v does not name rank 1 and its reason", r, err)
		case !errors.Is(err, engine.ErrCheckpointFailed):
			t.Fatalf("rank %d's error %v is not ErrCheckpointFailed: the ranks failed together and may go on", r, err)
		}
	}
	// Nothing of c2 is left in any cache: no torn checkpoint to restore,
	// no space held on a full disk.
	for _, r := range c.Ranks() {
		err := r.Cache.List(context.Background(), "c2/", func(i storage.Info) error {
			return fmt.Errorf("node %s still holds %s", r.NodeName, i.Name)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	c.MustRun(func(ctx context.Context, r *cluster.Rank) error { return r.Write(ctx, "c3") })
	c.Relaunch()
	c.MustRun(func(ctx context.Context, r *cluster.Rank) error { return r.Restart(ctx, "c3", engine.SourceCache) })
}
