package engine

import (
	"crypto/rand"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/ckpt/ckpt/internal/manifest"
)

// A local file hashes alike whether its pages are in the page cache (the
// mapping, hashed on every core) or not (read in a pipeline): the content
// hash the manifest records, the file's size, and a stamp that held still
// during the hash, either way; a file that cannot be read as a regular
// file is left to the caller.
func TestHashLocalEitherWay(t *testing.T) {
	dir := t.TempDir()
	data := make([]byte, 3*manifest.ContentChunk+12345)
	rand.Read(data)
	path := filepath.Join(dir, "f")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	want := manifest.ContentHashBytes(data)
	for _, hot := range []bool{true, false} {
		asked := 0
		h, size, st, stamped, ok := hashLocal(path, func(b []byte) bool {
			asked++
			if len(b) != len(data) {
				t.Errorf("residency asked of %d bytes, the file has %d", len(b), len(data))
			}
			return hot
		})
		if !ok || h != want || size != int64(len(data)) || asked != 1 {
			t.Errorf("hot %v: %s, %d bytes, ok %v (residency asked %d times); want %s, %d bytes", hot, h, size, ok, asked, want, len(data))
		}
		if !stamped || st.size != int64(len(data)) {
			t.Errorf("hot %v: stamped %v, stamp %+v", hot, stamped, st)
		}
	}
	for _, p := range []string{dir, filepath.Join(dir, "missing")} {
		if _, _, _, _, ok := hashLocal(p, func([]byte) bool { return true }); ok {
			t.Errorf("%s hashed as a file", p)
		}
	}
}

// resident tells pages in memory from pages not: an anonymous mapping's
// pages are not until touched.
func TestResident(t *testing.T) {
	page := os.Getpagesize()
	b, err := syscall.Mmap(-1, 0, 4*page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(b)
	if resident(b) {
		t.Error("an untouched mapping is resident")
	}
	for i := 0; i < 3; i++ {
		b[i*page] = 1
	}
	if resident(b) {
		t.Error("a mapping with one page untouched is resident")
	}
	b[3*page] = 1
	if !resident(b) || !resident(b[:0]) {
		t.Error("a mapping with every page touched is not resident")
	}
}
