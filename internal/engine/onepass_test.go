package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/cachetier"
	"github.com/ckpt/ckpt/internal/localcomm"
	"github.com/ckpt/ckpt/internal/manifest"
	"github.com/ckpt/ckpt/internal/storage/local"
	"github.com/ckpt/ckpt/internal/storage/mem"
	"github.com/ckpt/ckpt/storage"
)

// Issue 17: a restart reads each byte once. These tests make the reads
// and the failures happen.

// countingCache counts the bytes read from checkpoint name's objects, by
// object, through Open (a cache that is not a directory: every read of
// the rebuild and of a verification goes through Open).
type countingCache struct {
	storage.Backend
	name string
	mu   sync.Mutex
	read map[string]int64
}

func (c *countingCache) Open(ctx context.Context, obj string, off, length int64) (io.ReadCloser, error) {
	rc, err := c.Backend.Open(ctx, obj, off, length)
	if err != nil || !strings.HasPrefix(obj, c.name+"/") {
		return rc, err
	}
	return &countedReader{ReadCloser: rc, c: c, obj: obj}, nil
}

type countedReader struct {
	io.ReadCloser
	c   *countingCache
	obj string
}

func (r *countedReader) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	r.c.mu.Lock()
	if r.c.read == nil {
		r.c.read = map[string]int64{}
	}
	r.c.read[r.obj] += int64(n)
	r.c.mu.Unlock()
	return n, err
}

// A survivor of a node loss verifies its files in the pass that feeds the
// rebuild: every byte of its data and parity is read once, and the restart
// is verified (the rebuilt rank reads its data back exactly).
func TestRebuildReadsSurvivorsOnce(t *testing.T) {
	nodes, caches := setupLoss(t)
	counted := map[string]*countingCache{}
	for _, n := range []string{"n0", "n2", "n3"} {
		counted[n] = &countingCache{Backend: caches[n], name: "c2"}
		caches[n] = counted[n]
	}
	res, errs := restartAll(context.Background(), nodes, caches)
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
		if res[r].Name() != "c2" || res[r].Source != SourceRebuild {
			t.Fatalf("rank %d restored %s from %s, want c2 rebuilt", r, res[r].Name(), res[r].Source)
		}
	}
	m := res[0].m
	for r, n := range nodes {
		c := counted[n]
		if c == nil {
			continue
		}
		for _, obj := range []string{cachetier.FileObject("c2", r, "data"), cachetier.ParityObject("c2", r)} {
			info, err := c.Backend.Stat(context.Background(), obj)
			if err != nil {
				t.Fatal(err)
			}
			if got := c.read[obj]; got != info.Size {
				t.Errorf("rank %d read %d bytes of %s, a file of %d: want each byte once", r, got, obj, info.Size)
			}
		}
	}
	rc, err := res[1].Open("data")
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || !bytes.Equal(got, failData(1, "c2")) {
		t.Errorf("rank 1 reads %d bytes, %v; want its data (manifest %s)", len(got), err, m.Name)
	}
}

// A survivor whose file holds a wrong byte (the size right, so the check
// by sizes lets the rebuild start) is caught by its own hash in the
// rebuild's pass: the attempt fails with that survivor's file named, and
// the restart goes on to what the full check decides (here c1, since c2
// lost two members of its set).
func TestRebuildCorruptSurvivorCaughtInPass(t *testing.T) {
	nodes, caches := setupLoss(t)
	ctx := context.Background()
	obj := cachetier.FileObject("c2", 0, "data")
	b, err := storage.Load(ctx, caches["n0"], obj)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 1
	if _, err := storage.Save(ctx, caches["n0"], obj, bytes.NewReader(b)); err != nil {
		t.Fatal(err)
	}
	// The first attempt alone: the survivor's pass reports its file.
	comms := localcomm.Job(len(nodes))
	reasons := make([]string, len(nodes))
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for r, node := range nodes {
		e := New(Config{Rank: r, Size: len(nodes), Node: node, Cache: caches[node], Scheme: "xor:4", BlockSize: 4096, Comm: comms[r]})
		e.seen = &verifiedFiles{}
		wg.Go(func() {
			in, cands, err := e.gatherCandidates(ctx)
			if err != nil {
				errs[r] = err
				return
			}
			i := 0
			for j, c := range in.Checkpoints {
				if c.Name == "c2" {
					i = j
				}
			}
			var res *Restored
			res, _, reasons[r], errs[r] = e.quickRebuild(ctx, in, i, cands[i].cache)
			if res != nil {
				errs[r] = errors.New("the rebuild of c2 succeeded from a corrupt survivor")
			}
		})
	}
	wg.Wait()
	for r := range nodes {
		if errs[r] != nil {
			t.Fatalf("rank %d: %v", r, errs[r])
		}
		if !strings.Contains(reasons[r], "rank 0: "+obj) || !strings.Contains(reasons[r], "content hash") {
			t.Errorf("rank %d: the attempt failed for %q, want rank 0's hash of %s", r, reasons[r], obj)
		}
	}
	if left := partObjects(t, caches["spare"], "c2", 1); len(left) != 0 {
		t.Errorf("the failed rebuild left %v in the spare's cache", left)
	}
	// The whole restart: c2 is skipped, c1 rebuilt and read back exactly.
	res, errs := restartAll(ctx, nodes, caches)
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
		if res[r].Name() != "c1" {
			t.Fatalf("rank %d restored %s, want c1", r, res[r].Name())
		}
	}
	for r := range nodes {
		rc, err := res[r].Open("data")
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || !bytes.Equal(got, failData(r, "c1")) {
			t.Errorf("rank %d reads %d bytes of c1, %v; want its data", r, len(got), err)
		}
	}
}

