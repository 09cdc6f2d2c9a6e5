package engine

import (
	"os"
	"sync"
	"time"

	"github.com/ckpt/ckpt/internal/manifest"
)

// A restart reads every byte once (issue 17). Restart verifies each file
// by hashing it; the application then reads it through Restored.Open.
// Hashing it there again would read it twice, so Restart remembers, per
// file it verified, the file's stamp (device, inode, size, modification
// and change times) taken before and after the hash; Open checks the stamp
// when it opens the file and again when the reader reaches its end, and
// hashes only a file whose stamp is unknown or changed.
//
// What this promises: a file changed through the file system after it was
// verified (written, truncated, replaced, its times set) is caught, by a
// changed stamp and then its hash, or by a stamp that changed while it was
// read: the reader then fails at its end, as the hashing reader fails on a
// wrong hash. A file whose times are within racyWindow before its
// verification is hashed again, as git treats a "racily clean" file: a
// change within one step of the file system's clock could leave the times
// as they were. What it does not promise: a change beneath the file system
// (a device flipping a stored bit without the kernel's knowledge) after
// the verification is not seen by Open, as it would not be by any reader
// of a file once checked; the pages Restart just hashed usually serve
// Open from the page cache anyway.

// racyWindow: a file whose modification or change time is less than this
// before its verification began is hashed again at Open. A change after
// the verification at time X gets the time X rounded down to the file
// system's granularity, which equals the recorded time only if X falls in
// the same step as the recorded change, that is, only if the verification
// began less than one step after it. One second covers the file systems
// a cache lives on: nanosecond times that move with the kernel's tick
// (ext4, XFS, tmpfs) and ext4's whole seconds on small inodes; not FAT's
// two seconds. (The time compared is this machine's clock: a network file
// system whose server's clock runs apart is not covered.)
var racyWindow = time.Second // a variable for the tests

// fileStamp identifies a file's state: a write, truncation, replacement or
// times change changes it.
type fileStamp struct {
	dev, ino     uint64
	size         int64
	mtime, ctime int64 // nanoseconds since the epoch
}

// racy says whether the stamp's times are too close to at, the time of
// the verification, to tell a later change within the same clock tick.
func (s fileStamp) racy(at time.Time) bool {
	limit := at.Add(-racyWindow).UnixNano()
	return s.mtime >= limit || s.ctime >= limit
}

// verifiedFiles remembers the stamps of the files Restart verified, by
// object name, with the hash each was verified against, for
// Restored.Open. Safe for concurrent use.
type verifiedFiles struct {
	mu sync.Mutex
	m  map[string]verifiedFile
}

// verifiedFile is a file's stamp and the (stored) content hash it was
// found to hold in that state.
type verifiedFile struct {
	stamp fileStamp
	hash  manifest.Hash
}

// note records that object obj, a file whose stamp was s before and after
// its verification (started at at), holds the bytes of content hash h; a
// racy stamp is not recorded.
func (v *verifiedFiles) note(obj string, s fileStamp, h manifest.Hash, at time.Time) {
	if v == nil || s.racy(at) {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.m == nil {
		v.m = make(map[string]verifiedFile)
	}
	v.m[obj] = verifiedFile{s, h}
}

// forget drops what is known of obj (a file rewritten by a rebuild).
func (v *verifiedFiles) forget(obj string) {
	if v == nil {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.m, obj)
}

// still reports whether f, opened as object obj, is in the state it was
// verified in, and was verified to hold content hash h: a stamp vouches
// only for the content it was verified against (the object of a
// checkpoint's name may be checked against more than one manifest of
// that name in a restart), never for another manifest's.
func (v *verifiedFiles) still(obj string, f *os.File, h manifest.Hash) (fileStamp, bool) {
	if v == nil {
		return fileStamp{}, false
	}
	v.mu.Lock()
	want, ok := v.m[obj]
	v.mu.Unlock()
	if !ok || want.hash != h {
		return fileStamp{}, false
	}
	got, ok := stampOf(f)
	return want.stamp, ok && got == want.stamp
}
