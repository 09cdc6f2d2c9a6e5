package local_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/storage/local"
	"github.com/ckpt/ckpt/storage"
	"github.com/ckpt/ckpt/storage/storagetest"
)

func TestBackend(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Backend {
		return newBackend(t, t.TempDir())
	})
}

func newBackend(t testing.TB, dir string, opts ...local.Option) *local.Backend {
	t.Helper()
	b, err := local.New(dir, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestMain doubles as the crashing writer of TestCrashedWriter: run with
// crashEnv set, the test binary starts an object, writes part of it and
// kills itself before Commit.
func TestMain(m *testing.M) {
	if dir := os.Getenv(crashEnv); dir != "" {
		crashWhileWriting(dir)
	}
	os.Exit(m.Run())
}

const crashEnv = "CKPT_LOCAL_TEST_CRASH_DIR"

func crashWhileWriting(dir string) {
	b, err := local.New(dir)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	if _, err := storage.Save(ctx, b, "ckpt.0000/MANIFEST", strings.NewReader("complete")); err != nil {
		panic(err)
	}
	w, err := b.Create(ctx, "ckpt.0001/rank-0/state.bin")
	if err != nil {
		panic(err)
	}
	if _, err := w.Write(make([]byte, 1<<20)); err != nil {
		panic(err)
	}
	p, _ := os.FindProcess(os.Getpid())
	p.Kill() // SIGKILL: no deferred call, no Abort
	select {}
}

// tempFiles returns the temp files under dir, relative to it.
func tempFiles(t *testing.T, dir string) []string {
	t.Helper()
	var found []string
	err := filepath.WalkDir(dir, func(path string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.HasPrefix(de.Name(), storage.TempPrefix) {
			rel, _ := filepath.Rel(dir, path)
			found = append(found, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

func listAll(t *testing.T, b storage.Backend) []string {
	t.Helper()
	var names []string
	if err := b.List(t.Context(), "", func(info storage.Info) error {
		names = append(names, info.Name)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return names
}

func TestCrashedWriter(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashEnv+"="+dir)
	out, err := cmd.CombinedOutput()
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.Exited() {
		t.Fatalf("crashing writer: want death by signal, got %v\n%s", err, out)
	}

	// The next process sees the committed object and not the torn one.
	b := newBackend(t, dir)
	ctx := t.Context()
	if got := listAll(t, b); !slices.Equal(got, []string{"ckpt.0000/MANIFEST"}) {
		t.Errorf("List after crash = %q, want only the committed manifest", got)
	}
	if _, err := b.Stat(ctx, "ckpt.0001/rank-0/state.bin"); !errors.Is(err, storage.ErrNotExist) {
		t.Errorf("Stat of the torn object = %v, want ErrNotExist", err)
	}
	leftovers := tempFiles(t, dir)
	if len(leftovers) != 1 || !strings.HasPrefix(leftovers[0], "ckpt.0001/rank-0/"+storage.TempPrefix) {
		t.Fatalf("temp files after crash = %q, want one in ckpt.0001/rank-0", leftovers)
	}

	// A recent temp file may belong to a live writer: kept.
	if n, err := b.CleanTemp(ctx, time.Hour); err != nil || n != 0 {
		t.Errorf("CleanTemp(1h) of a fresh temp file = %d, %v; want 0, nil", n, err)
	}
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(filepath.Join(dir, leftovers[0]), old, old); err != nil {
		t.Fatal(err)
	}
	if n, err := b.CleanTemp(ctx, time.Hour); err != nil || n != 1 {
		t.Errorf("CleanTemp(1h) of a 2h old temp file = %d, %v; want 1, nil", n, err)
	}
	if got := tempFiles(t, dir); len(got) != 0 {
		t.Errorf("temp files after CleanTemp = %q", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "ckpt.0001")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("CleanTemp left the emptied directory ckpt.0001: %v", err)
	}
	if got, err := storage.Load(ctx, b, "ckpt.0000/MANIFEST"); err != nil || string(got) != "complete" {
		t.Errorf("manifest after CleanTemp = %q, %v", got, err)
	}
}

func TestAbandonedWriter(t *testing.T) {
	// A writer that is neither committed nor aborted, seen from another
	// backend on the same directory, as after a restart.
	dir := t.TempDir()
	ctx := t.Context()
	w, err := newBackend(t, dir).Create(ctx, "x/abandoned")
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("torn"))
	b := newBackend(t, dir)
	if got := listAll(t, b); len(got) != 0 {
		t.Errorf("List = %q, want nothing", got)
	}
	if _, err := b.Stat(ctx, "x/abandoned"); !errors.Is(err, storage.ErrNotExist) {
		t.Errorf("Stat = %v, want ErrNotExist", err)
	}
	if n, err := b.CleanTemp(ctx, 0); err != nil || n != 1 {
		t.Fatalf("CleanTemp(0) = %d, %v; want 1, nil", n, err)
	}
	// The writer's file is gone: its Commit must fail and publish nothing.
	if err := w.Commit(); err == nil {
		t.Errorf("Commit after its temp file was cleaned: no error")
	}
	if _, err := b.Stat(ctx, "x/abandoned"); !errors.Is(err, storage.ErrNotExist) {
		t.Errorf("Stat after failed Commit = %v, want ErrNotExist", err)
	}
	if got := tempFiles(t, dir); len(got) != 0 {
		t.Errorf("temp files = %q", got)
	}
}

func TestCleanTempKeepsLiveWriter(t *testing.T) {
	b := newBackend(t, t.TempDir())
	ctx := t.Context()
	w, err := b.Create(ctx, "live/obj")
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("part 1, "))
	if n, err := b.CleanTemp(ctx, time.Minute); err != nil || n != 0 {
		t.Fatalf("CleanTemp = %d, %v; want 0, nil", n, err)
	}
	w.Write([]byte("part 2"))
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	if got, err := storage.Load(ctx, b, "live/obj"); err != nil || string(got) != "part 1, part 2" {
		t.Errorf("Load = %q, %v", got, err)
	}
}

// TestCommitFaults injects failures at each step of Commit.
func TestCommitFaults(t *testing.T) {
	for _, c := range []struct {
		name      string
		hooks     func(error) local.Hooks
		err       error
		permanent bool
		renamed   bool // the fault comes after the rename
	}{
		{"SyncFile/ENOSPC", syncFileFails, syscall.ENOSPC, true, false},
		{"SyncFile/EIO", syncFileFails, syscall.EIO, false, false},
		{"Rename/EROFS", renameFails, syscall.EROFS, true, false},
		{"Rename/EACCES", renameFails, syscall.EACCES, true, false},
		{"SyncDir/EDQUOT", syncDirFails, syscall.EDQUOT, true, true},
		{"SyncDir/EPERM", syncDirFails, syscall.EPERM, true, true},
		{"SyncDir/EIO", syncDirFails, syscall.EIO, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			ctx := t.Context()
			healthy := newBackend(t, dir)
			if _, err := storage.Save(ctx, healthy, "ckpt/old", strings.NewReader("old")); err != nil {
				t.Fatal(err)
			}
			b := newBackend(t, dir, local.WithHooks(c.hooks(c.err)))
			for _, name := range []string{"ckpt/old", "ckpt/new", "fresh/dir/new"} {
				_, err := storage.Save(ctx, b, name, strings.NewReader("new contents"))
				if !errors.Is(err, c.err) {
					t.Fatalf("Save(%q) = %v, want %v", name, err, c.err)
				}
				if storage.IsPermanent(err) != c.permanent {
					t.Errorf("IsPermanent(%v) = %v, want %v", err, !c.permanent, c.permanent)
				}
				var serr *storage.Error
				if !errors.As(err, &serr) || serr.Op != "commit" || serr.Name != name {
					t.Errorf("error %v: want a *storage.Error for commit %q", err, name)
				}
			}
			want := []string{"ckpt/old"}
			if c.renamed {
				want = nil // replaced, then removed as not durable
			}
			if got := listAll(t, healthy); !slices.Equal(got, want) {
				t.Errorf("List after failed commits = %q, want %q", got, want)
			}
			for _, name := range []string{"ckpt/new", "fresh/dir/new"} {
				if _, err := healthy.Stat(ctx, name); !errors.Is(err, storage.ErrNotExist) {
					t.Errorf("Stat(%q) after failed commit = %v, want ErrNotExist", name, err)
				}
			}
			if !c.renamed {
				if got, err := storage.Load(ctx, healthy, "ckpt/old"); err != nil || string(got) != "old" {
					t.Errorf("old object after failed replace = %q, %v", got, err)
				}
			}
			if got := tempFiles(t, dir); len(got) != 0 {
				t.Errorf("temp files left: %q", got)
			}
			if _, err := os.Stat(filepath.Join(dir, "fresh")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("failed commit left the directory it created: %v", err)
			}
		})
	}
}

func syncFileFails(err error) local.Hooks {
	return local.Hooks{SyncFile: func(*os.File) error { return err }}
}

func renameFails(err error) local.Hooks {
	return local.Hooks{Rename: func(oldpath, newpath string) error {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: err}
	}}
}

func syncDirFails(err error) local.Hooks {
	return local.Hooks{SyncDir: func(dir string) error {
		return &fs.PathError{Op: "sync", Path: dir, Err: err}
	}}
}

// TestCommitOrder checks the steps of a commit and that each directory's
// entry is made durable once.
func TestCommitOrder(t *testing.T) {
	dir := t.TempDir()
	var calls []string
	rel := func(path string) string {
		r, _ := filepath.Rel(dir, path)
		return filepath.ToSlash(r)
	}
	b := newBackend(t, dir, local.WithHooks(local.Hooks{
		TempName: func(base string) string { return storage.TempPrefix + "t-" + base },
		SyncFile: func(f *os.File) error {
			calls = append(calls, "syncfile "+rel(f.Name()))
			return f.Sync()
		},
		Rename: func(oldpath, newpath string) error {
			calls = append(calls, "rename "+rel(oldpath)+" "+rel(newpath))
			return os.Rename(oldpath, newpath)
		},
		SyncDir: func(d string) error {
			calls = append(calls, "syncdir "+rel(d))
			return nil
		},
	}))
	ctx := t.Context()
	save := func(name string) {
		t.Helper()
		calls = nil
		if _, err := storage.Save(ctx, b, name, strings.NewReader(name)); err != nil {
			t.Fatal(err)
		}
	}
	save("a/b/c")
	want := []string{
		"syncfile a/b/.tmp-t-c", "rename a/b/.tmp-t-c a/b/c",
		"syncdir a/b", "syncdir a", "syncdir .",
	}
	if !slices.Equal(calls, want) {
		t.Errorf("first commit: calls\n%q\nwant\n%q", calls, want)
	}
	save("a/b/d")
	want = []string{"syncfile a/b/.tmp-t-d", "rename a/b/.tmp-t-d a/b/d", "syncdir a/b"}
	if !slices.Equal(calls, want) {
		t.Errorf("second commit in the same directory: calls %q, want %q", calls, want)
	}
	// Once the directories are pruned and made anew, they are synced anew.
	for _, name := range []string{"a/b/c", "a/b/d"} {
		if err := b.Remove(ctx, name); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "a")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Remove did not prune empty directories: %v", err)
	}
	save("a/b/e")
	if len(calls) != 5 {
		t.Errorf("commit into re-created directories: calls %q, want 5", calls)
	}
}

func TestTempNameFitsLongNames(t *testing.T) {
	b := newBackend(t, t.TempDir())
	base := strings.Repeat("L", storage.MaxElementLen)
	w, err := b.Create(t.Context(), "dir/"+base)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	temps := tempFiles(t, b.Root())
	if len(temps) != 1 || len(path.Base(temps[0])) > storage.MaxElementLen {
		t.Errorf("temp files %q: want one of at most %d bytes", temps, storage.MaxElementLen)
	}
}

func TestNew(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "x", "y", "cache")
	b := newBackend(t, dir)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Fatalf("New did not create %s: %v", dir, err)
	}
	if b.Root() != dir {
		t.Errorf("Root() = %q, want %q", b.Root(), dir)
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := local.New(file); err == nil {
		t.Errorf("New(%s), a regular file: no error", file)
	}
	if got := b.Properties(); got.Connections != 2 || !got.Hierarchical {
		t.Errorf("Properties() = %+v", got)
	}
	b = newBackend(t, dir, local.WithConnections(16))
	if got := storage.PropertiesOf(b).Connections; got != 16 {
		t.Errorf("Connections = %d, want 16", got)
	}
}

func TestPath(t *testing.T) {
	b := newBackend(t, t.TempDir())
	ctx := t.Context()
	if _, err := storage.Save(ctx, b, "p/q", strings.NewReader("located")); err != nil {
		t.Fatal(err)
	}
	loc, ok := storage.As[storage.Locator](b)
	if !ok {
		t.Fatal("local backend is not a storage.Locator")
	}
	p, ok := loc.Path("p/q")
	if want := filepath.Join(b.Root(), "p", "q"); !ok || p != want {
		t.Fatalf("Path = %q, %v; want %q, true", p, ok, want)
	}
	if got, err := os.ReadFile(p); err != nil || string(got) != "located" {
		t.Errorf("ReadFile(Path) = %q, %v", got, err)
	}
}

func TestListSkipsForeignEntries(t *testing.T) {
	dir := t.TempDir()
	b := newBackend(t, dir)
	ctx := t.Context()
	if _, err := storage.Save(ctx, b, "d/obj", strings.NewReader("12345")); err != nil {
		t.Fatal(err)
	}
	// Entries that no Create makes: invalid names, a stray temp file, a
	// symbolic link to an object, one to a directory, and a dangling one.
	for _, name := range []string{"d/back\\slash", "d/ctl\x01", "d/" + storage.TempPrefix + "stray"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{"d/link": "obj", "dirlink": "d", "d/dangling": "nowhere"}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Skipf("no symbolic links here: %v", err)
		}
	}
	var got []storage.Info
	b.List(ctx, "", func(info storage.Info) error {
		got = append(got, info)
		return nil
	})
	want := []storage.Info{{Name: "d/link", Size: 5}, {Name: "d/obj", Size: 5}}
	if !slices.Equal(got, want) {
		t.Errorf("List = %+v, want %+v", got, want)
	}
}

func TestReadFromCopiesFiles(t *testing.T) {
	// Save from a reader of this backend takes the ReadFrom/WriteTo path.
	src := newBackend(t, t.TempDir())
	dst := newBackend(t, t.TempDir())
	ctx := t.Context()
	data := bytes.Repeat([]byte("0123456789abcdef"), 1<<16)
	if _, err := storage.Save(ctx, src, "obj", bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ off, length int64 }{{0, -1}, {100, 5000}, {int64(len(data)) - 3, 100}} {
		r, err := src.Open(ctx, "obj", c.off, c.length)
		if err != nil {
			t.Fatal(err)
		}
		n, err := storage.Save(ctx, dst, "copy", r)
		r.Close()
		end := int64(len(data))
		if c.length >= 0 {
			end = min(end, c.off+c.length)
		}
		if err != nil || n != end-c.off {
			t.Fatalf("Save(range %d+%d) = %d, %v; want %d", c.off, c.length, n, err, end-c.off)
		}
		if got, err := storage.Load(ctx, dst, "copy"); err != nil || !bytes.Equal(got, data[c.off:end]) {
			t.Errorf("copy of range %d+%d differs (%d bytes, %v)", c.off, c.length, len(got), err)
		}
	}
}

func TestBackendWithoutSync(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Backend {
		return newBackend(t, t.TempDir(), local.WithoutSync())
	})
}