// streamVerifier: blocks in any order, in any cut, duplicated or missing,
// give each object's hash; a wrong byte anywhere (a chunk hashed whole, one
// put together from pieces, one read at the end) or a wrong size fails.
func TestStreamVerifier(t *testing.T) {
	ctx := context.Background()
	cc := manifest.ContentChunk
	sizes := []int64{int64(2*cc + 123), 0, 17, int64(cc)}
	b := mem.New()
	var names []string
	var hashes []manifest.Hash
	var all []byte
	for i, size := range sizes {
		d := make([]byte, size)
		for j := range d {
			d[j] = byte(j*31 + i)
		}
		name := "s/" + string(rune('a'+i))
		if _, err := storage.Save(ctx, b, name, bytes.NewReader(d)); err != nil {
			t.Fatal(err)
		}
		names, hashes, all = append(names, name), append(hashes, manifest.ContentHashBytes(d)), append(all, d...)
	}
	const bs = 300_001 // blocks cut across chunks and files
	type block struct{ off, n int64 }
	var blocks []block
	for off := int64(0); off < int64(len(all)); off += bs {
		blocks = append(blocks, block{off, min(bs, int64(len(all))-off)})
	}
	run := func(t *testing.T, feed []block, flip int64) error {
		t.Helper()
		data := bytes.Clone(all)
		if flip >= 0 {
			data[flip] ^= 1
		}
		v := newStreamVerifier(names, sizes, hashes)
		for _, bl := range feed {
			v.add(bl.off, data[bl.off:bl.off+bl.n])
		}
		r := &objectsReaderAt{ctx: ctx, b: b, names: names, sizes: sizes}
		defer r.Close()
		return v.finish(ctx, r, b, nil, time.Now())
	}
	reversed := make([]block, 0, len(blocks))
	for i := len(blocks) - 1; i >= 0; i-- {
		reversed = append(reversed, blocks[i])
	}
	twice := append(append([]block{}, blocks...), blocks[1], blocks[3])
	gaps := append([]block{}, blocks[:2]...)
	gaps = append(gaps, blocks[4:]...)
	for name, feed := range map[string][]block{"in order": blocks, "reversed": reversed, "twice": twice, "gaps": gaps} {
		t.Run(name, func(t *testing.T) {
			if err := run(t, feed, -1); err != nil {
				t.Fatalf("intact: %v", err)
			}
			for _, flip := range []int64{0, int64(cc) + 5, bs - 1, bs, int64(len(all)) - 1} {
				fed := false
				for _, bl := range feed {
					fed = fed || bl.off <= flip && flip < bl.off+bl.n
				}
				if !fed {
					continue // the file is read there, and it is intact
				}
				if err := run(t, feed, flip); !errors.Is(err, manifest.ErrCorrupt) {
					t.Errorf("byte %d flipped: %v, want ErrCorrupt", flip, err)
				}
			}
		})
	}
	t.Run("gap filled from a damaged file", func(t *testing.T) {
		// What no block held is read at the end: damage there is found.
		d, _ := storage.Load(ctx, b, names[0])
		d[2*bs+7] ^= 1
		storage.Save(ctx, b, names[0], bytes.NewReader(d))
		defer func() { d[2*bs+7] ^= 1; storage.Save(ctx, b, names[0], bytes.NewReader(d)) }()
		if err := run(t, gaps, -1); !errors.Is(err, manifest.ErrCorrupt) {
			t.Errorf("%v, want ErrCorrupt", err)
		}
	})
	t.Run("truncated", func(t *testing.T) {
		d, _ := storage.Load(ctx, b, names[2])
		storage.Save(ctx, b, names[2], bytes.NewReader(d[:10]))
		defer storage.Save(ctx, b, names[2], bytes.NewReader(d))
		if err := run(t, blocks, -1); !errors.Is(err, manifest.ErrCorrupt) {
			t.Errorf("%v, want ErrCorrupt", err)
		}
	})
}

