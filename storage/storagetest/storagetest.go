// Package storagetest is the conformance suite for storage.Backend: every
// backend runs it from a short test file,
//
//	func TestBackend(t *testing.T) {
//		storagetest.Run(t, func(t *testing.T) storage.Backend {
//			b, err := local.New(t.TempDir())
//			if err != nil {
//				t.Fatal(err)
//			}
//			return b
//		})
//	}
//
// and so behaves as the contract in package storage says. Behaviour that
// storage.Properties lets backends differ in is checked against what the
// backend declares.
package storagetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ckpt/ckpt/storage"
)

// LargeSize is the size of the object that the suite streams through each
// backend (less under go test -short).
const LargeSize = 64 << 20

// tests are the suite's subtests, in the order they run.
var tests = []struct {
	name string
	fn   func(t *testing.T, b storage.Backend)
}{
	{"RoundTrip", testRoundTrip},
	{"RoundTripLarge", testRoundTripLarge},
	{"ReadRanges", testReadRanges},
	{"Uncommitted", testUncommitted},
	{"Abort", testAbort},
	{"WriterAfterDone", testWriterAfterDone},
	{"Overwrite", testOverwrite},
	{"AtomicReplace", testAtomicReplace},
	{"ConcurrentCommitSameName", testConcurrentCommitSameName},
	{"ReaderOutlivesReplace", testReaderOutlivesReplace},
	{"List", testList},
	{"ListStop", testListStop},
	{"ListCallbackUsesBackend", testListCallbackUsesBackend},
	{"Remove", testRemove},
	{"NotExist", testNotExist},
	{"InvalidNames", testInvalidNames},
	{"ValidNames", testValidNames},
	{"Hierarchy", testHierarchy},
	{"ConcurrentWriters", testConcurrentWriters},
	{"ConcurrentCreateRemove", testConcurrentCreateRemove},
	{"Context", testContext},
	{"Close", testClose},
}

// Run runs the conformance suite, one subtest per property. newBackend is
// called once per subtest and must return an empty backend; it registers
// any cleanup with t.Cleanup. Run closes the backend when the subtest ends.
func Run(t *testing.T, newBackend func(t *testing.T) storage.Backend) {
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := newBackend(t)
			t.Cleanup(func() {
				if err := b.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
			tc.fn(t, b)
		})
	}
}

// randomBytes returns n bytes that depend only on n and seed.
func randomBytes(n int, seed uint64) []byte {
	r := rand.NewChaCha8([32]byte{byte(n), byte(n >> 8), byte(n >> 16), byte(seed)})
	p := make([]byte, n)
	_, _ = r.Read(p)
	return p
}

// save commits data under name, writing it in chunks of chunk bytes.
func save(t *testing.T, b storage.Backend, name string, data []byte, chunk int) {
	t.Helper()
	w, err := b.Create(t.Context(), name)
	if err != nil {
		t.Fatalf("Create(%q): %v", name, err)
	}
	for p := data; len(p) > 0; {
		n := min(chunk, len(p))
		if k, err := w.Write(p[:n]); err != nil || k != n {
			t.Fatalf("Write(%q) = %d, %v; want %d, nil", name, k, err, n)
		}
		p = p[n:]
	}
	if err := w.Commit(); err != nil {
		t.Fatalf("Commit(%q): %v", name, err)
	}
}

// load returns the whole object, failing the test if it cannot.
func load(t *testing.T, b storage.Backend, name string) []byte {
	t.Helper()
	data, err := storage.Load(t.Context(), b, name)
	if err != nil {
		t.Fatalf("Load(%q): %v", name, err)
	}
	return data
}

// list returns the infos List reports for prefix.
func list(t *testing.T, b storage.Backend, prefix string) []storage.Info {
	t.Helper()
	var infos []storage.Info
	if err := b.List(t.Context(), prefix, func(info storage.Info) error {
		infos = append(infos, info)
		return nil
	}); err != nil {
		t.Fatalf("List(%q): %v", prefix, err)
	}
	return infos
}

func names(infos []storage.Info) []string {
	var ns []string
	for _, info := range infos {
		ns = append(ns, info.Name)
	}
	return ns
}

