package bench

import (
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// TestRawWritePatterns writes with each pattern: every one leaves a file
// of the bytes it counted, O_DIRECT whole aligned pieces only, and each
// reports a positive rate (or, for the two Linux patterns elsewhere,
// errUnsupported).
func TestRawWritePatterns(t *testing.T) {
	buf := make([]byte, block)
	rand.Read(buf)
	dir := t.TempDir()
	const size = 20<<20 + 1000 // past two writeback chunks, not aligned
	for p, want := range map[writePattern]int64{writeFsync: size, writeWriteback: size, writeDirect: size - size%directAlign} {
		path := filepath.Join(dir, "raw")
		v, err := rawWriteAs(path, size, buf, p)
		if errors.Is(err, errUnsupported) && (runtime.GOOS != "linux" || p == writeDirect) {
			t.Logf("pattern %d not supported here", p)
			continue
		}
		if err != nil || !(v > 0) {
			t.Fatalf("pattern %d: %v B/s, %v", p, v, err)
		}
		st, err := os.Stat(path)
		if err != nil || st.Size() != want {
			t.Errorf("pattern %d: file of %v bytes (%v), want %d", p, st.Size(), err, want)
		}
		if n, err := rawRead(path); err != nil || !(n > 0) {
			t.Errorf("pattern %d: raw read %v B/s, %v", p, n, err)
		}
	}
}

// TestEvictFallsBackToFadvise makes drop_caches unavailable (as it is to
// a user who is not root): evict drops the files' own pages instead, says
// so, and the file it probes is then out of the page cache.
func TestEvictFallsBackToFadvise(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("SKIPPED: fadvise and mincore are Linux's here: the cold-cache fallback is not tested on " + runtime.GOOS)
	}
	dir := t.TempDir()
	old := dropCachesFile
	dropCachesFile = dir // a directory: writing it fails
	t.Cleanup(func() { dropCachesFile = old })
	buf := make([]byte, block)
	rand.Read(buf)
	path := filepath.Join(dir, "sub", "f")
	os.MkdirAll(filepath.Dir(path), 0o755)
	if _, err := rawWrite(path, 8<<20, buf); err != nil {
		t.Fatal(err)
	}
	if _, err := rawRead(path); err != nil {
		t.Fatal(err)
	}
	method, err := evict(dir, path)
	if method == coldNone {
		// On tmpfs nothing can be evicted: evict must see it and say so.
		if err == nil {
			t.Fatal("evict: none without a reason")
		}
		frac, _ := residentFraction(path)
		if frac <= 0.05 {
			t.Errorf("evict gave up, yet only %.2f of the file is resident", frac)
		}
		t.Logf("this file system keeps its pages (%v): cold cannot be measured here", err)
		return
	}
	if method != coldFadvise || err != nil {
		t.Fatalf("evict = %q, %v; want %q", method, err, coldFadvise)
	}
	if frac, err := residentFraction(path); err != nil || frac > 0.05 {
		t.Errorf("after evict %.2f of the file is resident (%v)", frac, err)
	}
	// Reading it again brings it back: the probe measures, it does not
	// just report zero.
	if _, err := rawRead(path); err != nil {
		t.Fatal(err)
	}
	if frac, err := residentFraction(path); err != nil || frac < 0.5 {
		t.Errorf("after a read %.2f of the file is resident (%v)", frac, err)
	}
}