// restartOne commits data as checkpoint c1 on one rank with a cache in
// dir, makes the file look old (see racyWindow) if old, and restarts.
func restartOne(t *testing.T, dir string, data []byte, old bool) (*Restored, string) {
	t.Helper()
	ctx := context.Background()
	cache, err := local.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cache.Close() })
	e := New(Config{Rank: 0, Size: 1, Node: "n0", Cache: cache, Comm: localcomm.Solo{}})
	c, err := e.Start("c1")
	if err != nil {
		t.Fatal(err)
	}
	f, err := c.Create("data")
	if err != nil {
		t.Fatal(err)
	}
	f.Write(data)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	path, ok := cache.Path(cachetier.FileObject("c1", 0, "data"))
	if !ok {
		t.Fatal("no path")
	}
	if old {
		hour := time.Now().Add(-time.Hour)
		if err := os.Chtimes(path, hour, hour); err != nil {
			t.Fatal(err)
		}
	}
	res, err := e.Restart(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return res, path
}

func flipAt(t *testing.T, path string, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := []byte{0}
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 1
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// A file Restart verified is opened without hashing it again (its stamp
// is known), reads back exactly; a byte flipped after the verification,
// before the open or during the read, fails the read at its end.
func TestOpenVerifiedOnce(t *testing.T) {
	skipWithoutStamps(t)
	defer func(w time.Duration) { racyWindow = w }(racyWindow)
	// The file's mtime is made an hour old, but its ctime is the Chtimes
	// itself, just before the restart: no window, so only a time after
	// the verification's start is racy.
	racyWindow = 0
	data := bytes.Repeat([]byte("restart once "), 200_000)
	read := func(res *Restored, during func()) ([]byte, error) {
		rc, err := res.Open("data")
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		head := make([]byte, 1000)
		if _, err := io.ReadFull(rc, head); err != nil {
			return nil, err
		}
		if during != nil {
			during()
		}
		rest, err := io.ReadAll(rc)
		return append(head, rest...), err
	}
	t.Run("intact", func(t *testing.T) {
		res, _ := restartOne(t, t.TempDir(), data, true)
		rc := res.openVerified(cachetier.FileObject("c1", 0, "data"), res.m.Parts[0].Files[0])
		if rc == nil {
			t.Fatal("the verified file would be hashed again at Open")
		}
		rc.Close()
		got, err := read(res, nil)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("read %d bytes, %v; want the data", len(got), err)
		}
	})
	t.Run("flipped before the open", func(t *testing.T) {
		res, path := restartOne(t, t.TempDir(), data, true)
		flipAt(t, path, 5000)
		if _, err := read(res, nil); !errors.Is(err, manifest.ErrCorrupt) {
			t.Fatalf("%v, want ErrCorrupt", err)
		}
	})
	t.Run("flipped during the read", func(t *testing.T) {
		res, path := restartOne(t, t.TempDir(), data, true)
		if _, err := read(res, func() { flipAt(t, path, int64(len(data))-10) }); !errors.Is(err, manifest.ErrCorrupt) {
			t.Fatalf("%v, want ErrCorrupt", err)
		}
	})
	t.Run("truncated", func(t *testing.T) {
		res, path := restartOne(t, t.TempDir(), data, true)
		if err := os.Truncate(path, 3000); err != nil {
			t.Fatal(err)
		}
		if _, err := read(res, nil); !errors.Is(err, manifest.ErrCorrupt) {
			t.Fatalf("%v, want ErrCorrupt", err)
		}
	})
}

