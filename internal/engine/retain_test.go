package engine_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/ckpt/ckpt/internal/cachetier"
	"github.com/ckpt/ckpt/internal/cluster"
	"github.com/ckpt/ckpt/internal/engine"
	"github.com/ckpt/ckpt/storage"
)

// loseParityAtCommit arms the loss of two members of checkpoint name's
// XOR set, one more than it rebuilds: when node 1 writes the manifest
// (every rank's parity is durable by then), ranks 1 and 2 lose their
// parity. The commit succeeds, and its retention already sees the damage.
func loseParityAtCommit(c *cluster.Cluster, name string) {
	c.OnCreate(1, func(o string) bool { return o == cachetier.ManifestObject(name) }, func() {
		c.Remove(1, cachetier.ParityObject(name, 1))
		c.Remove(2, cachetier.ParityObject(name, 2))
	})
}

// With the caches keeping one checkpoint, newer checkpoints damaged beyond
// repair do not cost the job its last recoverable one: it stays on every
// node, and a restart restores it.
func TestRetainKeepsNewestRecoverable(t *testing.T) {
	c := cluster.New(t, cluster.Config{Ranks: 4, Nodes: 4, Scheme: "xor:4", Mem: true, KeepCache: 1})
	write := func(name string) {
		c.MustRun(func(ctx context.Context, r *cluster.Rank) error { return r.Write(ctx, name) })
	}
	want := func(names ...string) {
		t.Helper()
		for n := range 4 {
			if got := c.Checkpoints(n); !slices.Equal(got, names) {
				t.Errorf("node %d holds %v, want %v", n, got, names)
			}
		}
	}
	write("c1")
	write("c2")
	want("c2") // healthy: order alone
	loseParityAtCommit(c, "c3")
	write("c3")
	want("c3", "c2")
	loseParityAtCommit(c, "c4")
	write("c4")
	want("c4", "c2") // c3 goes: it was beyond repair
	for n := range 4 {
		if _, err := c.Cache(n).Stat(context.Background(), cachetier.FileObject("c3", n, "state")); !errors.Is(err, storage.ErrNotExist) {
			t.Errorf("node %d: c3's data left behind (%v)", n, err)
		}
	}
	c.Relaunch()
	c.MustRun(func(ctx context.Context, r *cluster.Rank) error { return r.Restart(ctx, "c2", engine.SourceCache) })
}

// A checkpoint a set could rebuild is recoverable: retention keeps it as
// the newest recoverable and lets the older one go.
func TestRetainCountsRebuildableAsRecoverable(t *testing.T) {
	c := cluster.New(t, cluster.Config{Ranks: 4, Nodes: 4, Scheme: "xor:4", Mem: true, KeepCache: 1})
	for _, name := range []string{"c1", "c2"} {
		if name == "c2" {
			// One member lost: XOR rebuilds it.
			c.OnCreate(1, func(o string) bool { return o == cachetier.ManifestObject(name) }, func() {
				c.Remove(2, cachetier.ParityObject(name, 2))
			})
		}
		c.MustRun(func(ctx context.Context, r *cluster.Rank) error { return r.Write(ctx, name) })
	}
	for n := range 4 {
		if got := c.Checkpoints(n); !slices.Equal(got, []string{"c2"}) {
			t.Errorf("node %d holds %v, want [c2]", n, got)
		}
	}
	c.Relaunch()
	c.MustRun(func(ctx context.Context, r *cluster.Rank) error { return r.Restart(ctx, "c2", engine.SourceRebuild) })
}
