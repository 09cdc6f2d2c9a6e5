package transparent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/testwait"
)

// inode is the file's inode number: the same one after storing means the
// file was neither copied nor rewritten.
func inode(t *testing.T, path string) uint64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

// TestStoreAndRestoreInPlace: images CRIU wrote into the checkpoint's
// directory become the checkpoint's files where they are: the random one
// untouched (same inode, only its sample read), the compressible one
// replaced by its zstd frame. The restore of a checkpoint without
// compressed images is from that directory itself; with, from a scratch
// directory holding the decompressed images and links to the others,
// byte for byte what CRIU wrote.
func TestStoreAndRestoreInPlace(t *testing.T) {
	part := filepath.Join(t.TempDir(), "t1", "rank-0")
	images := map[string][]byte{
		"pages-1.img": pageLike(sampleSize + 256<<10),
		"pages-2.img": randomBytes(2*sampleSize, 3),
		"core-1.img":  []byte("registers"),
	}
	d := &dirFiles{root: part, mem: memFiles{}}
	if _, err := d.Path(MetaFile); err != nil {
		t.Fatal(err)
	}
	for name, b := range images {
		if err := os.WriteFile(filepath.Join(part, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	random := inode(t, filepath.Join(part, "pages-2.img"))
	s := &supervisor{cfg: Config{Scratch: t.TempDir()}}
	names, compressed, err := s.storeInPlace(d, part)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"core-1.img", "pages-1.img", "pages-2.img"}) || !slices.Equal(compressed, []string{"pages-1.img"}) {
		t.Fatalf("stored %v, compressed %v; want the three images, pages-1.img compressed", names, compressed)
	}
	if !slices.Equal(d.routed, []string{MetaFile, "core-1.img", "pages-1.img", "pages-2.img"}) {
		t.Errorf("routed %v: want the meta and every image", d.routed)
	}
	if inode(t, filepath.Join(part, "pages-2.img")) != random {
		t.Errorf("the random image was rewritten")
	}
	z, _ := os.ReadFile(filepath.Join(part, "pages-1.img"))
	if c := s.rep.Compression; c.Compressed != 1 || c.StoredBytes != int64(len(z))+2*sampleSize+9 || len(z) >= len(images["pages-1.img"])/2 {
		t.Errorf("compression %+v, pages-1.img stored in %d bytes", c, len(z))
	}
	if left, _ := filepath.Glob(filepath.Join(part, "*"+zstdSuffix)); len(left) != 0 {
		t.Errorf("left beside the images: %v", left)
	}
	os.WriteFile(filepath.Join(part, MetaFile), []byte("{}"), 0o600)
	if err := d.collect(); err != nil {
		t.Fatal(err)
	}
	res := dirRestored{memRestored: memRestored{name: "t1", files: d.mem}, root: part}

	// Without compressed images: CRIU reads the cache's directory.
	plain := Meta{Images: []string{"core-1.img", "pages-2.img"}}
	dir, work, err := s.inPlace(res, res, plain)
	if err != nil {
		t.Fatal(err)
	}
	if dir != part || work == part || !strings.HasPrefix(work, s.cfg.Scratch) {
		t.Errorf("restore from %s (logs in %s): want %s itself, the logs in the scratch directory", dir, work, part)
	}
	os.RemoveAll(work)

	// With: the scratch directory, every image as CRIU wrote it.
	dir, work, err = s.inPlace(res, res, Meta{Images: names, Compressed: compressed})
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(work)
	if dir != work || !strings.HasPrefix(dir, s.cfg.Scratch) {
		t.Errorf("restore from %s: want a scratch directory", dir)
	}
	for name, want := range images {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s for CRIU: %d bytes, %v; want the %d CRIU wrote", name, len(got), err, len(want))
		}
	}
	if fi, err := os.Lstat(filepath.Join(dir, "pages-2.img")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("pages-2.img (not compressed) was copied, not linked: %v %v", fi, err)
	}
}

// misrouted routes each file into a directory of its own.
type misrouted struct{ root string }

func (m misrouted) Create(string) (io.WriteCloser, error) { return nil, errors.New("no") }
func (m misrouted) Path(name string) (string, error) {
	return filepath.Join(m.root, name, name), nil
}

// TestInPlaceMisrouted: a cache that would not keep the images beside
// each other (CRIU needs one directory) fails the checkpoint, and the
// restore, rather than storing or restoring a part of them.
func TestInPlaceMisrouted(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "core-1.img"), []byte("registers"), 0o600)
	s := &supervisor{cfg: Config{Scratch: t.TempDir()}}
	if _, _, err := s.storeInPlace(misrouted{dir}, dir); err == nil || !strings.Contains(err.Error(), "not beside") {
		t.Errorf("store: %v; want the misrouting refused", err)
	}
	res := memRestored{name: "t1", files: map[string][]byte{"a.img": nil, "b.img": nil}}
	if _, _, err := s.inPlace(res, misrouted{dir}, Meta{Images: []string{"a.img", "b.img"}}); !errors.Is(err, errNotInPlace) || !strings.Contains(err.Error(), "not beside") {
		t.Errorf("restore: %v; want the misrouting refused, for a copy instead", err)
	}
}