// TestWithoutSyncStillRenames checks that WithoutSync drops the syncs of a
// commit but keeps its atomic rename.
func TestWithoutSyncStillRenames(t *testing.T) {
	dir := t.TempDir()
	var calls []string
	b := newBackend(t, dir, local.WithHooks(local.Hooks{
		TempName: func(base string) string { return storage.TempPrefix + "t-" + base },
		SyncFile: func(f *os.File) error { calls = append(calls, "syncfile"); return nil },
		Rename: func(oldpath, newpath string) error {
			calls = append(calls, "rename "+filepath.Base(oldpath)+" "+filepath.Base(newpath))
			return os.Rename(oldpath, newpath)
		},
		SyncDir: func(d string) error { calls = append(calls, "syncdir"); return nil },
	}), local.WithoutSync())
	if _, err := storage.Save(t.Context(), b, "a/b", strings.NewReader("x")); err != nil {
		t.Fatal(err)
	}
	if want := []string{"rename .tmp-t-b b"}; !slices.Equal(calls, want) {
		t.Errorf("calls %q, want %q", calls, want)
	}
}

// TestLargeObjectWriteback writes objects large enough to start writeback
// while they are written, through Write and through ReadFrom, and reads
// them back.
func TestLargeObjectWriteback(t *testing.T) {
	b := newBackend(t, t.TempDir())
	ctx := t.Context()
	data := make([]byte, 20<<20+12345)
	for i := range data {
		data[i] = byte(i*7 + i>>13)
	}
	src := filepath.Join(t.TempDir(), "src")
	if err := os.WriteFile(src, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, via := range []string{"write", "readfrom"} {
		w, err := b.Create(ctx, via)
		if err != nil {
			t.Fatal(err)
		}
		if via == "write" {
			for p := data; len(p) > 0; {
				n := min(len(p), 3<<20)
				if _, err := w.Write(p[:n]); err != nil {
					t.Fatal(err)
				}
				p = p[n:]
			}
		} else {
			f, err := os.Open(src)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.(io.ReaderFrom).ReadFrom(f); err != nil {
				t.Fatal(err)
			}
			f.Close()
		}
		if err := w.Commit(); err != nil {
			t.Fatal(err)
		}
		got, err := storage.Load(ctx, b, via)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, data) {
			t.Errorf("%s: object read back differs from what was written", via)
		}
	}
}