// A file written just before the restart verified it is racily clean (a
// change in the same tick of the file system's clock could keep its
// times): Open hashes it again, and a flip after the verification is
// caught by the hash.
func TestOpenRacyFileHashedAgain(t *testing.T) {
	// The window is made an hour: the file is written just before the
	// restart, but on a loaded machine "just before" (the commit, then
	// the restart's planning) can take longer than the real window's
	// second, and the test must not depend on how long it took.
	defer func(w time.Duration) { racyWindow = w }(racyWindow)
	racyWindow = time.Hour
	data := bytes.Repeat([]byte("racy "), 100_000)
	res, path := restartOne(t, t.TempDir(), data, false)
	if rc := res.openVerified(cachetier.FileObject("c1", 0, "data"), res.m.Parts[0].Files[0]); rc != nil {
		rc.Close()
		t.Fatal("a file written within racyWindow of its verification is trusted by its stamp")
	}
	flipAt(t, path, 77)
	rc, err := res.Open("data")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if _, err := io.ReadAll(rc); !errors.Is(err, manifest.ErrCorrupt) {
		t.Fatalf("%v, want ErrCorrupt", err)
	}
}

// BenchmarkRestartOpen is a restart without loss as the application pays
// it: Restart (which hashes the file) and the read of the file through
// Open, one rank, 64 MiB, hot in the page cache. Profile with
// -cpuprofile to see where a restart's time goes (issue 17).
func BenchmarkRestartOpen(b *testing.B) {
	defer func(w time.Duration) { racyWindow = w }(racyWindow)
	racyWindow = 0 // the file was just written: trust its stamp anyway
	ctx := context.Background()
	cache, err := local.New(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer cache.Close()
	e := New(Config{Rank: 0, Size: 1, Node: "n0", Cache: cache, Comm: localcomm.Solo{}})
	c, err := e.Start("c1")
	if err != nil {
		b.Fatal(err)
	}
	f, err := c.Create("data")
	if err != nil {
		b.Fatal(err)
	}
	data := bytes.Repeat([]byte("0123456789abcdef"), 4<<20)
	f.Write(data)
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	if err := c.Commit(ctx); err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 1<<20)
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for range b.N {
		res, err := e.Restart(ctx)
		if err != nil {
			b.Fatal(err)
		}
		rc, err := res.Open("data")
		if err != nil {
			b.Fatal(err)
		}
		n, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{rc}, buf)
		rc.Close()
		if err != nil || n != int64(len(data)) {
			b.Fatalf("read %d bytes, %v", n, err)
		}
	}
}

// skipWithoutStamps skips (loudly) where stampOf gives no stamp: off
// Linux, where Open hashes every file. The probe is a file of the test's
// own, not one the environment may lack (a closed standard input would
// skip the test on Linux too).
func skipWithoutStamps(t *testing.T) {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "probe")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, ok := stampOf(f); !ok {
		if runtime.GOOS == "linux" {
			// stamp_linux.go always has them: their absence is a bug.
			t.Fatal("no file stamp of a temporary file on Linux")
		}
		t.Skip("SKIPPED: no file stamps on " + runtime.GOOS + ": Open hashes every file")
	}
}

// A stamp vouches only for the content it was verified against: a
// Restored whose manifest gives the same object another hash (a manifest
// of the same name, other content) hashes the file as it reads it, and
// the read fails, rather than trusting the stamp.
func TestOpenStampBoundToItsHash(t *testing.T) {
	skipWithoutStamps(t)
	defer func(w time.Duration) { racyWindow = w }(racyWindow)
	racyWindow = 0 // see TestOpenVerifiedOnce
	data := bytes.Repeat([]byte("one manifest "), 100_000)
	res, _ := restartOne(t, t.TempDir(), data, true)
	obj := cachetier.FileObject("c1", 0, "data")
	if rc := res.openVerified(obj, res.m.Parts[0].Files[0]); rc == nil {
		t.Fatal("the verified file would be hashed again at Open")
	} else {
		rc.Close()
	}
	other := manifest.ContentHashBytes(bytes.Repeat([]byte("another one! "), 100_000))
	res.m.Parts[0].Files[0].Hash = other
	rc, err := res.Open("data")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if _, err := io.ReadAll(rc); !errors.Is(err, manifest.ErrCorrupt) {
		t.Fatalf("%v, want ErrCorrupt: the stamp of a file verified against one hash vouched for another", err)
	}
}