// wantNotExist checks that err says the object does not exist, in both
// sentinels' terms, and that it is permanent.
func wantNotExist(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, storage.ErrNotExist) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s: got error %v, want one matching storage.ErrNotExist and fs.ErrNotExist", what, err)
		return
	}
	if !storage.IsPermanent(err) {
		t.Errorf("%s: IsPermanent(%v) = false for a missing object", what, err)
	}
}

// wantAbsent checks that name is invisible to Open, Stat and List.
func wantAbsent(t *testing.T, b storage.Backend, name string) {
	t.Helper()
	_, err := b.Stat(t.Context(), name)
	wantNotExist(t, fmt.Sprintf("Stat(%q)", name), err)
	r, err := b.Open(t.Context(), name, 0, -1)
	if err == nil {
		r.Close()
	}
	wantNotExist(t, fmt.Sprintf("Open(%q)", name), err)
	for _, info := range list(t, b, "") {
		if info.Name == name {
			t.Errorf("List reports %q, which should not exist", name)
		}
	}
}

// wantContent checks that name holds data, by Load, Stat and List.
func wantContent(t *testing.T, b storage.Backend, name string, data []byte) {
	t.Helper()
	if got := load(t, b, name); !bytes.Equal(got, data) {
		t.Errorf("Load(%q): got %d bytes, want %d (equal: %v)", name, len(got), len(data), bytes.Equal(got, data))
	}
	info, err := b.Stat(t.Context(), name)
	if err != nil || info != (storage.Info{Name: name, Size: int64(len(data))}) {
		t.Errorf("Stat(%q) = %+v, %v; want size %d", name, info, err, len(data))
	}
	found := false
	for _, info := range list(t, b, name) {
		if info.Name == name {
			found = true
			if info.Size != int64(len(data)) {
				t.Errorf("List reports %q of %d bytes, want %d", name, info.Size, len(data))
			}
		}
	}
	if !found {
		t.Errorf("List(%q) does not report %q", name, name)
	}
}

func testRoundTrip(t *testing.T, b storage.Backend) {
	for i, size := range []int{0, 1, 100, 4095, 4096, 4097, 1<<20 + 3} {
		data := randomBytes(size, uint64(i))
		name := fmt.Sprintf("rt/size-%d", size)
		save(t, b, name, data, 1000)
		wantContent(t, b, name, data)

		// The same through Save, which may take a ReadFrom path.
		name2 := fmt.Sprintf("rt/save-%d", size)
		n, err := storage.Save(t.Context(), b, name2, bytes.NewReader(data))
		if err != nil || n != int64(size) {
			t.Fatalf("Save(%q) = %d, %v; want %d, nil", name2, n, err, size)
		}
		wantContent(t, b, name2, data)
	}
}

// pattern yields the bytes of a large object: random bytes repeating with a
// period that no write or read size divides, so a byte out of place shows.
type pattern struct {
	block []byte
	off   int
}

func (p *pattern) fill(buf []byte) {
	for i := 0; i < len(buf); {
		n := copy(buf[i:], p.block[p.off:])
		i += n
		p.off = (p.off + n) % len(p.block)
	}
}

