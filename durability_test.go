package ckpt

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/internal/cluster"
	"github.com/ckpt/ckpt/storage"
)

func TestParseDurability(t *testing.T) {
	for in, want := range map[string]Durability{"": DurableNode, "node": DurableNode, "process": DurableProcess} {
		if got, err := ParseDurability(in); err != nil || got != want {
			t.Errorf("ParseDurability(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := ParseDurability("fsync"); err == nil || !strings.Contains(err.Error(), `"fsync"`) {
		t.Errorf("ParseDurability(fsync): %v, want an error naming the value", err)
	}
	t.Setenv("CKPT_CACHE_DURABILITY", "sometimes")
	_, err := Open(Options{CacheDir: t.TempDir(), Node: "n"})
	if err == nil || !strings.Contains(err.Error(), "CKPT_CACHE_DURABILITY") || !strings.Contains(err.Error(), `"sometimes"`) {
		t.Errorf("Open with a bad CKPT_CACHE_DURABILITY: %v", err)
	}
}

// CKPT_CACHE_DURABILITY reaches the engine's cache, whose properties the
// uncoordinated strategy's message log follows (internal/rank's
// TestLogFollowsCacheDurability): process durability, a cache that does
// not sync; node or unset, one that does.
func TestCacheDurabilityReachesCache(t *testing.T) {
	for env, syncs := range map[string]bool{"": true, "node": true, "process": false} {
		t.Setenv("CKPT_CACHE_DURABILITY", env)
		s, err := Open(Options{Rank: 0, Size: 1, CacheDir: t.TempDir(), Node: "n"})
		if err != nil {
			t.Fatal(err)
		}
		if got := storage.PropertiesOf(s.eng.Cache).SyncsFiles; got != syncs {
			t.Errorf("CKPT_CACHE_DURABILITY=%q: the cache syncs its files = %v, want %v", env, got, syncs)
		}
		s.Close()
	}
}

// TestProcessDurableCache runs a job whose caches skip syncing, then
// truncates one node's data file as a machine crash before writeback would
// leave it: restart detects it and rebuilds the file from the XOR set.
func TestProcessDurableCache(t *testing.T) {
	ctx := context.Background()
	const ranks = 4
	t.Setenv("CKPT_CACHE_DURABILITY", "process")
	// The cluster gives the ranks and their nodes; each Store opens its
	// cache from the directory, so that the variable above governs it.
	c := cluster.New(t, cluster.Config{Ranks: ranks, Nodes: ranks, Scheme: "xor:4"})
	launch := func() []*Store {
		stores := make([]*Store, ranks)
		for _, r := range c.Ranks() {
			s, err := Open(Options{Rank: r.ID, Size: ranks, Node: r.NodeName, CacheDir: r.CacheDir,
				Redundancy: "xor:4", Comm: &localComm{r.Comm}, BlockSize: 4096})
			if err != nil {
				t.Fatal(err)
			}
			stores[r.ID] = s
		}
		return stores
	}
	all := func(stores []*Store, fn func(s *Store) error) {
		t.Helper()
		for r, err := range c.Run(func(ctx context.Context, r *cluster.Rank) error { return fn(stores[r.ID]) }) {
			if err != nil {
				t.Fatalf("rank %d: %v", r, err)
			}
		}
	}
	stores := launch()
	all(stores, func(s *Store) error { return writeCheckpoint(ctx, s, "ckpt-1") })
	for _, s := range stores {
		s.Close()
	}
	victim := filepath.Join(c.Ranks()[2].CacheDir, "ckpt-1", "rank-2", "f1.bin")
	fi, err := os.Stat(victim)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(victim, fi.Size()/2); err != nil {
		t.Fatal(err)
	}
	c.Relaunch()
	stores = launch()
	all(stores, func(s *Store) error {
		res, err := s.Restart(ctx)
		if err != nil {
			return err
		}
		if res.Source != SourceRebuild {
			return fmt.Errorf("restored from %s, want a rebuild", res.Source)
		}
		return checkRestored(ctx, s, res, "ckpt-1")
	})
}
