package logstore_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt/ckpt/internal/msglog"
	"github.com/ckpt/ckpt/internal/msglog/logstore"
)

// BenchmarkFileAppend appends batches of records to the file log, each
// batch synced, beside its limit measured the same way: the same bytes
// written to a plain file and synced (BenchmarkWriteSync). The ratio is
// what the log's framing and bookkeeping add to the sync that pessimistic
// logging must wait for (Δ_lp's share on the protector's disk).
func BenchmarkFileAppend(b *testing.B) {
	for _, sh := range shapes {
		b.Run(sh.name, func(b *testing.B) {
			l, err := logstore.OpenFile(filepath.Join(b.TempDir(), "log"))
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			data := make([]byte, sh.size)
			b.SetBytes(int64(sh.size * sh.batch))
			b.ReportAllocs()
			idx := uint64(0)
			recs := make([]msglog.Record, sh.batch)
			for b.Loop() {
				for i := range recs {
					idx++
					recs[i] = msglog.Record{Index: idx, From: 1, Seq: idx, Data: data, Sum: msglog.Hash(idx, 1, idx, data)}
				}
				if err := l.Append(recs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkWriteSync(b *testing.B) {
	for _, sh := range shapes {
		b.Run(sh.name, func(b *testing.B) {
			f, err := os.Create(filepath.Join(b.TempDir(), "raw"))
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			buf := make([]byte, sh.size*sh.batch)
			b.SetBytes(int64(len(buf)))
			for b.Loop() {
				if _, err := f.Write(buf); err != nil {
					b.Fatal(err)
				}
				if err := f.Sync(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

var shapes = []struct {
	name        string
	size, batch int
}{
	{"1x64B", 64, 1},
	{"1x4KiB", 4 << 10, 1},
	{"16x4KiB", 4 << 10, 16},
	{"1x1MiB", 1 << 20, 1},
}

// BenchmarkReceiver is the pure core's work per message (Receive, then
// Persisted: a record made and hashed, then delivered), beside hashing
// the same bytes alone.
func BenchmarkReceiver(b *testing.B) {
	for _, size := range []int{64, 4 << 10} {
		data := make([]byte, size)
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			r := msglog.NewReceiver(msglog.Point{})
			b.SetBytes(int64(size))
			b.ReportAllocs()
			seq := uint64(0)
			for b.Loop() {
				seq++
				r.Receive(msglog.Msg{From: 1, Seq: seq, Data: data}, 0)
				r.Persisted(seq, 0)
			}
		})
		b.Run(fmt.Sprintf("hash-%dB", size), func(b *testing.B) {
			b.SetBytes(int64(size))
			for b.Loop() {
				msglog.Hash(1, 1, 1, data)
			}
		})
	}
}
