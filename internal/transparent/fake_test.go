package transparent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/ckpt/ckpt/internal/criu"
	"github.com/ckpt/ckpt/internal/tcplock"
)

// world is an in-memory job of n ranks for the supervisor's tests:
// collectives meet in lockstep, a checkpoint is taken at every multiple of
// every steps and committed when every rank's save succeeded, and
// Restart returns the newest committed one.
type world struct {
	n, every int64
	mu       sync.Mutex
	cond     *sync.Cond
	gathers  map[int][][]byte // by sequence number
	seq      []int            // each rank's next sequence number
	commits  []map[int]map[string][]byte
	pending  map[string]map[int]map[string][]byte
	names    []string
	events   []string // what the trees and CRIU did, in order
	finished int
	// dir, if set, is the world's node cache: each rank's part of a
	// checkpoint is a directory there (dir/NAME/rank-R), Files route
	// files into it (Path) as the engine does, and a checkpoint that
	// fails removes it.
	dir string
}

func newWorld(n int, every int64) *world {
	w := &world{n: int64(n), every: every, gathers: map[int][][]byte{}, seq: make([]int, n),
		pending: map[string]map[int]map[string][]byte{}}
	w.cond = sync.NewCond(&w.mu)
	return w
}

func (w *world) event(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.events = append(w.events, fmt.Sprintf(format, args...))
}

func (w *world) eventList() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.events)
}

// gather is AllGather: it returns when every rank contributed to this
// rank's next round.
func (w *world) gather(ctx context.Context, rank int, data []byte) ([][]byte, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.seq[rank]
	w.seq[rank]++
	g := w.gathers[s]
	if g == nil {
		g = make([][]byte, w.n)
		w.gathers[s] = g
	}
	g[rank] = slices.Clone(data)
	w.cond.Broadcast()
	for {
		full := true
		for _, x := range g {
			full = full && x != nil
		}
		if full {
			return g, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		w.cond.Wait()
	}
}

// wake makes waiting gathers look at their context again.
func (w *world) wake() {
	w.mu.Lock()
	w.cond.Broadcast()
	w.mu.Unlock()
}

func (w *world) committed() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.commits)
}

// lastMeta is rank's Meta in the newest commit (false if none yet).
func (w *world) lastMeta(rank int) (Meta, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.commits) == 0 {
		return Meta{}, false
	}
	m, err := UnmarshalMeta(w.commits[len(w.commits)-1][rank][MetaFile])
	return m, err == nil
}

// fakeJob is one rank of a world.
type fakeJob struct {
	w    *world
	rank int
}

func (j fakeJob) Rank() int { return j.rank }
func (j fakeJob) AllGather(ctx context.Context, data []byte) ([][]byte, error) {
	return j.w.gather(ctx, j.rank, data)
}
func (j fakeJob) NeedCheckpoint(ctx context.Context, step int64) (bool, error) {
	return step%j.w.every == 0, nil
}
func (j fakeJob) Halting() bool { return false }
func (j fakeJob) Finish(ctx context.Context, result string) error {
	j.w.mu.Lock()
	j.w.finished++
	j.w.mu.Unlock()
	return nil
}

func (j fakeJob) Checkpoint(ctx context.Context, name string, save func(Files) error) error {
	files := memFiles{}
	var err error
	if j.w.dir == "" {
		err = save(files)
	} else {
		df := &dirFiles{root: j.w.partDir(name, j.rank), mem: files}
		if err = save(df); err == nil {
			err = df.collect()
		}
	}
	ok := []byte{1}
	if err != nil {
		ok[0] = 0
	}
	// Every rank's files are in before its vote: a full vote commits
	// them all, whichever rank sees it first.
	j.w.mu.Lock()
	if j.w.pending[name] == nil {
		j.w.pending[name] = map[int]map[string][]byte{}
	}
	j.w.pending[name][j.rank] = files
	j.w.mu.Unlock()
	all, gerr := j.w.gather(ctx, j.rank, ok)
	if gerr != nil {
		return gerr
	}
	for _, x := range all {
		if x[0] != 1 {
			if j.w.dir != "" {
				os.RemoveAll(j.w.partDir(name, j.rank)) // as the engine's Fail does
			}
			return errors.Join(errors.New("the checkpoint failed on every rank"), err)
		}
	}
	j.w.mu.Lock()
	defer j.w.mu.Unlock()
	if len(j.w.names) == 0 || j.w.names[len(j.w.names)-1] != name {
		j.w.names = append(j.w.names, name)
		j.w.commits = append(j.w.commits, j.w.pending[name])
	}
	return nil
}

