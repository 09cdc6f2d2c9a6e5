package ckpt

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ckpt/ckpt/internal/testwait"
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

// TestProcessDurableCache runs a job whose caches skip syncing, then
// truncates one node's data file as a machine crash before writeback would
// leave it: restart detects it and rebuilds the file from the XOR set.
func TestProcessDurableCache(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	const ranks = 4
	t.Setenv("CKPT_CACHE_DURABILITY", "process")
	launch := func() []*Store {
		comms := LocalJob(ranks)
		stores := make([]*Store, ranks)
		for r := range stores {
			node := fmt.Sprintf("node%d", r)
			s, err := Open(Options{Rank: r, Size: ranks, Node: node, CacheDir: filepath.Join(root, node),
				Redundancy: "xor:4", Comm: comms[r], BlockSize: 4096})
			if err != nil {
				t.Fatal(err)
			}
			stores[r] = s
		}
		return stores
	}
	all := func(stores []*Store, fn func(s *Store) error) {
		t.Helper()
		errs := make([]error, len(stores))
		var wg sync.WaitGroup
		for r, s := range stores {
			wg.Go(func() { errs[r] = fn(s) })
		}
		testwait.Group(t, &wg, "the ranks")
		for r, err := range errs {
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
	victim := filepath.Join(root, "node2", "ckpt-1", "rank-2", "f1.bin")
	fi, err := os.Stat(victim)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(victim, fi.Size()/2); err != nil {
		t.Fatal(err)
	}
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