func testRoundTripLarge(t *testing.T, b storage.Backend) {
	size := LargeSize
	if testing.Short() {
		size = 4 << 20
	}
	const name = "large/object.bin"
	src := pattern{block: randomBytes(1<<20+7, 1)}
	writeSizes := []int{1, 7, 4093, 65537, 1<<20 + 13, 3, 333333}
	buf := make([]byte, slices.Max(writeSizes))
	want := sha256.New()

	w, err := b.Create(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	for written, i := 0, 0; written < size; i++ {
		p := buf[:min(writeSizes[i%len(writeSizes)], size-written)]
		src.fill(p)
		want.Write(p)
		if n, err := w.Write(p); err != nil || n != len(p) {
			w.Abort()
			t.Fatalf("Write at %d = %d, %v; want %d, nil", written, n, err, len(p))
		}
		written += len(p)
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}

	info, err := b.Stat(t.Context(), name)
	if err != nil || info.Size != int64(size) {
		t.Fatalf("Stat = %+v, %v; want size %d", info, err, size)
	}
	r, err := b.Open(t.Context(), name, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got := sha256.New()
	readSizes := []int{7777, 1, 65536, 1<<20 + 1}
	total := 0
	for i := 0; ; i++ {
		n, err := r.Read(buf[:readSizes[i%len(readSizes)]])
		got.Write(buf[:n])
		total += n
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("Read at %d: %v", total, err)
		}
	}
	if total != size {
		t.Fatalf("read %d bytes, want %d", total, size)
	}
	if !bytes.Equal(got.Sum(nil), want.Sum(nil)) {
		t.Fatalf("read back bytes differ from those written (SHA-256 mismatch)")
	}
}

func testReadRanges(t *testing.T, b storage.Backend) {
	const size = 10000
	data := randomBytes(size, 2)
	save(t, b, "ranges", data, 3333)
	for _, c := range []struct{ off, length int64 }{
		{0, -1}, {0, 0}, {0, 1}, {0, size}, {0, size + 1}, {1, 10}, {123, 4567},
		{size - 1, -1}, {size - 1, 1}, {size - 1, 10}, {size, -1}, {size, 5},
		{size + 1, -1}, {2 * size, 5}, {5000, 0},
	} {
		r, err := b.Open(t.Context(), "ranges", c.off, c.length)
		if err != nil {
			t.Errorf("Open(off %d, len %d): %v", c.off, c.length, err)
			continue
		}
		got, err := io.ReadAll(r)
		r.Close()
		end := int64(size)
		if c.length >= 0 {
			end = min(end, c.off+c.length)
		}
		want := data[min(c.off, size):max(min(c.off, size), end)]
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("Open(off %d, len %d): read %d bytes, %v; want %d bytes", c.off, c.length, len(got), err, len(want))
		}
	}
	if r, err := b.Open(t.Context(), "ranges", -1, 10); err == nil {
		r.Close()
		t.Errorf("Open with offset -1: no error")
	}
}

func testUncommitted(t *testing.T, b storage.Backend) {
	w, err := b.Create(t.Context(), "dir/new")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	if _, err := w.Write([]byte("not yet")); err != nil {
		t.Fatal(err)
	}
	wantAbsent(t, b, "dir/new")
	if infos := list(t, b, ""); len(infos) != 0 {
		t.Errorf("List shows %v while only an uncommitted object exists", infos)
	}

	// An uncommitted replacement leaves the old object in view.
	old := []byte("old contents")
	save(t, b, "dir/old", old, 5)
	w2, err := b.Create(t.Context(), "dir/old")
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Abort()
	if _, err := w2.Write([]byte("new contents, longer")); err != nil {
		t.Fatal(err)
	}
	wantContent(t, b, "dir/old", old)
	if got := names(list(t, b, "")); !slices.Equal(got, []string{"dir/old"}) {
		t.Errorf("List = %q, want only dir/old", got)
	}
}

func testAbort(t *testing.T, b storage.Backend) {
	w, err := b.Create(t.Context(), "a/b/aborted")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(randomBytes(5000, 3)); err != nil {
		t.Fatal(err)
	}
	if err := w.Abort(); err != nil {
		t.Fatalf("Abort: %v", err)
	}
	if err := w.Abort(); err != nil {
		t.Fatalf("second Abort: %v", err)
	}
	wantAbsent(t, b, "a/b/aborted")
	if infos := list(t, b, ""); len(infos) != 0 {
		t.Errorf("List after Abort = %v, want nothing", infos)
	}
	if err := w.Commit(); !errors.Is(err, storage.ErrClosed) {
		t.Errorf("Commit after Abort = %v, want ErrClosed", err)
	}
	wantAbsent(t, b, "a/b/aborted")

	// Aborting a replacement keeps the old object.
	save(t, b, "kept", []byte("v1"), 10)
	w, err = b.Create(t.Context(), "kept")
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("v2 v2 v2"))
	if err := w.Abort(); err != nil {
		t.Fatal(err)
	}
	wantContent(t, b, "kept", []byte("v1"))

	// Save aborts when its reader fails.
	errRead := errors.New("reader broke")
	r := io.MultiReader(bytes.NewReader([]byte("partial")), iotestErrReader{errRead})
	if _, err := storage.Save(t.Context(), b, "broken", r); !errors.Is(err, errRead) {
		t.Errorf("Save with a failing reader = %v, want %v", err, errRead)
	}
	wantAbsent(t, b, "broken")
}