// streamVerifier against the content hash, over random layouts: files of
// any size (empty, under a chunk, a last chunk partial, whole chunks),
// fed blocks cut anywhere, duplicated, overlapping, out of order, short,
// and some bytes never fed (read at the end). Intact, every layout
// verifies; a byte flipped in what the blocks carry, or in what the file
// holds where no block carried it, fails with ErrCorrupt.
func TestStreamVerifierRandom(t *testing.T) {
	ctx := context.Background()
	cc := int64(manifest.ContentChunk)
	rng := rand.New(rand.NewPCG(17, 71))
	sizeOf := []func() int64{
		func() int64 { return 0 },
		func() int64 { return 1 + rng.Int64N(1000) },
		func() int64 { return cc },
		func() int64 { return cc + 1 + rng.Int64N(cc-1) },
		func() int64 { return 2*cc - 1 },
		func() int64 { return 2 * cc },
	}
	for round := range 12 {
		n := 1 + rng.IntN(4)
		b := mem.New()
		var names []string
		var sizes []int64
		var hashes []manifest.Hash
		var all []byte
		for i := range n {
			size := sizeOf[rng.IntN(len(sizeOf))]()
			d := make([]byte, size)
			for j := range d {
				d[j] = byte(rng.Uint32())
			}
			name := fmt.Sprintf("r%d/%d", round, i)
			if _, err := storage.Save(ctx, b, name, bytes.NewReader(d)); err != nil {
				t.Fatal(err)
			}
			names, sizes = append(names, name), append(sizes, size)
			hashes, all = append(hashes, manifest.ContentHashBytes(d)), append(all, d...)
		}
		total := int64(len(all))
		type block struct{ off, n int64 }
		var feed []block
		if total > 0 {
			for range 1 + rng.IntN(40) {
				off := rng.Int64N(total)
				ln := min(total-off, 1+rng.Int64N(cc+cc/2))
				feed = append(feed, block{off, ln})
				if rng.IntN(4) == 0 {
					feed = append(feed, block{off, ln}) // read twice
				}
				if rng.IntN(4) == 0 && ln > 1 {
					feed = append(feed, block{off + ln/2, ln - ln/2}) // overlapping, short
				}
			}
		}
		run := func(blockFlip, fileFlip int64) error {
			fed := bytes.Clone(all)
			if blockFlip >= 0 {
				fed[blockFlip] ^= 1
			}
			if fileFlip >= 0 {
				i, at := 0, fileFlip
				for at >= sizes[i] {
					at -= sizes[i]
					i++
				}
				d := bytes.Clone(all[fileFlip-at : fileFlip-at+sizes[i]])
				d[at] ^= 1
				if _, err := storage.Save(ctx, b, names[i], bytes.NewReader(d)); err != nil {
					t.Fatal(err)
				}
				defer storage.Save(ctx, b, names[i], bytes.NewReader(all[fileFlip-at:fileFlip-at+sizes[i]]))
			}
			v := newStreamVerifier(names, sizes, hashes)
			for _, k := range rng.Perm(len(feed)) {
				bl := feed[k]
				v.add(bl.off, fed[bl.off:bl.off+bl.n])
			}
			r := &objectsReaderAt{ctx: ctx, b: b, names: names, sizes: sizes}
			defer r.Close()
			return v.finish(ctx, r, b, nil, time.Now())
		}
		if err := run(-1, -1); err != nil {
			t.Fatalf("round %d, sizes %v, %d blocks: intact: %v", round, sizes, len(feed), err)
		}
		if total == 0 {
			continue
		}
		covered := make([]bool, total)
		for _, bl := range feed {
			for j := bl.off; j < bl.off+bl.n; j++ {
				covered[j] = true
			}
		}
		for range 4 {
			at := rng.Int64N(total)
			var err error
			if covered[at] {
				// Every block holding byte at carries the flip: the
				// bytes the rebuild used are wrong.
				err = run(at, -1)
			} else {
				err = run(-1, at)
			}
			if !errors.Is(err, manifest.ErrCorrupt) {
				t.Fatalf("round %d, sizes %v: byte %d (fed by a block: %v) flipped: %v, want ErrCorrupt", round, sizes, at, covered[at], err)
			}
		}
	}
}

// A chunk begun in pieces and then given whole holds no buffer after:
// the verifier's memory stays bounded by the chunks still incomplete.
func TestStreamVerifierFreesPieces(t *testing.T) {
	cc := int64(manifest.ContentChunk)
	d := make([]byte, 2*cc)
	v := newStreamVerifier([]string{"x"}, []int64{2 * cc}, []manifest.Hash{manifest.ContentHashBytes(d)})
	v.add(10, d[10:100])
	if len(v.parts) != 1 {
		t.Fatalf("%d chunks being put together, want 1", len(v.parts))
	}
	v.add(0, d[:cc+5])
	if len(v.parts) != 1 || v.parts[[2]int{0, 1}] == nil {
		t.Fatalf("chunks being put together: %v, want chunk 1 alone", slices.Collect(maps.Keys(v.parts)))
	}
	if !v.done[0][0] {
		t.Fatal("chunk 0, given whole, is not done")
	}
}
