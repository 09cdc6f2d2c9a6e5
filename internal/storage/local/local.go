// Package local is a storage.Backend that keeps objects as files under a
// directory of a POSIX file system: a node's cache (local SSD or tmpfs) or
// the shared tier on a parallel file system.
//
// The object "ckpt.0007/rank-3/state.bin" is the file
// <root>/ckpt.0007/rank-3/state.bin. Create writes a temp file
// "<TempPrefix><random>-state.bin" in the same directory, creating missing
// directories; Commit syncs the file, closes it, renames it
// over the final name and syncs the directory (and, once per process, each
// new ancestor directory), so a committed object survives a crash of the
// machine. Writes go straight to the file with no buffering or copying in
// between.
//
// Since names are paths, one name cannot be both an object and a directory
// of other objects ("a" and "a/b"); the second fails with storage.ErrExists
// (Properties.Hierarchical). Remove deletes empty parent directories up to
// the root, but does not sync them: a removed object may come back after a
// crash of the machine. A writer that dies before Commit or Abort leaves its
// temp file behind, invisible to every method; CleanTemp removes it.
//
// A checkpoint is the job's data, and a node's cache or the shared tier may
// be on a file system other users of the machine see: every directory the
// backend creates has mode DirMode (0o700) and every file FileMode (0o600),
// readable by the job's user only, whatever the umask. Directories that
// exist already (the root an administrator made) keep their mode.
package local

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ckpt/ckpt/storage"
)

var (
	_ storage.Backend   = (*Backend)(nil)
	_ storage.Locator   = (*Backend)(nil)
	_ storage.Cleaner   = (*Backend)(nil)
	_ storage.Describer = (*Backend)(nil)
	_ storage.Writer    = (*writer)(nil)
	_ io.ReaderFrom     = (*writer)(nil)
	_ io.WriterTo       = (*reader)(nil)
)

// Hooks replace the file-system calls of the write path, so that tests can
// make temp names predictable and inject faults where committing can fail. A
// nil field keeps the default, given in its comment.
type Hooks struct {
	// TempName returns the last element of the temp file for an object
	// whose last element is base. It must start with storage.TempPrefix
	// and be at most storage.MaxElementLen bytes. Default: TempPrefix, 16
	// random hex digits, "-", then base cut to fit.
	TempName func(base string) string
	// OpenTemp creates the temp file path for writing. Default:
	// os.OpenFile(path, O_WRONLY|O_CREATE|O_EXCL, FileMode).
	OpenTemp func(path string) (*os.File, error)
	// SyncFile makes a temp file's data durable. Default: f.Sync().
	SyncFile func(f *os.File) error
	// Rename moves a temp file over its final name. Default: os.Rename.
	Rename func(oldpath, newpath string) error
	// SyncDir makes the entries of directory dir durable. Default: open
	// dir, Sync it, close it; EINVAL and ENOTSUP (file systems that cannot
	// sync directories) count as success.
	SyncDir func(dir string) error
}

// Option configures a Backend.
type Option func(*Backend)

// WithHooks replaces the write path's file-system calls; see Hooks.
func WithHooks(h Hooks) Option {
	return func(b *Backend) {
		if h.TempName != nil {
			b.hooks.TempName = h.TempName
		}
		if h.OpenTemp != nil {
			b.hooks.OpenTemp = h.OpenTemp
		}
		if h.SyncFile != nil {
			b.hooks.SyncFile = h.SyncFile
		}
		if h.Rename != nil {
			b.hooks.Rename = h.Rename
		}
		if h.SyncDir != nil {
			b.hooks.SyncDir = h.SyncDir
		}
	}
}

// WithoutSync skips every fsync. Objects are still published atomically
// (temp file, rename) and survive the crash of the processes that wrote
// them, since the kernel's page cache holds them, but not a crash or power
// loss of the machine. It suits node-local caches whose loss redundancy
// covers anyway, and tmpfs, where a sync does nothing. Readers that verify
// content hashes (as the store does on restart) detect files a machine
// crash truncated.
func WithoutSync() Option {
	return func(b *Backend) {
		b.hooks.SyncFile = func(*os.File) error { return nil }
		b.hooks.SyncDir = func(string) error { return nil }
		b.nosync = true
	}
}

// WithConnections sets Properties().Connections, the number of concurrent
// operations callers should use (default 2; a parallel file system serves
// more).
func WithConnections(n int) Option {
	return func(b *Backend) { b.connections = max(n, 1) }
}

