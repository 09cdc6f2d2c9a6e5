package ckpt

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/internal/cachetier"
	"github.com/ckpt/ckpt/internal/sharedtier"
	"github.com/ckpt/ckpt/internal/storage/local"
	"github.com/ckpt/ckpt/storage"
)

func (j *testJob) withShared() storage.Backend {
	b := j.c.Shared()
	for _, s := range j.stores {
		s.eng.Shared = b
	}
	return b
}

// Lightweight storage (paper 000): one object per rank and one manifest.
func TestFlushLayout(t *testing.T) {
	ctx := context.Background()
	j := newTestJob(t, 8, 4, "xor:4")
	shared := j.withShared()
	j.mustRun(func(r int, s *Store) error {
		if err := writeCheckpoint(ctx, s, "c1"); err != nil {
			return err
		}
		return s.Flush(ctx, "c1")
	})
	var names []string
	shared.List(ctx, "", func(i storage.Info) error { names = append(names, i.Name); return nil })
	if len(names) != 9 || names[0] != "c1.manifest" && names[len(names)-1] != "c1.manifest" {
		t.Errorf("shared tier holds %v, want 8 rank objects and one manifest", names)
	}
}

// All caches lost: the checkpoint comes back from the shared tier, is
// verified, and is protected in the caches again.
func TestRestartFromShared(t *testing.T) {
	ctx := context.Background()
	j := newTestJob(t, 8, 4, "xor:4")
	j.withShared()
	j.mustRun(func(r int, s *Store) error {
		if err := writeCheckpoint(ctx, s, "c1"); err != nil {
			return err
		}
		return s.Flush(ctx, "c1")
	})
	for n := 0; n < 4; n++ {
		j.loseNode(n)
	}
	j.relaunch()
	j.withShared()
	j.mustRun(func(r int, s *Store) error {
		res, err := s.Restart(ctx)
		if err != nil {
			return err
		}
		if res.Source != SourceShared {
			return fmt.Errorf("source %s, want shared", res.Source)
		}
		return checkRestored(ctx, s, res, "c1")
	})
	// Re-protected: losing one node now is rebuilt from the cache.
	j.loseNode(2)
	j.relaunch()
	j.withShared()
	j.mustRun(func(r int, s *Store) error {
		res, err := s.Restart(ctx)
		if err != nil {
			return err
		}
		if res.Source != SourceRebuild {
			return fmt.Errorf("source %s, want rebuild", res.Source)
		}
		// A new commit continues the sequence after the fetched checkpoint.
		if err := writeCheckpoint(ctx, s, "c2"); err != nil {
			return err
		}
		list, _ := s.List(ctx)
		if list[0].Name != "c2" || list[0].ID != res.ID()+1 {
			return fmt.Errorf("after c1 (id %d) the new checkpoint is %+v", res.ID(), list[0])
		}
		return nil
	})
}

// A corrupt object on the shared tier is detected when fetched; the
// restart reports it and falls back to an older checkpoint.
func TestCorruptSharedObjectFallsBack(t *testing.T) {
	ctx := context.Background()
	j := newTestJob(t, 4, 2, "partner")
	j.withShared()
	for _, name := range []string{"c1", "c2"} {
		j.mustRun(func(r int, s *Store) error {
			if err := writeCheckpoint(ctx, s, name); err != nil {
				return err
			}
			return s.Flush(ctx, name)
		})
	}
	j.c.CorruptShared("c2/rank-1.data")
	for n := 0; n < 2; n++ {
		j.loseNode(n)
	}
	j.relaunch()
	j.withShared()
	j.mustRun(func(r int, s *Store) error {
		res, err := s.Restart(ctx)
		if err != nil {
			return err
		}
		if len(res.Skipped) != 1 || res.Skipped[0].Name != "c2" || !strings.Contains(res.Skipped[0].Reason, "corrupt") {
			return fmt.Errorf("skipped %+v, want c2 for corruption", res.Skipped)
		}
		return checkRestored(ctx, s, res, "c1")
	})
}

// A shared tier that refuses writes fails the flush on every rank, leaves
// no manifest there, and the cached checkpoint intact.
func TestFlushFailureLeavesNothing(t *testing.T) {
	ctx := context.Background()
	j := newTestJob(t, 4, 2, "partner")
	shared := j.withShared()
	j.mustRun(func(r int, s *Store) error { return writeCheckpoint(ctx, s, "c1") })
	full, err := local.New(filepath.Join(t.TempDir(), "full"), local.WithHooks(local.Hooks{
		SyncFile: func(f *os.File) error { return fmt.Errorf("sync %s: %w", f.Name(), errNoSpace) },
	}))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range j.stores {
		s.eng.Shared = full
	}
	for r, err := range j.run(func(r int, s *Store) error { return s.Flush(ctx, "c1") }) {
		if err == nil {
			t.Errorf("rank %d: flush to a full tier succeeded", r)
		}
	}
	if ms, _ := sharedtier.List(ctx, full); len(ms) != 0 {
		t.Errorf("the failed flush left %d manifests", len(ms))
	}
	_ = shared
	j.relaunch()
	j.mustRun(func(r int, s *Store) error {
		res, err := s.Restart(ctx)
		if err != nil {
			return err
		}
		return checkRestored(ctx, s, res, "c1")
	})
}

var errNoSpace = errors.New("no space left on device")

// Retention keeps the newest K per tier and never the only checkpoint.
func TestRetention(t *testing.T) {
	ctx := context.Background()
	j := newTestJob(t, 4, 2, "partner")
	shared := j.withShared()
	for _, s := range j.stores {
		s.eng.KeepCache, s.eng.KeepShared = 2, 1
	}
	for i := 1; i <= 4; i++ {
		name := fmt.Sprintf("c%d", i)
		j.mustRun(func(r int, s *Store) error {
			if err := writeCheckpoint(ctx, s, name); err != nil {
				return err
			}
			return s.Flush(ctx, name)
		})
	}
	for n := 0; n < 2; n++ {
		list, _ := cachetier.List(ctx, j.c.Cache(n))
		if len(list) != 2 || list[0].Name != "c4" || list[1].Name != "c3" {
			t.Errorf("node %d keeps %d checkpoints, want c4 and c3", n, len(list))
		}
		var left []string
		j.c.Cache(n).List(ctx, "c1", func(i storage.Info) error { left = append(left, i.Name); return nil })
		if len(left) != 0 {
			t.Errorf("node %d still holds %v of c1", n, left)
		}
	}
	ms, _ := sharedtier.List(ctx, shared)
	if len(ms) != 1 || ms[0].Name != "c4" {
		t.Errorf("shared tier keeps %d checkpoints", len(ms))
	}
}

// CKPT_SHARED names the shared tier when the options do not.
func TestSharedFromEnvironment(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	t.Setenv("CKPT_SHARED", dir)
	s, err := Open(Options{CacheDir: t.TempDir(), Node: "n"})
	if err != nil {
		t.Fatal(err)
	}
	if err := writeCheckpoint(ctx, s, "c1"); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx, "c1"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "c1.manifest")); err != nil {
		t.Errorf("no manifest in CKPT_SHARED: %v", err)
	}
}
