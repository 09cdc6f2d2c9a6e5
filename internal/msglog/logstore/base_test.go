package logstore_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/ckpt/ckpt/internal/msglog"
	"github.com/ckpt/ckpt/internal/msglog/logstore"
)

func recAt(i uint64) msglog.Record {
	d := fmt.Appendf(nil, "m%d", i)
	return msglog.Record{Index: i, From: 1, Seq: i, Data: d, Sum: msglog.Hash(i, 1, i, d)}
}

// A log started at a base (a rank re-protected at a new protector from
// its checkpoint's point): its first record is base+1, nothing before
// it can be read, and a log that was at the path is replaced.
func TestLogStartedAtABase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	old, err := logstore.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Append([]msglog.Record{recAt(1), recAt(2)}); err != nil {
		t.Fatal(err)
	}
	old.Close()
	f, err := logstore.CreateFile(path, 7, logstore.FileOptions{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	mem := logstore.NewMemAt(7)
	for name, s := range map[string]logstore.Store{"file": f, "mem": mem} {
		if base, last, err := s.Bounds(); base != 7 || last != 7 || err != nil {
			t.Errorf("%s: bounds %d, %d, %v; want 7, 7", name, base, last, err)
		}
		if err := s.Append([]msglog.Record{recAt(7)}); !errors.Is(err, logstore.ErrGap) {
			t.Errorf("%s: appending record 7 at base 7: %v, want ErrGap", name, err)
		}
		if err := s.Append([]msglog.Record{recAt(8), recAt(9)}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := s.ReadAfter(6, func(msglog.Record) error { return nil }); !errors.Is(err, logstore.ErrTruncated) {
			t.Errorf("%s: reading after 6: %v, want ErrTruncated", name, err)
		}
		var got []uint64
		if err := s.ReadAfter(7, func(r msglog.Record) error { got = append(got, r.Index); return nil }); err != nil || fmt.Sprint(got) != "[8 9]" {
			t.Errorf("%s: read %v, %v; want [8 9]", name, got, err)
		}
	}
	f.Close()
	// Reopened, the file keeps its base and records.
	g, err := logstore.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if base, last, err := g.Bounds(); base != 7 || last != 9 || err != nil {
		t.Errorf("reopened: bounds %d, %d, %v; want 7, 9", base, last, err)
	}
}