// Backend stores objects as files under a root directory.
type Backend struct {
	root        string
	hooks       Hooks
	connections int
	nosync      bool // WithoutSync
	closed      atomic.Bool

	// synced maps a directory under root to its os.FileInfo when the
	// directory's entry in its parent is known to be durable, so that Commit
	// syncs each ancestor once per process instead of every time. The
	// FileInfo tells a directory from one removed and created anew.
	synced sync.Map

	// dirs orders this process's pruning of empty directories after the
	// directory creation and temp file of a Create: without it, a Create
	// can lose every retry to Removes that prune what its MkdirAll just
	// made (on a busy machine it did). Other processes on the same
	// directory are still met by Create's retries.
	dirs sync.RWMutex
}

// New returns a backend storing objects under dir, creating dir (mode
// DirMode) if it does not exist.
func New(dir string, opts ...Option) (*Backend, error) {
	root, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("local: %w", err)
	}
	b := &Backend{
		root: root,
		hooks: Hooks{
			TempName: tempName,
			OpenTemp: openTemp,
			SyncFile: (*os.File).Sync,
			Rename:   os.Rename,
			SyncDir:  syncDir,
		},
		connections: 2,
	}
	for _, opt := range opts {
		opt(b)
	}
	// Create root, and make durable the entries of the directories created.
	var created []string
	for d := root; ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil || filepath.Dir(d) == d {
			break
		}
		created = append(created, d)
	}
	if err := os.MkdirAll(root, DirMode); err != nil {
		return nil, fmt.Errorf("local: %w", err)
	}
	if fi, err := os.Stat(root); err != nil {
		return nil, fmt.Errorf("local: %w", err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("local: %s is not a directory", root)
	}
	for _, d := range created {
		if err := b.hooks.SyncDir(filepath.Dir(d)); err != nil {
			return nil, fmt.Errorf("local: %w", err)
		}
	}
	return b, nil
}

// Root returns the absolute path of the backend's directory.
func (b *Backend) Root() string { return b.root }

// path returns the file of a valid name.
func (b *Backend) path(name string) string {
	return filepath.Join(b.root, filepath.FromSlash(name))
}

// check returns the error that an operation op on name must fail with
// before it starts, if any.
func (b *Backend) check(ctx context.Context, op, name string) error {
	return storage.Precheck(ctx, op, name, b.closed.Load())
}

// readErr wraps err from reading name, mapping "no such file" (also a
// non-directory where a directory should be) to storage.ErrNotExist.
func readErr(op, name string, err error) error {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		err = storage.ErrNotExist
	}
	return &storage.Error{Op: op, Name: name, Err: err}
}

// writeErr wraps err from writing name, marking collisions between files
// and directories as storage.ErrExists.
func writeErr(op, name string, err error) error {
	if errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.EISDIR) ||
		errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, fs.ErrExist) {
		err = fmt.Errorf("%w: %w", storage.ErrExists, err)
	}
	return &storage.Error{Op: op, Name: name, Err: err}
}

// Create implements storage.Backend.
func (b *Backend) Create(ctx context.Context, name string) (storage.Writer, error) {
	if err := b.check(ctx, "create", name); err != nil {
		return nil, err
	}
	final := b.path(name)
	dir, base := filepath.Dir(final), filepath.Base(final)
	if fi, err := os.Lstat(final); err == nil && fi.IsDir() {
		// Fail now rather than at Commit, after the bytes were written.
		return nil, writeErr("create", name, &fs.PathError{Op: "create", Path: final, Err: syscall.EISDIR})
	}
	for attempt := 0; ; attempt++ {
		// A concurrent Remove may prune the directories between MkdirAll and
		// OpenTemp (or during MkdirAll), and the random temp name may be
		// taken: try again.
		retry := func(err error) bool {
			return attempt < 10 && errors.Is(err, fs.ErrNotExist)
		}
		b.dirs.RLock()
		if err := os.MkdirAll(dir, DirMode); err != nil {
			b.dirs.RUnlock()
			if retry(err) {
				continue
			}
			return nil, writeErr("create", name, err)
		}
		tmp := filepath.Join(dir, b.hooks.TempName(base))
		f, err := b.hooks.OpenTemp(tmp)
		b.dirs.RUnlock()
		if err == nil {
			return &writer{b: b, ctx: ctx, name: name, tmp: tmp, final: final, f: f, writeback: !b.nosync}, nil
		}
		if retry(err) || (attempt < 10 && errors.Is(err, fs.ErrExist)) {
			continue
		}
		return nil, &storage.Error{Op: "create", Name: name, Err: err}
	}
}

