package logstore

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt/ckpt/internal/msglog"
)

// An append whose write fails, on a file that cannot be put back either,
// leaves the store refusing everything: nothing may follow a partial
// frame.
func TestFileAppendFailureBreaks(t *testing.T) {
	l, err := OpenFile(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	rec := msglog.Record{Index: 1, From: 1, Seq: 1, Data: []byte("x"), Sum: msglog.Hash(1, 1, 1, []byte("x"))}
	l.f.Close() // every write, sync and truncate now fails
	if err := l.Append([]msglog.Record{rec}); err == nil {
		t.Fatal("Append to a closed file succeeded")
	}
	if _, _, err := l.Bounds(); err == nil {
		t.Fatal("Bounds of a broken log succeeded")
	}
	for name, err := range map[string]error{
		"Append":    l.Append([]msglog.Record{rec}),
		"ReadAfter": l.ReadAfter(0, func(msglog.Record) error { return nil }),
		"Truncate":  l.Truncate(0),
	} {
		if err != l.broken || err == nil {
			t.Errorf("%s of a broken log: %v", name, err)
		}
	}
}

// Under node durability (the default) every Append syncs the file once,
// after its frames are written; under process durability (NoSync) none
// does, and the records are there all the same.
func TestFileSyncFollowsDurability(t *testing.T) {
	recs := func(from, n uint64) []msglog.Record {
		var rs []msglog.Record
		for i := from; i < from+n; i++ {
			d := []byte{byte(i)}
			rs = append(rs, msglog.Record{Index: i, From: 1, Seq: i, Data: d, Sum: msglog.Hash(i, 1, i, d)})
		}
		return rs
	}
	synced, err := OpenFile(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer synced.Close()
	if !synced.Synced() {
		t.Fatal("OpenFile's log does not sync")
	}
	syncs := 0
	orig := synced.syncer
	synced.syncer = func(f *os.File) error { syncs++; return orig(f) }
	for i, batch := range [][]msglog.Record{recs(1, 1), recs(2, 3), recs(5, 2)} {
		if err := synced.Append(batch); err != nil {
			t.Fatal(err)
		}
		if syncs != i+1 {
			t.Fatalf("after %d appends, %d syncs", i+1, syncs)
		}
	}

	path := filepath.Join(t.TempDir(), "log")
	unsynced, err := OpenFileWith(path, FileOptions{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	if unsynced.Synced() || unsynced.syncer != nil {
		t.Fatal("a NoSync log syncs its appends")
	}
	if err := unsynced.Append(recs(1, 4)); err != nil {
		t.Fatal(err)
	}
	unsynced.Close()
	again, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if _, last, err := again.Bounds(); err != nil || last != 4 {
		t.Fatalf("an unsynced log reopened: last %d, %v; want 4", last, err)
	}
}
