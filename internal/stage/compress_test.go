package stage

import (
	"testing"

	"github.com/ckpt/ckpt/internal/manifest"
	"github.com/ckpt/ckpt/internal/storage/mem"
)

// A checkpoint whose files are stored compressed is staged in its stored
// form: the server pulls each file's stored object, checks it against
// the stored hash, and the shared object is the stored bytes, never the
// application's (larger) size.
func TestFlushCompressedFiles(t *testing.T) {
	shared := mem.New()
	cp := makeCheckpoint(t, "ckpt.1", 1, 2, 2, []int{50000, 9000}, 3)
	// The cached bytes are the stored form; the application wrote more.
	for r := range cp.m.Parts {
		for i := range cp.m.Parts[r].Files {
			f := &cp.m.Parts[r].Files[i]
			f.Codec, f.Filter, f.StoredSize, f.StoredHash = "zstd", "shuffle4", f.Size, f.Hash
			f.Size, f.Hash = 3*f.Size+1, manifest.HashBytes([]byte(f.Name))
		}
	}
	var err error
	if cp.encoded, err = manifest.Encode(cp.m); err != nil {
		t.Fatal(err)
	}
	_, addr := startServer(t, Config{Shared: shared, Writers: 2, ChunkSize: 4096})
	flushNodes(t, addr, cp, "node0", "node1")
	waitManifest(t, shared, cp.name)
	checkShared(t, shared, cp)
}