// noPath is a restored checkpoint whose files cannot be read in place
// (the engine stored them compressed): Path fails.
type noPath struct{ memRestored }

func (noPath) Path(file string) (string, error) {
	return "", fmt.Errorf("%q is stored compressed: read it with Open", file)
}

// TestRestoreFallsBackToCopy: a restored checkpoint whose images cannot
// be read in place is restored from a copy of them in the scratch
// directory, read through Open, byte for byte.
func TestRestoreFallsBackToCopy(t *testing.T) {
	images := map[string][]byte{"core-1.img": []byte("registers"), "pages-1.img": randomBytes(1<<20, 7)}
	m := Meta{Step: 4, Stdout: Stream{Pipe: 100}, Stderr: Stream{Pipe: 101}, Images: []string{"core-1.img", "pages-1.img"}}
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{MetaFile: b}
	for n, d := range images {
		files[n] = d
	}
	w := newWorld(1, 1000)
	r := &fakeRunner{w: w, rank: 0}
	scratch := t.TempDir()
	var seen map[string][]byte
	r.onRestore = func(dir string) {
		seen = map[string][]byte{}
		for n := range images {
			seen[n], _ = os.ReadFile(filepath.Join(dir, n))
		}
	}
	s := &supervisor{cfg: Config{Runner: r, Scratch: scratch}, job: restoredJob{noPath{memRestored{name: "t4", files: files}}}}
	if err := s.begin(t.Context()); err != nil {
		t.Fatal(err)
	}
	if len(r.dirs) != 1 || !strings.HasPrefix(r.dirs[0], scratch) {
		t.Fatalf("restored from %v, want a copy in %s", r.dirs, scratch)
	}
	for n, want := range images {
		if !bytes.Equal(seen[n], want) {
			t.Errorf("%s for CRIU: %d bytes, want the %d stored", n, len(seen[n]), len(want))
		}
	}
}

// restoredJob is a Job whose Restart returns res; the rest is unused.
type restoredJob struct {
	Restored
}

func (j restoredJob) Rank() int { return 0 }
func (j restoredJob) AllGather(context.Context, []byte) ([][]byte, error) {
	return nil, errors.New("unused")
}
func (j restoredJob) NeedCheckpoint(context.Context, int64) (bool, error) { return false, nil }
func (j restoredJob) Halting() bool                                       { return true }
func (j restoredJob) Checkpoint(context.Context, string, func(Files) error) error {
	return errors.New("unused")
}
func (j restoredJob) Restart(context.Context) (Restored, error) { return j.Restored, nil }
func (j restoredJob) Finish(context.Context, string) error      { return nil }

// TestCheckpointInPlace runs ranks whose checkpoints live in a cache
// directory: CRIU dumps into the checkpoint's directory (what a crashed
// dump left there under the same name is gone, not stored), nothing is
// left in the scratch directories, and the relaunch restores every rank
// from its checkpoint's directory itself.
func TestCheckpointInPlace(t *testing.T) {
	w := newWorld(2, 2)
	w.dir = t.TempDir()
	// A dump of the step-2 checkpoint crashed in an earlier run.
	first := "t00000002"
	os.MkdirAll(w.partDir(first, 0), 0o700)
	os.WriteFile(filepath.Join(w.partDir(first, 0), "core-999.img"), []byte("half"), 0o600)
	ctx, cancel := context.WithCancel(t.Context())
	scratch := t.TempDir()
	rs := startRanksWith(t, ctx, w, func(r int, cfg *Config) { cfg.Scratch = filepath.Join(scratch, "rank", string(rune('0'+r))) })
	waitCommits(t, w, 1)
	cancel()
	w.wake()
	rs.wait(t)
	if w.names[0] != first {
		t.Fatalf("first checkpoint %s, want %s", w.names[0], first)
	}
	name := w.names[len(w.names)-1]
	for r := range 2 {
		entries, _ := os.ReadDir(w.partDir(name, r))
		var got []string
		for _, e := range entries {
			got = append(got, e.Name())
		}
		if !slices.Equal(got, []string{"fake.img", MetaFile}) {
			t.Errorf("rank %d's part of %s holds %v: want the image and the meta", r, name, got)
		}
		m, err := UnmarshalMeta(w.commits[len(w.commits)-1][r][MetaFile])
		if err != nil || !slices.Equal(m.Images, []string{"fake.img"}) {
			t.Errorf("rank %d: meta %+v, %v", r, m, err)
		}
	}
	if _, err := os.Stat(filepath.Join(w.partDir(first, 0), "core-999.img")); err == nil {
		t.Errorf("the crashed dump's image is still in the checkpoint's directory")
	}
	if left, _ := filepath.Glob(filepath.Join(scratch, "rank", "*", "*")); len(left) != 0 {
		t.Errorf("left in the scratch directories: %v", left)
	}

	w.seq, w.gathers = make([]int, 2), map[int][][]byte{}
	before := len(w.names)
	rs = startRanksWith(t, t.Context(), w, func(r int, cfg *Config) { cfg.Scratch = filepath.Join(scratch, "rank", string(rune('0'+r))) })
	waitCommits(t, w, before+1)
	rs.endAll(0)
	rs.wait(t)
	for r, run := range rs.runners {
		if rs.errs[r] != nil {
			t.Fatalf("rank %d: %v", r, rs.errs[r])
		}
		if len(run.dirs) != 1 || run.dirs[0] != w.partDir(name, r) {
			t.Errorf("rank %d restored from %v, want %s in place", r, run.dirs, w.partDir(name, r))
		}
	}
}

