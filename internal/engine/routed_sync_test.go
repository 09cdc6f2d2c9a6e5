package engine_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ckpt/ckpt/internal/cluster"
	"github.com/ckpt/ckpt/internal/engine"
)

// A file the application wrote at a routed path is synced, with its
// directory, before the commit in a cache that syncs its own files
// (node durability), and not in one that does not; a sync that fails
// fails the commit.
func TestRoutedFilesSynced(t *testing.T) {
	var mu sync.Mutex
	var synced []string
	var failOn string
	restore := engine.SetSyncRoutedPath(func(path string) error {
		mu.Lock()
		defer mu.Unlock()
		synced = append(synced, path)
		if failOn != "" && strings.HasSuffix(path, failOn) {
			return fmt.Errorf("injected: sync %s failed", path)
		}
		return nil
	})
	defer restore()
	commit := func(c *cluster.Cluster, name string) []error {
		return c.Run(func(ctx context.Context, r *cluster.Rank) error {
			cp, err := r.Engine.Start(name)
			if err != nil {
				return err
			}
			p, err := cp.Path("routed")
			if err != nil {
				return err
			}
			if err := os.WriteFile(p, []byte(fmt.Sprint("rank ", r.ID)), 0o600); err != nil {
				return err
			}
			return cp.Commit(ctx)
		})
	}
	for _, noSync := range []bool{false, true} {
		synced = nil
		c := cluster.New(t, cluster.Config{Ranks: 2, Nodes: 2, Scheme: "xor:2", NoSync: noSync})
		if err := errors.Join(commit(c, "c1")...); err != nil {
			t.Fatal(err)
		}
		files, dirs := 0, 0
		for _, p := range synced {
			switch filepath.Base(p) {
			case "routed":
				files++
			case "rank-0", "rank-1":
				dirs++
			}
		}
		if want := map[bool]int{false: 2, true: 0}[noSync]; files != want || dirs != want {
			t.Errorf("NoSync %v: synced %d routed files and %d directories, want %d of each (%v)", noSync, files, dirs, want, synced)
		}
	}
	failOn = "routed"
	c := cluster.New(t, cluster.Config{Ranks: 2, Nodes: 2, Scheme: "xor:2"})
	err := errors.Join(commit(c, "c2")...)
	if err == nil || !strings.Contains(err.Error(), "injected: sync") {
		t.Errorf("a routed file's sync failed: the commit said %v, want the sync's error", err)
	}
}
