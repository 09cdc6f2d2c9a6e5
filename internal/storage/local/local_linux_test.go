package local_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ckpt/ckpt/internal/storage/local"
	"github.com/ckpt/ckpt/storage"
)

// Failures made by the kernel rather than injected.

// TestWriteToFullDevice writes through a temp file that is /dev/full, where
// every write fails with a real ENOSPC.
func TestWriteToFullDevice(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skipf("no /dev/full: %v", err)
	}
	b := newBackend(t, t.TempDir(), local.WithHooks(local.Hooks{
		OpenTemp: func(string) (*os.File, error) { return os.OpenFile("/dev/full", os.O_WRONLY, 0) },
	}))
	ctx := t.Context()
	w, err := b.Create(ctx, "full/obj")
	if err != nil {
		t.Fatal(err)
	}
	_, err = w.Write([]byte("does not fit"))
	if !errors.Is(err, syscall.ENOSPC) || !storage.IsPermanent(err) {
		t.Fatalf("Write to a full device = %v, want a permanent ENOSPC", err)
	}
	// The failed write poisons the object: Commit must not publish it.
	if err := w.Commit(); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("Commit after a failed Write = %v, want the write's ENOSPC", err)
	}
	if _, err := b.Stat(ctx, "full/obj"); !errors.Is(err, storage.ErrNotExist) {
		t.Errorf("Stat after failed Commit = %v, want ErrNotExist", err)
	}
	if err := w.Abort(); err != nil {
		t.Errorf("Abort after failed Commit = %v", err)
	}
}

// TestFullFileSystem fills a small tmpfs, where writes fail with a real
// ENOSPC, and checks that the failed object frees its space. It needs the
// right to mount (root, or CAP_SYS_ADMIN).
func TestFullFileSystem(t *testing.T) {
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("cannot mount a small tmpfs (needs CAP_SYS_ADMIN): %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	b := newBackend(t, dir)
	ctx := t.Context()
	w, err := b.Create(ctx, "ckpt/big")
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 64<<10)
	written := 0
	for ; written < 4<<20; written += len(chunk) {
		if _, err = w.Write(chunk); err != nil {
			break
		}
	}
	if !errors.Is(err, syscall.ENOSPC) || !storage.IsPermanent(err) {
		t.Fatalf("writing 4 MiB to a 1 MiB tmpfs: error %v after %d bytes, want a permanent ENOSPC", err, written)
	}
	if err := w.Commit(); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("Commit after ENOSPC = %v", err)
	}
	if got := listAll(t, b); len(got) != 0 {
		t.Errorf("List = %q, want nothing", got)
	}
	if got := tempFiles(t, dir); len(got) != 0 {
		t.Errorf("temp files left: %q", got)
	}
	// The space of the failed object is free again.
	if _, err := storage.Save(ctx, b, "ckpt/small", strings.NewReader(strings.Repeat("s", 512<<10))); err != nil {
		t.Errorf("Save of 512 KiB after the failed object was discarded: %v", err)
	}
}

// makeReadOnly makes dir refuse new entries for real, even to root: with
// chmod for other users, with the immutable attribute (FS_IMMUTABLE_FL, as
// chattr +i) for root. It returns a function that undoes it.
func makeReadOnly(t *testing.T, dir string) (undo func()) {
	t.Helper()
	if os.Geteuid() != 0 {
		if err := os.Chmod(dir, 0o555); err != nil {
			t.Fatal(err)
		}
		undo = func() { os.Chmod(dir, 0o755) }
		t.Cleanup(undo)
		return undo
	}
	setFlags := func(on bool) error {
		f, err := os.Open(dir)
		if err != nil {
			return err
		}
		defer f.Close()
		flags, err := unix.IoctlGetInt(int(f.Fd()), unix.FS_IOC_GETFLAGS)
		if err != nil {
			return err
		}
		const immutable = 0x10 // FS_IMMUTABLE_FL in linux/fs.h
		if on {
			flags |= immutable
		} else {
			flags &^= immutable
		}
		return unix.IoctlSetPointerInt(int(f.Fd()), unix.FS_IOC_SETFLAGS, flags)
	}
	if err := setFlags(true); err != nil {
		t.Skipf("running as root, where chmod does not stop writes, and cannot set the immutable attribute on %s: %v", dir, err)
	}
	undo = func() {
		if err := setFlags(false); err != nil {
			t.Errorf("clear immutable attribute of %s: %v", dir, err)
		}
	}
	t.Cleanup(undo)
	return undo
}