func (j fakeJob) Restart(ctx context.Context) (Restored, error) {
	j.w.mu.Lock()
	defer j.w.mu.Unlock()
	if len(j.w.commits) == 0 {
		return nil, nil
	}
	i := len(j.w.commits) - 1
	r := memRestored{name: j.w.names[i], files: j.w.commits[i][j.rank]}
	if j.w.dir != "" {
		return dirRestored{memRestored: r, root: j.w.partDir(r.name, j.rank)}, nil
	}
	return r, nil
}

// partDir is rank's part of checkpoint name in a world with a cache.
func (w *world) partDir(name string, rank int) string {
	return filepath.Join(w.dir, name, fmt.Sprintf("rank-%d", rank))
}

// committedAs is the index of checkpoint name among the commits.
func (w *world) committedAs(name string) (int, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	i := slices.Index(w.names, name)
	return i, i >= 0
}

// dirFiles is Files in a world with a cache: Create keeps a file in
// memory, Path routes it into the part's directory, from which collect
// reads it once save returned (the engine hashes routed files at commit).
type dirFiles struct {
	root   string
	mem    memFiles
	routed []string
}

func (d *dirFiles) Create(name string) (io.WriteCloser, error) { return d.mem.Create(name) }

func (d *dirFiles) Path(name string) (string, error) {
	if _, ok := d.mem[name]; ok || slices.Contains(d.routed, name) {
		return "", fmt.Errorf("%s routed twice", name)
	}
	if err := os.MkdirAll(d.root, 0o700); err != nil {
		return "", err
	}
	d.routed = append(d.routed, name)
	return filepath.Join(d.root, name), nil
}

func (d *dirFiles) collect() error {
	for _, name := range d.routed {
		b, err := os.ReadFile(filepath.Join(d.root, name))
		if err != nil {
			return fmt.Errorf("routed file %s: %w", name, err)
		}
		d.mem[name] = b
	}
	return nil
}

// dirRestored is a restored checkpoint of a world with a cache: its
// files are read from memory (as committed) or in place.
type dirRestored struct {
	memRestored
	root string
}

func (r dirRestored) Path(file string) (string, error) {
	if _, ok := r.files[file]; !ok {
		return "", fmt.Errorf("no file %s", file)
	}
	return filepath.Join(r.root, file), nil
}

type memFiles map[string][]byte

func (m memFiles) Create(name string) (io.WriteCloser, error) {
	if _, ok := m[name]; ok {
		return nil, fmt.Errorf("%s created twice", name)
	}
	m[name] = nil
	return &memFile{m: m, name: name}, nil
}

type memFile struct {
	m    memFiles
	name string
	b    bytes.Buffer
}

func (f *memFile) Write(p []byte) (int, error) { return f.b.Write(p) }
func (f *memFile) Close() error                { f.m[f.name] = f.b.Bytes(); return nil }

type memRestored struct {
	name  string
	files map[string][]byte
}

func (r memRestored) Name() string { return r.name }
func (r memRestored) Open(file string) (io.ReadCloser, error) {
	b, ok := r.files[file]
	if !ok {
		return nil, fmt.Errorf("no file %s", file)
	}
	return io.NopCloser(bytes.NewReader(b)), nil
}

// fakeTree is a program that runs until its test ends it.
type fakeTree struct {
	w         *world
	rank, pid int
	freezeErr error
	mu        sync.Mutex
	code      int
	done      chan struct{}
	endOnce   sync.Once
}

func (t *fakeTree) Pid() int { return t.pid }
func (t *fakeTree) Freeze(ctx context.Context) error {
	if t.freezeErr != nil {
		t.w.event("freeze-failed %d", t.rank)
		return t.freezeErr
	}
	select {
	case <-t.done:
		return ErrExited
	default:
	}
	t.w.event("freeze %d", t.rank)
	return nil
}

