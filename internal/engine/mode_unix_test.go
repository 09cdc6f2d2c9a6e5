//go:build unix

package engine_test

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/ckpt/ckpt/internal/cluster"
	"github.com/ckpt/ckpt/internal/engine"
)

// Every directory and file a job's checkpoint puts in the caches and the
// shared tier is its user's only, even with a umask that takes
// nothing away and an application that writes its routed file
// world-readable: a checkpoint (one file created, one routed), its flush,
// and a restart that fetches it back from the shared tier onto spares.
func TestCheckpointFilesPrivate(t *testing.T) {
	root := t.TempDir()
	defer syscall.Umask(syscall.Umask(0))
	c := cluster.New(t, cluster.Config{Ranks: 4, Nodes: 4, Scheme: "xor:4", Shared: true, Dir: root})
	routed := func(r int) []byte { return []byte(fmt.Sprintf("routed by rank %d", r)) }
	c.MustRun(func(ctx context.Context, r *cluster.Rank) error {
		cp, err := r.Engine.Start("c1")
		if err != nil {
			return err
		}
		// Path first: its directory is then one Path makes, not one
		// Create made before it.
		p, err := cp.Path("routed")
		if err != nil {
			return err
		}
		if err := os.WriteFile(p, routed(r.ID), 0o666); err != nil {
			return err
		}
		f, err := cp.Create("state")
		if err != nil {
			return err
		}
		if _, err := f.Write(cluster.State("c1", r.ID)); err != nil {
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		if err := cp.Commit(ctx); err != nil {
			return err
		}
		return r.Engine.Flush(ctx, "c1")
	})
	if n := checkPrivate(t, root); n < 20 {
		t.Fatalf("walked %d entries below %s after the flush: the checkpoint was not where the test looked", n, root)
	}
	// Two nodes of the XOR set lost: only the shared tier has them.
	c.LoseNode(0)
	c.LoseNode(3)
	c.Relaunch()
	c.MustRun(func(ctx context.Context, r *cluster.Rank) error {
		if err := r.Restart(ctx, "c1", engine.SourceShared); err != nil {
			return err
		}
		got, err := os.ReadFile(filepath.Join(r.CacheDir, "c1", fmt.Sprintf("rank-%d", r.ID), "routed"))
		if err != nil || !bytes.Equal(got, routed(r.ID)) {
			return fmt.Errorf("rank %d: routed file restored as %q, %v", r.ID, got, err)
		}
		return nil
	})
	// The caches of six hosts (four, then two spares) and the shared
	// tier, each with the checkpoint's directories and files.
	if n := checkPrivate(t, root); n < 30 {
		t.Fatalf("walked %d entries below %s after the restart: the checkpoint was not where the test looked", n, root)
	}
}

// checkPrivate reports each entry below root (not root, the test's) that
// is readable beyond its user, and returns how many it checked.
func checkPrivate(t *testing.T, root string) int {
	t.Helper()
	checked := 0
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		fi, err := e.Info()
		if err != nil {
			return err
		}
		if fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s has mode %v: readable beyond the job's user", p, fi.Mode().Perm())
		}
		checked++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return checked
}