// Open implements storage.Backend.
func (b *Backend) Open(ctx context.Context, name string, offset, length int64) (io.ReadCloser, error) {
	if err := b.check(ctx, "open", name); err != nil {
		return nil, err
	}
	if offset < 0 {
		return nil, &storage.Error{Op: "open", Name: name, Err: fmt.Errorf("negative offset %d", offset)}
	}
	f, err := os.Open(b.path(name))
	if err != nil {
		return nil, readErr("open", name, err)
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = storage.ErrNotExist // a directory of other objects
	}
	if err == nil && offset > 0 {
		_, err = f.Seek(offset, io.SeekStart)
	}
	if err != nil {
		_ = f.Close()
		return nil, readErr("open", name, err)
	}
	if length < 0 {
		length = math.MaxInt64
	}
	return &reader{f: f, n: length}, nil
}

// reader reads at most n more bytes of an object's file.
type reader struct {
	f *os.File
	n int64
}

func (r *reader) Read(p []byte) (int, error) {
	if r.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > r.n {
		p = p[:r.n]
	}
	n, err := r.f.Read(p)
	r.n -= int64(n)
	return n, err
}

// WriteTo lets io.Copy copy inside the kernel: into a file (such as a Writer
// of this package) with copy_file_range, into a TCP connection with
// sendfile, since os.File.ReadFrom and net.TCPConn.ReadFrom both recognise
// an *io.LimitedReader of an *os.File.
func (r *reader) WriteTo(w io.Writer) (int64, error) {
	lr := &io.LimitedReader{R: r.f, N: r.n}
	n, err := io.Copy(w, lr)
	r.n = lr.N
	return n, err
}

func (r *reader) Close() error { return r.f.Close() }

// Stat implements storage.Backend.
func (b *Backend) Stat(ctx context.Context, name string) (storage.Info, error) {
	if err := b.check(ctx, "stat", name); err != nil {
		return storage.Info{}, err
	}
	fi, err := os.Stat(b.path(name))
	if err == nil && !fi.Mode().IsRegular() {
		err = storage.ErrNotExist
	}
	if err != nil {
		return storage.Info{}, readErr("stat", name, err)
	}
	return storage.Info{Name: name, Size: fi.Size()}, nil
}

// List implements storage.Backend. It walks only the directory that the
// prefix names up to its last slash. Entries that are not regular files or
// directories (or symbolic links to regular files), and entries whose names
// are not valid object names, temp files among them, are skipped.
func (b *Backend) List(ctx context.Context, prefix string, fn func(storage.Info) error) error {
	if err := b.check(ctx, "list", prefix); err != nil {
		return err
	}
	i := strings.LastIndexByte(prefix, '/')
	return b.list(ctx, prefix[:i+1], prefix[i+1:], fn)
}

// list reports the objects under directory rel ("" or ending in "/") whose
// names continue with partial, in order.
func (b *Backend) list(ctx context.Context, rel, partial string, fn func(storage.Info) error) error {
	if err := ctx.Err(); err != nil {
		return &storage.Error{Op: "list", Name: rel + partial, Err: err}
	}
	dir := b.path(rel)
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return nil // no such directory, or removed while listing
		}
		return &storage.Error{Op: "list", Name: rel + partial, Err: err}
	}
	// Names sort byte-wise, and a directory's objects sort as if its name
	// ended in "/": "a.b" < "a/x" < "a0".
	type entry struct {
		key string
		de  fs.DirEntry
	}
	keep := make([]entry, 0, len(entries))
	for _, de := range entries {
		key := de.Name()
		if de.IsDir() {
			key += "/"
		}
		if !strings.HasPrefix(key, partial) || storage.ValidName(rel+de.Name()) != nil {
			continue
		}
		keep = append(keep, entry{key, de})
	}
	slices.SortFunc(keep, func(x, y entry) int { return strings.Compare(x.key, y.key) })
	for _, e := range keep {
		name := rel + e.de.Name()
		if e.de.IsDir() {
			if err := b.list(ctx, name+"/", "", fn); err != nil {
				return err
			}
			continue
		}
		var fi fs.FileInfo
		if e.de.Type()&fs.ModeSymlink != 0 {
			fi, err = os.Stat(filepath.Join(dir, e.de.Name()))
		} else {
			fi, err = e.de.Info()
		}
		if err != nil || !fi.Mode().IsRegular() {
			continue // removed meanwhile, or not an object
		}
		if err := fn(storage.Info{Name: name, Size: fi.Size()}); err != nil {
			return err
		}
	}
	return nil
}