type iotestErrReader struct{ err error }

func (r iotestErrReader) Read([]byte) (int, error) { return 0, r.err }

func testWriterAfterDone(t *testing.T, b storage.Backend) {
	w, err := b.Create(t.Context(), "done")
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("data"))
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("more")); !errors.Is(err, storage.ErrClosed) {
		t.Errorf("Write after Commit = %v, want ErrClosed", err)
	}
	if err := w.Commit(); !errors.Is(err, storage.ErrClosed) {
		t.Errorf("second Commit = %v, want ErrClosed", err)
	}
	if err := w.Abort(); err != nil {
		t.Errorf("Abort after Commit = %v, want nil", err)
	}
	if err := w.Abort(); err != nil {
		t.Errorf("second Abort after Commit = %v, want nil", err)
	}
	wantContent(t, b, "done", []byte("data"))
}

func testOverwrite(t *testing.T, b storage.Backend) {
	long := randomBytes(100000, 4)
	short := []byte("short")
	save(t, b, "x/obj", long, 7000)
	save(t, b, "x/obj", short, 1)
	wantContent(t, b, "x/obj", short)
	save(t, b, "x/obj", long, 100000)
	wantContent(t, b, "x/obj", long)
	save(t, b, "x/obj", nil, 1)
	wantContent(t, b, "x/obj", nil)
	if got := names(list(t, b, "")); !slices.Equal(got, []string{"x/obj"}) {
		t.Errorf("List after overwrites = %q, want [x/obj]", got)
	}
}

// version returns the contents of version v of an object in the replace
// tests: the byte v repeated a length that depends on v.
func version(v int) []byte {
	return bytes.Repeat([]byte{byte(v)}, versionLen(v))
}

func versionLen(v int) int { return 64<<10 + v*4099 }

// checkVersion reports what is wrong with data, read as some version.
func checkVersion(data []byte) error {
	if len(data) == 0 {
		return errors.New("empty object")
	}
	v := int(data[0])
	if want := versionLen(v); len(data) != want {
		return fmt.Errorf("version %d has %d bytes, want %d", v, len(data), want)
	}
	if n := bytes.Count(data, data[:1]); n != len(data) {
		return fmt.Errorf("version %d mixed with %d other bytes", v, len(data)-n)
	}
	return nil
}