func TestReadOnlyDirectory(t *testing.T) {
	root := t.TempDir()
	b := newBackend(t, root)
	ctx := t.Context()
	if _, err := storage.Save(ctx, b, "ro/old", strings.NewReader("old")); err != nil {
		t.Fatal(err)
	}
	// A writer started before the directory turned read-only.
	w, err := b.Create(ctx, "ro/new")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("new")); err != nil {
		t.Fatal(err)
	}
	undo := makeReadOnly(t, filepath.Join(root, "ro"))

	// Create fails at once.
	_, err = storage.Save(ctx, b, "ro/other", strings.NewReader("x"))
	if !errors.Is(err, fs.ErrPermission) || !storage.IsPermanent(err) {
		t.Errorf("Save into a read-only directory = %v, want a permanent permission error", err)
	}
	// Commit fails at the rename.
	err = w.Commit()
	if !errors.Is(err, fs.ErrPermission) || !storage.IsPermanent(err) {
		t.Errorf("Commit into a read-only directory = %v, want a permanent permission error", err)
	}
	// Reads still work; nothing new is visible.
	if got := listAll(t, b); !slices.Equal(got, []string{"ro/old"}) {
		t.Errorf("List = %q, want [ro/old]", got)
	}
	if got, err := storage.Load(ctx, b, "ro/old"); err != nil || string(got) != "old" {
		t.Errorf("Load(ro/old) = %q, %v", got, err)
	}
	if err := b.Remove(ctx, "ro/old"); !storage.IsPermanent(err) || !errors.Is(err, fs.ErrPermission) {
		t.Errorf("Remove from a read-only directory = %v, want a permanent permission error", err)
	}

	// The writer's temp file could not be removed either; once the
	// directory is writable again, CleanTemp does it.
	left := tempFiles(t, root)
	if len(left) != 1 {
		t.Errorf("temp files after the failed Commit = %q, want the writer's one", left)
	}
	undo()
	if n, err := b.CleanTemp(ctx, 0); err != nil || n != len(left) {
		t.Errorf("CleanTemp = %d, %v; want %d, nil", n, err, len(left))
	}
	if got := tempFiles(t, root); len(got) != 0 {
		t.Errorf("temp files after CleanTemp: %q", got)
	}
	if got := listAll(t, b); !slices.Equal(got, []string{"ro/old"}) {
		t.Errorf("List = %q, want [ro/old]", got)
	}
}

// WriteFile into a directory that refuses new entries for real fails,
// leaving the old file whole and no temp file, and writes once the
// directory takes entries again.
func TestWriteFileUnwritableDir(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "status")
	if err := local.WriteFile(path, []byte("old\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	undo := makeReadOnly(t, dir)
	if err := local.WriteFile(path, []byte("new\n"), 0o600); err == nil {
		t.Fatal("WriteFile into a read-only directory succeeded")
	}
	if err := local.WriteFileFrom(path, strings.NewReader("new\n"), 0o600); err == nil {
		t.Fatal("WriteFileFrom into a read-only directory succeeded")
	}
	undo()
	if b, err := os.ReadFile(path); err != nil || string(b) != "old\n" {
		t.Errorf("the old file became %q (%v)", b, err)
	}
	if es, err := os.ReadDir(dir); err != nil || len(es) != 1 {
		t.Errorf("directory holds %v (%v), want only the old file", es, err)
	}
	if err := local.WriteFile(path, []byte("new\n"), 0o600); err != nil {
		t.Errorf("WriteFile once the directory is writable again: %v", err)
	}
}
