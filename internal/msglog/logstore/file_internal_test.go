package logstore

import (
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
