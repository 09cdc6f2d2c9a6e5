//go:build unix

package local_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ckpt/ckpt/internal/storage/local"
	"github.com/ckpt/ckpt/storage"
)

// Everything the backend creates — its root, the directories of a
// checkpoint, the objects, a writer's temp file — is the job's user's
// only, even with a umask that takes nothing away: the mode is the
// backend's, not the umask's.
func TestCreatedPrivate(t *testing.T) {
	defer syscall.Umask(syscall.Umask(0))
	top := t.TempDir()
	b, err := local.New(filepath.Join(top, "cache", "root"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := storage.Save(ctx, b, "ckpt.0001/rank-3/state.bin", strings.NewReader("data")); err != nil {
		t.Fatal(err)
	}
	w, err := b.Create(ctx, "ckpt.0002/rank-0/open.bin") // a temp file, not committed
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	seen := 0
	err = filepath.WalkDir(filepath.Join(top, "cache"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		want := local.FileMode
		if d.IsDir() {
			want = local.DirMode
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s: mode %v, want %v", p, got, want)
		}
		seen++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// cache, root, ckpt.0001, rank-3, state.bin, ckpt.0002, rank-0, the temp file.
	if seen != 8 {
		t.Errorf("walked %d entries, want 8", seen)
	}
	if local.DirMode != 0o700 || local.FileMode != 0o600 {
		t.Errorf("modes %v and %v, want 0700 and 0600", local.DirMode, local.FileMode)
	}
}

// A root that exists already keeps its mode: an administrator's shared
// directory is not the backend's to change.
func TestExistingRootKeepsItsMode(t *testing.T) {
	defer syscall.Umask(syscall.Umask(0))
	root := t.TempDir()
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := local.New(root); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(root); err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("existing root: %v, %v; want its mode 0755 kept", fi.Mode(), err)
	}
}