// Remove implements storage.Backend.
func (b *Backend) Remove(ctx context.Context, name string) error {
	if err := b.check(ctx, "remove", name); err != nil {
		return err
	}
	path := b.path(name)
	fi, err := os.Lstat(path)
	if err == nil && fi.IsDir() {
		err = storage.ErrNotExist
	}
	if err == nil {
		err = os.Remove(path)
	}
	if err != nil {
		return readErr("remove", name, err)
	}
	b.prune(filepath.Dir(path))
	return nil
}

// prune removes dir and its ancestors below root while they are empty.
func (b *Backend) prune(dir string) {
	b.dirs.Lock()
	defer b.dirs.Unlock()
	for dir != b.root && strings.HasPrefix(dir, b.root+string(filepath.Separator)) {
		if syscall.Rmdir(dir) != nil {
			return // not empty, or gone: either way done
		}
		b.synced.Delete(dir)
		dir = filepath.Dir(dir)
	}
}

// Close implements storage.Backend.
func (b *Backend) Close() error {
	b.closed.Store(true)
	return nil
}

// Path implements storage.Locator.
func (b *Backend) Path(name string) (string, bool) {
	if storage.ValidName(name) != nil {
		return "", false
	}
	return b.path(name), true
}

// Properties implements storage.Describer.
func (b *Backend) Properties() storage.Properties {
	return storage.Properties{Connections: b.connections, Hierarchical: true, SyncsFiles: !b.nosync}
}

// CleanTemp implements storage.Cleaner: it removes temp files (names
// starting with storage.TempPrefix) last modified more than olderThan ago,
// then the directories this leaves empty. A live Writer's temp file is
// modified by every Write, so olderThan only has to exceed the longest pause
// between a writer's writes; a process that restarts after a crash may pass
// the time since it last ran, or 0 if it knows that no writer is left.
func (b *Backend) CleanTemp(ctx context.Context, olderThan time.Duration) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, &storage.Error{Op: "clean", Name: "", Err: err}
	}
	if b.closed.Load() {
		return 0, &storage.Error{Op: "clean", Name: "", Err: storage.ErrClosed}
	}
	cutoff := time.Now().Add(-olderThan)
	removed := 0
	var dirs []string
	err := filepath.WalkDir(b.root, func(path string, de fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed while walking
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if de.IsDir() || !strings.HasPrefix(de.Name(), storage.TempPrefix) {
			return nil
		}
		fi, err := de.Info()
		if err != nil || !fi.ModTime().Before(cutoff) {
			return nil
		}
		if err := os.Remove(path); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		removed++
		dirs = append(dirs, filepath.Dir(path))
		return nil
	})
	// Deepest first, so that a parent is tried after its children.
	slices.SortFunc(dirs, func(x, y string) int { return len(y) - len(x) })
	for _, dir := range dirs {
		b.prune(dir)
	}
	if err != nil {
		return removed, &storage.Error{Op: "clean", Name: "", Err: err}
	}
	return removed, nil
}

// writer streams an object into its temp file.
type writer struct {
	b     *Backend
	ctx   context.Context
	name  string
	tmp   string   // temp file
	final string   // object file
	f     *os.File // nil once closed
	err   error    // first failed write: Commit fails with it
	done  bool     // Commit or Abort was called

	// writeback starts the disk writes of what was written so far every
	// writebackChunk bytes (see startWriteback), so that the fsync of
	// Commit finds most of the file on disk already instead of writing all
	// of it then.
	writeback        bool
	written, flushed int64
}

func (w *writer) Write(p []byte) (int, error) {
	if w.done {
		return 0, &storage.Error{Op: "write", Name: w.name, Err: storage.ErrClosed}
	}
	n, err := w.f.Write(p)
	if err != nil {
		err = &storage.Error{Op: "write", Name: w.name, Err: err}
		if w.err == nil {
			w.err = err
		}
	}
	w.wrote(n)
	return n, err
}

// writebackChunk is how much a writer lets accumulate in the page cache
// before it starts writing it to disk.
const writebackChunk = 8 << 20

// wrote records n more bytes written and starts their writeback once a
// chunk has accumulated.
func (w *writer) wrote(n int) {
	w.written += int64(n)
	if w.writeback && w.written-w.flushed >= writebackChunk {
		if !startWriteback(w.f, w.flushed, w.written-w.flushed) {
			w.writeback = false // not supported here: leave it to fsync
		}
		w.flushed = w.written
	}
}

