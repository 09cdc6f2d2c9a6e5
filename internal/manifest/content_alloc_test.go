package manifest

import (
	"bytes"
	"runtime"
	"testing"
)

// allocatedPerRun is the bytes the heap handed out per call of f, averaged
// over runs calls. Not parallel: other tests' allocations would count.
func allocatedPerRun(runs int, f func()) uint64 {
	f() // warm whatever is reused
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		f()
	}
	runtime.ReadMemStats(&after)
	return (after.TotalAlloc - before.TotalAlloc) / uint64(runs)
}

// Hashing a small file costs memory on the scale of the file, not of a
// chunk: a checkpoint of many small files (and a verify of it) would
// otherwise spend its time zeroing megabytes (HashContent took 5 MiB per
// file, four ring buffers and the hasher's partial chunk; a ContentHasher
// 1 MiB). The bound on HashContent leaves room for the race detector,
// which drops a quarter of what is put back into a sync.Pool.
func TestSmallContentAllocatesLittle(t *testing.T) {
	src := bytes.Repeat([]byte("small"), 800) // 4000 bytes
	want := ContentHashBytes(src)
	if got := allocatedPerRun(100, func() {
		h, n, err := HashContent(bytes.NewReader(src))
		if err != nil || n != int64(len(src)) || h != want {
			t.Fatalf("HashContent = %s, %d, %v; want %s, %d", h, n, err, want, len(src))
		}
	}); got > ContentChunk/2 {
		t.Errorf("HashContent of %d bytes allocates %d bytes a call", len(src), got)
	}
	if got := allocatedPerRun(100, func() {
		h := NewContentHasher()
		h.Write(src[:1000])
		h.Write(src[1000:])
		if h.Sum128() != want {
			t.Fatal("ContentHasher in two writes disagrees with ContentHashBytes")
		}
	}); got > 16<<10 {
		t.Errorf("a ContentHasher of %d bytes allocates %d bytes", len(src), got)
	}
}