// TestFailedDumpInPlace: a dump that fails in the checkpoint's directory
// leaves nothing there, and no checkpoint.
func TestFailedDumpInPlace(t *testing.T) {
	w := newWorld(1, 2)
	w.dir = t.TempDir()
	tool := fakeTool(w)
	tool.FailDump = errors.New("criu crashed")
	var rep Report
	done := make(chan error, 1)
	r := &fakeRunner{w: w, rank: 0}
	go func() {
		var err error
		rep, err = Run(t.Context(), fakeJob{w: w, rank: 0}, Config{Runner: r, Tool: tool, Scratch: t.TempDir(), Tick: time.Millisecond})
		done <- err
	}()
	err := testwait.Recv(t, done, "the supervisor's end")
	if err == nil || !strings.Contains(err.Error(), "criu crashed") || rep.Checkpoints != 0 {
		t.Fatalf("Run: %+v, %v; want the dump's failure", rep, err)
	}
	if n := w.committed(); n != 0 {
		t.Errorf("%d checkpoints committed", n)
	}
	if left, _ := filepath.Glob(filepath.Join(w.dir, "*", "*", "*")); len(left) != 0 {
		t.Errorf("left in the cache: %v", left)
	}
}

// TestWriteBehind: the write-behind of a dump directory starts the
// writeback of the images CRIU writes (startWriteback, counted here, is
// called on them), leaves them as they are, skips a FIFO, copes with a
// file that goes away, and stops when told.
func TestWriteBehind(t *testing.T) {
	var (
		mu      sync.Mutex
		calls   = map[string]int{}
		stopped bool
	)
	written := make(chan struct{}, 1) // a call on pages-2.img
	orig := startWriteback
	startWriteback = func(f *os.File) bool {
		name := filepath.Base(f.Name())
		mu.Lock()
		calls[name]++
		late := stopped
		mu.Unlock()
		if late {
			t.Errorf("startWriteback(%s) after stop returned", name)
		}
		if name == "pages-2.img" {
			select {
			case written <- struct{}{}:
			default:
			}
		}
		return orig(f)
	}
	t.Cleanup(func() { startWriteback = orig })

	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "pages-1.img"), 0o600); err != nil {
		t.Fatal(err)
	}
	stop := writeBehind(dir)
	want := randomBytes(4<<20, 6)
	f, err := os.Create(filepath.Join(dir, "pages-2.img"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "gone.img"), want[:10], 0o600)
	for i := 0; i < len(want); i += 64 << 10 {
		if _, err := f.Write(want[i : i+64<<10]); err != nil {
			t.Fatal(err)
		}
		if i == len(want)/2 {
			os.Remove(filepath.Join(dir, "gone.img"))
		}
	}
	// The writeback of the pages image has started at least once
	// (writeBehind looks every writeBehindEvery, however long the
	// writes took).
	testwait.Recv(t, written, "writeBehind to start the writeback of pages-2.img")
	stop()
	mu.Lock()
	stopped = true
	n, fifo := calls["pages-2.img"], calls["pages-1.img"]
	mu.Unlock()
	f.Close()
	if n < 1 || fifo != 0 {
		t.Errorf("startWriteback called %d times on pages-2.img, %d on the FIFO; want at least 1 and none", n, fifo)
	}
	if got, err := os.ReadFile(filepath.Join(dir, "pages-2.img")); err != nil || !bytes.Equal(got, want) {
		t.Errorf("pages-2.img: %d bytes, %v; want the %d written", len(got), err, len(want))
	}
}