func testAtomicReplace(t *testing.T, b storage.Backend) {
	const name = "ckpt/latest"
	const versions = 30
	save(t, b, name, version(1), 1<<20)
	var done atomic.Bool
	var wg sync.WaitGroup
	var reads atomic.Int64
	for range 3 {
		wg.Go(func() {
			for !done.Load() {
				data, err := storage.Load(context.Background(), b, name)
				if err != nil {
					t.Errorf("Load during replace: %v", err)
					return
				}
				if err := checkVersion(data); err != nil {
					t.Errorf("Load during replace: %v", err)
					return
				}
				reads.Add(1)
				runtime.Gosched()
			}
		})
	}
	for v := 2; v <= versions; v++ {
		// Several writes per version, so a reader can catch a partial one.
		data := version(v)
		w, err := b.Create(t.Context(), name)
		if err != nil {
			t.Fatal(err)
		}
		for p := data; len(p) > 0; {
			n := min(len(p), 10000)
			if _, err := w.Write(p[:n]); err != nil {
				t.Fatal(err)
			}
			p = p[n:]
			runtime.Gosched()
		}
		if err := w.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	done.Store(true)
	wg.Wait()
	wantContent(t, b, name, version(versions))
	t.Logf("%d whole reads during %d replacements", reads.Load(), versions-1)
}

func testConcurrentCommitSameName(t *testing.T, b storage.Backend) {
	const name = "race/obj"
	var wg sync.WaitGroup
	for v := 1; v <= 8; v++ {
		wg.Go(func() {
			w, err := b.Create(context.Background(), name)
			if err != nil {
				t.Error(err)
				return
			}
			data := version(v)
			for p := data; len(p) > 0; {
				n := min(len(p), 8192)
				if _, err := w.Write(p[:n]); err != nil {
					t.Error(err)
					w.Abort()
					return
				}
				p = p[n:]
				runtime.Gosched()
			}
			if err := w.Commit(); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if err := checkVersion(load(t, b, name)); err != nil {
		t.Errorf("after concurrent commits: %v", err)
	}
	if got := names(list(t, b, "")); !slices.Equal(got, []string{name}) {
		t.Errorf("List = %q, want [%s]", got, name)
	}
}

func testReaderOutlivesReplace(t *testing.T, b storage.Backend) {
	old := randomBytes(300000, 5)
	save(t, b, "r/obj", old, 1<<20)
	r, err := b.Open(t.Context(), "r/obj", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	head := make([]byte, 1000)
	if _, err := io.ReadFull(r, head); err != nil {
		t.Fatal(err)
	}
	save(t, b, "r/obj", []byte("replacement"), 100)
	rest, err := io.ReadAll(r)
	if err != nil || !bytes.Equal(append(head, rest...), old) {
		t.Errorf("reader opened before a replace: got %d bytes, %v; want the old %d bytes", len(head)+len(rest), err, len(old))
	}

	r2, err := b.Open(t.Context(), "r/obj", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	if err := b.Remove(t.Context(), "r/obj"); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r2)
	if err != nil || string(got) != "replacement" {
		t.Errorf("reader opened before a remove: got %q, %v", got, err)
	}
}

// listNames are objects whose names sort differently byte-wise than a
// depth-first walk of directories would list them ("a-" < "a.b" < "a/b" <
// "a0"), and none of which is a prefix directory of another.
var listNames = []string{
	"a-", "a.b", "a/b", "a/c/d", "a/c/e", "a0", "ab", "b/x",
	"ckpt.0007/rank-3/state.bin", "ckpt.0007/MANIFEST", "ckpt.0010/rank-0/state.bin",
	"z",
}

func testList(t *testing.T, b storage.Backend) {
	for i, name := range listNames {
		save(t, b, name, randomBytes(i, 6), 1000)
	}
	sorted := slices.Sorted(slices.Values(listNames))
	infos := list(t, b, "")
	if got := names(infos); !slices.Equal(got, sorted) {
		t.Errorf("List(\"\") = %q\nwant %q", got, sorted)
	}
	for _, info := range infos {
		if i := slices.Index(listNames, info.Name); i < 0 || info.Size != int64(i) {
			t.Errorf("List reports %+v, want size %d", info, i)
		}
	}
	for _, prefix := range []string{
		"a", "a/", "a/c", "a/c/", "a/c/d", "a.", "a/b", "ab", "b", "b/", "c",
		"ckpt.00", "ckpt.0007/", "ckpt.0007/rank-", "ckpt.0010/rank-0/state.bin",
		"nothing", "nothing/", "z/", "a/x/",
	} {
		var want []string
		for _, name := range sorted {
			if strings.HasPrefix(name, prefix) {
				want = append(want, name)
			}
		}
		if got := names(list(t, b, prefix)); !slices.Equal(got, want) {
			t.Errorf("List(%q) = %q, want %q", prefix, got, want)
		}
	}
}

func testListStop(t *testing.T, b storage.Backend) {
	for _, name := range listNames {
		save(t, b, name, []byte(name), 100)
	}
	errStop := errors.New("stop here")
	var seen []string
	err := b.List(t.Context(), "", func(info storage.Info) error {
		seen = append(seen, info.Name)
		if len(seen) == 3 {
			return errStop
		}
		return nil
	})
	if err != errStop {
		t.Errorf("List with a failing callback = %v, want %v unchanged", err, errStop)
	}
	if want := slices.Sorted(slices.Values(listNames))[:3]; !slices.Equal(seen, want) {
		t.Errorf("callback saw %q, want %q", seen, want)
	}
}

func testListCallbackUsesBackend(t *testing.T, b storage.Backend) {
	for _, name := range listNames {
		save(t, b, name, []byte(name), 100)
	}
	// Remove every object from within the callback, and read it first.
	var seen []string
	err := b.List(t.Context(), "", func(info storage.Info) error {
		seen = append(seen, info.Name)
		if data := load(t, b, info.Name); string(data) != info.Name {
			t.Errorf("Load(%q) in callback = %q", info.Name, data)
		}
		return b.Remove(t.Context(), info.Name)
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := slices.Sorted(slices.Values(listNames)); !slices.Equal(seen, want) {
		t.Errorf("callback saw %q, want %q", seen, want)
	}
	if infos := list(t, b, ""); len(infos) != 0 {
		t.Errorf("List after removing all = %v", infos)
	}
}

func testRemove(t *testing.T, b storage.Backend) {
	save(t, b, "d/e/f", []byte("1"), 1)
	save(t, b, "d/e/g", []byte("2"), 1)
	if err := b.Remove(t.Context(), "d/e/f"); err != nil {
		t.Fatal(err)
	}
	wantAbsent(t, b, "d/e/f")
	wantContent(t, b, "d/e/g", []byte("2"))
	wantNotExist(t, "second Remove", b.Remove(t.Context(), "d/e/f"))
	if err := b.Remove(t.Context(), "d/e/g"); err != nil {
		t.Fatal(err)
	}
	if infos := list(t, b, ""); len(infos) != 0 {
		t.Errorf("List after removing all = %v", infos)
	}
	// The names can be used again, as can their parents as objects.
	save(t, b, "d/e/f", []byte("3"), 1)
	wantContent(t, b, "d/e/f", []byte("3"))
	if err := b.Remove(t.Context(), "d/e/f"); err != nil {
		t.Fatal(err)
	}
	save(t, b, "d", []byte("4"), 1)
	wantContent(t, b, "d", []byte("4"))
}

func testNotExist(t *testing.T, b storage.Backend) {
	save(t, b, "present/obj", []byte("x"), 1)
	for _, name := range []string{"missing", "present/missing", "missing/obj", "present", "present/obj/below"} {
		_, err := b.Stat(t.Context(), name)
		wantNotExist(t, fmt.Sprintf("Stat(%q)", name), err)
		r, err := b.Open(t.Context(), name, 0, -1)
		if err == nil {
			r.Close()
		}
		wantNotExist(t, fmt.Sprintf("Open(%q)", name), err)
		wantNotExist(t, fmt.Sprintf("Remove(%q)", name), b.Remove(t.Context(), name))
		_, err = storage.Load(t.Context(), b, name)
		wantNotExist(t, fmt.Sprintf("Load(%q)", name), err)
	}
	wantContent(t, b, "present/obj", []byte("x"))
}

// invalidNames are names that every method must reject.
var invalidNames = []string{
	"", "/", "/abs", "/abs/x", "..", "../x", "a/..", "a/../b", ".", "./a", "a/.", "a/./b",
	"a//b", "a/", "//", "a\x00b", "\x00", "a\nb", "a\tb", "a\x7fb", "a\\b", "\\",
	strings.Repeat("x", storage.MaxElementLen+1),
	"a/" + strings.Repeat("y", storage.MaxElementLen+1) + "/b",
	strings.Repeat(strings.Repeat("n", 100)+"/", 10) + strings.Repeat("n", 100), // 1100 bytes
	storage.TempPrefix + "x", "a/" + storage.TempPrefix + "x", storage.TempPrefix + "d/x", storage.TempPrefix,
	"bad\xffutf8",
}

// invalidPrefixes are prefixes that List must reject.
var invalidPrefixes = []string{
	"/", "/abs", "../", "a/../", "./", "a//", "a//b", "a\x00", "a\\", "a\nb",
	storage.TempPrefix + "x/", "a/" + storage.TempPrefix + "y", strings.Repeat("p", storage.MaxNameLen+1),
	strings.Repeat("q", storage.MaxElementLen+1),
}

func testInvalidNames(t *testing.T, b storage.Backend) {
	ctx := t.Context()
	check := func(method, name string, err error) {
		t.Helper()
		if !errors.Is(err, storage.ErrInvalidName) {
			t.Errorf("%s(%q) = %v, want ErrInvalidName", method, name, err)
			return
		}
		if !strings.Contains(err.Error(), strconv.Quote(name)) {
			t.Errorf("%s(%q): error %q does not quote the name", method, name, err)
		}
		if !storage.IsPermanent(err) {
			t.Errorf("%s(%q): IsPermanent(%v) = false", method, name, err)
		}
	}
	for _, name := range invalidNames {
		if storage.ValidName(name) == nil {
			t.Errorf("ValidName(%q) = nil", name)
		}
		w, err := b.Create(ctx, name)
		if err == nil {
			w.Abort()
		}
		check("Create", name, err)
		r, err := b.Open(ctx, name, 0, -1)
		if err == nil {
			r.Close()
		}
		check("Open", name, err)
		_, err = b.Stat(ctx, name)
		check("Stat", name, err)
		check("Remove", name, b.Remove(ctx, name))
		if l, ok := storage.As[storage.Locator](b); ok {
			if p, ok := l.Path(name); ok {
				t.Errorf("Path(%q) = %q, true; want false", name, p)
			}
		}
	}
	for _, prefix := range invalidPrefixes {
		called := false
		err := b.List(ctx, prefix, func(storage.Info) error { called = true; return nil })
		check("List", prefix, err)
		if called {
			t.Errorf("List(%q) called its callback", prefix)
		}
	}
	if infos := list(t, b, ""); len(infos) != 0 {
		t.Errorf("List after invalid calls = %v", infos)
	}
}

// validNames are unusual names that every backend must store.
var validNames = []string{
	".hidden", "..dots", "a/...", "x.tmp-", "a/b" + storage.TempPrefix, "sp ace", "ü/日本語", "a:b@c=d,e+f",
	strings.Repeat("e", storage.MaxElementLen),
	strings.Repeat(strings.Repeat("m", storage.MaxElementLen)+"/", 3) + strings.Repeat("m", 200) + "/" + strings.Repeat("m", 55), // 1024 bytes
}

func testValidNames(t *testing.T, b storage.Backend) {
	if n := len(validNames[len(validNames)-1]); n != storage.MaxNameLen {
		t.Fatalf("longest test name has %d bytes", n)
	}
	for i, name := range validNames {
		if err := storage.ValidName(name); err != nil {
			t.Errorf("ValidName: %v", err)
			continue
		}
		data := []byte(fmt.Sprint("object ", i))
		save(t, b, name, data, 3)
		wantContent(t, b, name, data)
	}
	if got := names(list(t, b, "")); !slices.Equal(got, slices.Sorted(slices.Values(validNames))) {
		t.Errorf("List = %q", got)
	}
	for _, name := range validNames {
		if err := b.Remove(t.Context(), name); err != nil {
			t.Error(err)
		}
	}
}

func testHierarchy(t *testing.T, b storage.Backend) {
	props := storage.PropertiesOf(b)
	if props.Connections < 1 {
		t.Errorf("Properties().Connections = %d, want at least 1", props.Connections)
	}
	save(t, b, "h/dir/obj", []byte("below"), 10)
	save(t, b, "h/file", []byte("file"), 10)
	try := func(name string) error {
		_, err := storage.Save(t.Context(), b, name, strings.NewReader("clash"))
		return err
	}
	errDir, errFile := try("h/dir"), try("h/file/below")
	if !props.Hierarchical {
		if errDir != nil || errFile != nil {
			t.Fatalf("non-hierarchical backend: Save(h/dir) = %v, Save(h/file/below) = %v", errDir, errFile)
		}
		wantContent(t, b, "h/dir", []byte("clash"))
		wantContent(t, b, "h/file/below", []byte("clash"))
		return
	}
	for name, err := range map[string]error{"h/dir": errDir, "h/file/below": errFile} {
		if !errors.Is(err, storage.ErrExists) || !storage.IsPermanent(err) {
			t.Errorf("hierarchical backend: Save(%q) = %v, want permanent ErrExists", name, err)
		}
	}
	wantContent(t, b, "h/dir/obj", []byte("below"))
	wantContent(t, b, "h/file", []byte("file"))
	if got := names(list(t, b, "h")); !slices.Equal(got, []string{"h/dir/obj", "h/file"}) {
		t.Errorf("List = %q", got)
	}
}

func testConcurrentWriters(t *testing.T, b storage.Backend) {
	const writers = 8
	name := func(i int) string {
		if i%2 == 0 {
			return fmt.Sprintf("shared/w%d", i)
		}
		return fmt.Sprintf("own%d/sub/w%d", i, i)
	}
	content := func(i int) []byte { return randomBytes(50000+i*997, uint64(i)) }
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			w, err := b.Create(context.Background(), name(i))
			if err != nil {
				t.Error(err)
				return
			}
			for p := content(i); len(p) > 0; {
				n := min(len(p), 997)
				if _, err := w.Write(p[:n]); err != nil {
					t.Error(err)
					w.Abort()
					return
				}
				p = p[n:]
				runtime.Gosched()
			}
			if err := w.Commit(); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for i := range writers {
		wantContent(t, b, name(i), content(i))
	}
	if got := len(list(t, b, "")); got != writers {
		t.Errorf("List reports %d objects, want %d", got, writers)
	}
}

func testConcurrentCreateRemove(t *testing.T, b storage.Backend) {
	// Writers and removers in one directory, so that a backend that prunes
	// empty directories races with one that creates them.
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			ctx := context.Background()
			for j := range 25 {
				name := fmt.Sprintf("churn/dir/x%d", i)
				data := []byte(fmt.Sprint(i, j))
				if _, err := storage.Save(ctx, b, name, bytes.NewReader(data)); err != nil {
					t.Error(err)
					return
				}
				if got, err := storage.Load(ctx, b, name); err != nil || !bytes.Equal(got, data) {
					t.Errorf("Load(%q) = %q, %v; want %q", name, got, err, data)
					return
				}
				if err := b.Remove(ctx, name); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if infos := list(t, b, ""); len(infos) != 0 {
		t.Errorf("List after churn = %v", infos)
	}
}

func testContext(t *testing.T, b storage.Backend) {
	save(t, b, "c/obj", []byte("data"), 10)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	want := func(method string, err error) {
		t.Helper()
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a canceled context = %v, want context.Canceled", method, err)
		}
	}
	w, err := b.Create(ctx, "c/new")
	if err == nil {
		w.Abort()
	}
	want("Create", err)
	r, err := b.Open(ctx, "c/obj", 0, -1)
	if err == nil {
		r.Close()
	}
	want("Open", err)
	_, err = b.Stat(ctx, "c/obj")
	want("Stat", err)
	want("List", b.List(ctx, "", func(storage.Info) error { return nil }))
	want("Remove", b.Remove(ctx, "c/obj"))
	wantContent(t, b, "c/obj", []byte("data"))

	// A Writer whose context ends before Commit may fail or succeed, but
	// never leaves a part.
	ctx, cancel = context.WithCancel(t.Context())
	w, err = b.Create(ctx, "c/late")
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("late data"))
	cancel()
	if err := w.Commit(); err != nil {
		wantAbsent(t, b, "c/late")
	} else {
		wantContent(t, b, "c/late", []byte("late data"))
	}
}

func testClose(t *testing.T, b storage.Backend) {
	save(t, b, "obj", []byte("data"), 10)
	if err := b.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	ctx := t.Context()
	want := func(method string, err error) {
		t.Helper()
		if !errors.Is(err, storage.ErrClosed) {
			t.Errorf("%s after Close = %v, want ErrClosed", method, err)
		}
	}
	w, err := b.Create(ctx, "new")
	if err == nil {
		w.Abort()
	}
	want("Create", err)
	r, err := b.Open(ctx, "obj", 0, -1)
	if err == nil {
		r.Close()
	}
	want("Open", err)
	_, err = b.Stat(ctx, "obj")
	want("Stat", err)
	want("List", b.List(ctx, "", func(storage.Info) error { return nil }))
	want("Remove", b.Remove(ctx, "obj"))
}