// Conns implements connLister: one connection to the next rank.
func (t *fakeTree) Conns() ([]tcplock.Conn, error) {
	return []tcplock.Conn{fakeConn(t.rank)}, nil
}

func fakeConn(rank int) tcplock.Conn {
	return tcplock.Conn{Local: netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 77, 0, byte(rank + 1)}), 7000),
		Remote: netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 77, 0, byte(rank + 2)}), 40000)}
}

// fakeLock is a tcplock.Locker whose calls are events of the world;
// failLock makes Lock fail, failUnlock Unlock.
type fakeLock struct {
	w          *world
	rank       int
	failLock   error
	failUnlock error
}

func (l fakeLock) Lock(conns []tcplock.Conn) error {
	if l.failLock != nil {
		return l.failLock
	}
	l.w.event("lock %d %v", l.rank, conns)
	return nil
}

func (l fakeLock) Unlock() error {
	if l.failUnlock != nil {
		return l.failUnlock
	}
	l.w.event("unlock %d", l.rank)
	return nil
}

func (t *fakeTree) Thaw() error { t.w.event("thaw %d", t.rank); return nil }
func (t *fakeTree) Sync() (Stream, Stream, error) {
	return Stream{Offset: int64(10 * t.rank), Pipe: 100}, Stream{Offset: 1, Pipe: 101}, nil
}
func (t *fakeTree) Done() <-chan struct{} { return t.done }

// fakeEnds are where a fakeTree's output files end after it ended: past
// where Sync said they were.
func fakeEnds(rank int) (Stream, Stream) {
	return Stream{Offset: int64(10*rank + 5)}, Stream{Offset: 3}
}
func (t *fakeTree) Ends() (Stream, Stream) { <-t.done; return fakeEnds(t.rank) }
func (t *fakeTree) ExitCode() int {
	<-t.done
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.code
}
func (t *fakeTree) Kill() { t.end(137) }
func (t *fakeTree) end(code int) {
	t.endOnce.Do(func() {
		t.mu.Lock()
		t.code = code
		t.mu.Unlock()
		close(t.done)
	})
}

// fakeRunner starts fakeTrees and records restores.
type fakeRunner struct {
	w        *world
	rank     int
	mu       sync.Mutex
	trees    []*fakeTree
	restored []Meta
	dirs     []string // where each restore's images were
	// onRestore, if set, sees each restore's images directory.
	onRestore func(dir string)
	ended     []Meta
	freeze    error // the trees' Freeze error
}

func (r *fakeRunner) newTree() *fakeTree {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := &fakeTree{w: r.w, rank: r.rank, pid: 1000*r.rank + len(r.trees) + 1, freezeErr: r.freeze, done: make(chan struct{})}
	r.trees = append(r.trees, t)
	return t
}

func (r *fakeRunner) tree() *fakeTree {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.trees) == 0 {
		return nil
	}
	return r.trees[len(r.trees)-1]
}

func (r *fakeRunner) Start(ctx context.Context) (Tree, error) { return r.newTree(), nil }
func (r *fakeRunner) Restore(ctx context.Context, dir, work string, m Meta) (Tree, error) {
	r.mu.Lock()
	r.restored = append(r.restored, m)
	r.dirs = append(r.dirs, dir)
	r.mu.Unlock()
	r.w.event("restore %d", r.rank)
	if r.onRestore != nil {
		r.onRestore(dir)
	}
	return r.newTree(), nil
}
func (r *fakeRunner) Ended(m Meta) error {
	r.mu.Lock()
	r.ended = append(r.ended, m)
	r.mu.Unlock()
	return nil
}

// fakeTool is a criu.Fake whose dumps are events of the world.
func fakeTool(w *world) *criu.Fake {
	return &criu.Fake{
		State: func(pid int) ([]byte, error) {
			w.event("dump %d", pid/1000)
			return []byte(fmt.Sprintf("state of %d", pid)), nil
		},
		Spawn: func(state []byte, inherit []criu.Inherit) (int, error) { return 1, nil },
	}
}
