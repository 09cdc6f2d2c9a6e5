package ckpt

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
)

// A flipped byte in a data file or a parity file is found by the
// verification and repaired from the set's redundancy, bit-exact.
func TestCorruptDataOrParityIsRebuilt(t *testing.T) {
	ctx := context.Background()
	for _, object := range []string{"c1/rank-1/f0.bin", "c1/rank-1.parity"} {
		t.Run(object, func(t *testing.T) {
			j := newTestJob(t, 8, 4, "xor:4")
			j.mustRun(func(r int, s *Store) error { return writeCheckpoint(ctx, s, "c1") })
			j.c.Corrupt(j.nodeOf(1), object)
			j.relaunch()
			j.mustRun(func(r int, s *Store) error {
				res, err := s.Restart(ctx)
				if err != nil {
					return err
				}
				if res.Source != SourceRebuild || len(res.Rebuilt) != 1 || res.Rebuilt[0] != 1 {
					return fmt.Errorf("source %s, rebuilt %v; want rank 1 rebuilt", res.Source, res.Rebuilt)
				}
				return checkRestored(ctx, s, res, "c1")
			})
		})
	}
}

// A corrupt manifest on one node is detected by its checksum; the other
// nodes' copies serve, and the restart writes a good copy back.
func TestCorruptManifestOnOneNode(t *testing.T) {
	ctx := context.Background()
	j := newTestJob(t, 8, 4, "xor:4")
	j.mustRun(func(r int, s *Store) error { return writeCheckpoint(ctx, s, "c1") })
	j.c.Corrupt(2, "c1/manifest")
	j.relaunch()
	j.mustRun(func(r int, s *Store) error {
		res, err := s.Restart(ctx)
		if err != nil {
			return err
		}
		return checkRestored(ctx, s, res, "c1")
	})
	list, err := j.stores[2].List(ctx)
	if err != nil || len(list) != 1 {
		t.Fatalf("node 2 lists %+v, %v after the restart; want the manifest written back", list, err)
	}
}

// Losing more members of a set than the scheme rebuilds falls back to an
// older checkpoint that survives, and says why; never wrong data.
func TestBeyondToleranceFallsBack(t *testing.T) {
	ctx := context.Background()
	j := newTestJob(t, 8, 4, "xor:4")
	j.mustRun(func(r int, s *Store) error { return writeCheckpoint(ctx, s, "old") })
	j.mustRun(func(r int, s *Store) error { return writeCheckpoint(ctx, s, "new") })
	// The new checkpoint disappears from two nodes: two members of every
	// XOR set, one more than it rebuilds. The old one survives.
	for _, n := range []int{0, 1} {
		j.c.Remove(n, "new/")
	}
	j.relaunch()
	j.mustRun(func(r int, s *Store) error {
		res, err := s.Restart(ctx)
		if err != nil {
			return err
		}
		if len(res.Skipped) != 1 || res.Skipped[0].Name != "new" || !strings.Contains(res.Skipped[0].Reason, "lost") {
			return fmt.Errorf("skipped %+v, want new skipped for lost ranks", res.Skipped)
		}
		return checkRestored(ctx, s, res, "old")
	})
	// With both checkpoints gone on two nodes nothing is recoverable.
	for _, n := range []int{0, 1} {
		j.loseNode(n)
	}
	j.relaunch()
	for r, err := range j.run(func(r int, s *Store) error { _, err := s.Restart(ctx); return err }) {
		if !errors.Is(err, ErrNoCheckpoint) {
			t.Errorf("rank %d: %v, want ErrNoCheckpoint", r, err)
		}
	}
}

// A rank that fails during Commit makes every rank's Commit fail; the
// previous checkpoint stays current and nothing of the failed one is listed.
func TestCommitFailureKeepsPreviousCheckpoint(t *testing.T) {
	ctx := context.Background()
	j := newTestJob(t, 8, 4, "xor:4")
	j.mustRun(func(r int, s *Store) error { return writeCheckpoint(ctx, s, "c1") })
	errs := j.run(func(r int, s *Store) error {
		c, err := s.Start("c2")
		if err != nil {
			return err
		}
		w, err := c.Create("f0.bin")
		if err != nil {
			return err
		}
		w.Write(content("c2", r, 0))
		if r == 5 {
			// Rank 5 dies before committing: its peers must not wait forever.
			s.comm.(*localComm).Fail(errors.New("killed"))
			return errors.New("killed")
		}
		w.Close()
		return c.Commit(ctx)
	})
	for r, err := range errs {
		if err == nil {
			t.Errorf("rank %d committed c2 although rank 5 died", r)
		}
	}
	j.relaunch()
	j.mustRun(func(r int, s *Store) error {
		list, err := s.List(ctx)
		if err != nil {
			return err
		}
		for _, i := range list {
			if i.Name == "c2" {
				return fmt.Errorf("c2 is listed after a failed commit")
			}
		}
		res, err := s.Restart(ctx)
		if err != nil {
			return err
		}
		return checkRestored(ctx, s, res, "c1")
	})
}

func TestBadNamesRejected(t *testing.T) {
	s, err := Open(Options{CacheDir: t.TempDir(), Node: "n"})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"", "..", "a/b", "../x", "a\x00b", ".hidden", strings.Repeat("x", 300)} {
		if _, err := s.Start(name); err == nil {
			t.Errorf("Start(%q) accepted", name)
		}
	}
	c, err := s.Start("ok")
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{"", "..", "a/b", "x\x00", "parity", strings.Repeat("y", 300)} {
		if _, err := c.Create(file); err == nil {
			t.Errorf("Create(%q) accepted", file)
		}
	}
	if _, err := c.Create("dup"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create("dup"); err == nil {
		t.Error("a second file with the same name accepted")
	}
}

// Files still open at Commit, and checkpoints never committed, leave
// nothing behind that List or Restart would take.
func TestUncommittedIsInvisible(t *testing.T) {
	ctx := context.Background()
	s, err := Open(Options{CacheDir: t.TempDir(), Node: "n"})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := s.Start("half")
	w, _ := c.Create("a")
	w.Write([]byte("partial"))
	if err := c.Commit(ctx); err == nil {
		t.Fatal("commit with an open file succeeded")
	}
	c2, _ := s.Start("never")
	w2, _ := c2.Create("a")
	w2.Write([]byte("x"))
	w2.Close() // closed but never committed
	if list, _ := s.List(ctx); len(list) != 0 {
		t.Errorf("list = %+v", list)
	}
	if _, err := s.Restart(ctx); !errors.Is(err, ErrNoCheckpoint) {
		t.Errorf("restart: %v", err)
	}
}

// SCR style: the application writes the file itself at the routed path.
func TestRoutedFile(t *testing.T) {
	ctx := context.Background()
	s, err := Open(Options{CacheDir: t.TempDir(), Node: "n"})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := s.Start("routed")
	p, err := c.Path("state.dat")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("written by the application"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := s.Restart(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rp, err := res.Path("state.dat")
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(rp); string(b) != "written by the application" {
		t.Errorf("read back %q", b)
	}
}

// Reusing a committed checkpoint's name would overwrite it before the new
// one exists: refused.
func TestStartExistingNameRefused(t *testing.T) {
	ctx := context.Background()
	s, err := Open(Options{CacheDir: t.TempDir(), Node: "n"})
	if err != nil {
		t.Fatal(err)
	}
	if err := writeCheckpoint(ctx, s, "c1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Start("c1"); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("Start of an existing name: %v", err)
	}
}