// ReadFrom lets io.Copy from a file (such as a reader of this package) copy
// inside the kernel (copy_file_range on Linux).
func (w *writer) ReadFrom(r io.Reader) (int64, error) {
	if w.done {
		return 0, &storage.Error{Op: "write", Name: w.name, Err: storage.ErrClosed}
	}
	n, err := w.f.ReadFrom(r)
	if err != nil {
		err = &storage.Error{Op: "write", Name: w.name, Err: err}
		if w.err == nil {
			w.err = err
		}
	}
	w.wrote(int(n))
	return n, err
}

func (w *writer) Commit() error {
	if w.done {
		return &storage.Error{Op: "commit", Name: w.name, Err: storage.ErrClosed}
	}
	w.done = true
	renamed, err := w.commit()
	if err != nil {
		// Commit's error is the one that matters; a temp file that cannot be
		// removed as well is left to CleanTemp.
		_ = w.discard(renamed)
	}
	return err
}

// commit publishes the temp file and reports whether it was renamed.
func (w *writer) commit() (renamed bool, err error) {
	fail := func(err error) error { return &storage.Error{Op: "commit", Name: w.name, Err: err} }
	switch {
	case w.err != nil:
		return false, w.err
	case w.ctx.Err() != nil:
		return false, fail(w.ctx.Err())
	case w.b.closed.Load():
		return false, fail(storage.ErrClosed)
	}
	if err := w.b.hooks.SyncFile(w.f); err != nil {
		return false, fail(err)
	}
	err = w.f.Close()
	w.f = nil
	if err != nil {
		return false, fail(err)
	}
	if err := w.b.hooks.Rename(w.tmp, w.final); err != nil {
		return false, writeErr("commit", w.name, err)
	}
	if err := w.b.syncDirs(filepath.Dir(w.final)); err != nil {
		return true, fail(err)
	}
	return true, nil
}

// syncDirs makes dir's entries durable, and the entries of dir and its
// ancestors in their parents, up to the root, unless known to be durable.
func (b *Backend) syncDirs(dir string) error {
	if err := b.hooks.SyncDir(dir); err != nil {
		return err
	}
	for ; dir != b.root && strings.HasPrefix(dir, b.root); dir = filepath.Dir(dir) {
		fi, err := os.Stat(dir)
		if err != nil {
			return err
		}
		if old, ok := b.synced.Load(dir); ok && os.SameFile(old.(fs.FileInfo), fi) {
			return nil // and so are its ancestors'
		}
		if err := b.hooks.SyncDir(filepath.Dir(dir)); err != nil {
			return err
		}
		b.synced.Store(dir, fi)
	}
	return nil
}

func (w *writer) Abort() error {
	if w.done {
		return nil
	}
	w.done = true
	return w.discard(false)
}

// discard closes and removes the temp file, or if renamed, the object it
// became but could not be made durable.
func (w *writer) discard(renamed bool) error {
	var errs []error
	if w.f != nil {
		errs = append(errs, w.f.Close())
		w.f = nil
	}
	path := w.tmp
	if renamed {
		path = w.final
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, err)
	}
	w.b.prune(filepath.Dir(w.final))
	if err := errors.Join(errs...); err != nil {
		return &storage.Error{Op: "abort", Name: w.name, Err: err}
	}
	return nil
}

// tempName is the default Hooks.TempName.
func tempName(base string) string {
	var random [8]byte
	for i := range random {
		random[i] = byte(rand.Uint32())
	}
	prefix := storage.TempPrefix + hex.EncodeToString(random[:]) + "-"
	if len(prefix)+len(base) > storage.MaxElementLen {
		base = base[:storage.MaxElementLen-len(prefix)]
	}
	return prefix + base
}

// openTemp is the default Hooks.OpenTemp.
func openTemp(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, FileMode)
}

// Modes of what the backend creates: the job's user's only (see the
// package documentation). The umask can only take bits away.
const (
	DirMode  os.FileMode = 0o700
	FileMode os.FileMode = 0o600
)

// syncDir is the default Hooks.SyncDir.
func syncDir(dir string) error { return SyncDir(dir) }

// SyncDir syncs the directory dir, so that the names created, renamed or
// removed in it survive a crash. A file system that cannot sync a
// directory (EINVAL, ENOTSUP) is taken as one that needs no sync.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOTSUP) {
		return nil
	}
	return err
}
