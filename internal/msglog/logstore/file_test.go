package logstore_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/internal/msglog"
	"github.com/ckpt/ckpt/internal/msglog/logstore"
	lt "github.com/ckpt/ckpt/internal/msglog/logstore/logstoretest"
)

func TestFileConformance(t *testing.T) {
	lt.Run(t, func(t *testing.T) lt.Opener {
		path := filepath.Join(t.TempDir(), "rank-0.mlog")
		return func() (logstore.Store, error) { return logstore.OpenFile(path) }
	})
}

// newFile makes a log at a fresh path holding records 1 to n, closed, and
// returns the path and the file's size after each record (sizes[0] is the
// header's).
func newFile(t *testing.T, n uint64) (string, []int64) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "log")
	f, err := logstore.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var sizes []int64
	for i := uint64(0); ; i++ {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, st.Size())
		if i == n {
			break
		}
		if err := f.Append(lt.Recs(i+1, i+1)); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path, sizes
}

func openFile(t *testing.T, path string) *logstore.File {
	t.Helper()
	f, err := logstore.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// A crash in the middle of an append leaves the file ending at any byte
// of the last frame: the frame is dropped on open, never read back, and
// the log takes that record's index again.
func TestFileTornTail(t *testing.T) {
	path, sizes := newFile(t, 3)
	whole, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for cut := sizes[2] + 1; cut < sizes[3]; cut++ {
		if err := os.WriteFile(path, whole[:cut], 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := logstore.OpenFile(path)
		if err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		if f.TornBytes != cut-sizes[2] {
			t.Fatalf("cut at %d: TornBytes %d, want %d", cut, f.TornBytes, cut-sizes[2])
		}
		lt.WantRecords(t, lt.ReadAll(t, f, 0), 1, 2)
		if st, _ := os.Stat(path); st.Size() != sizes[2] {
			t.Fatalf("cut at %d: file of %d bytes after open, want %d", cut, st.Size(), sizes[2])
		}
		if err := f.Append(lt.Recs(3, 3)); err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		f.Close()
		lt.WantRecords(t, lt.ReadAll(t, openFile(t, path), 0), 1, 3)
	}
}

// A file system may extend the file before the data reaches the disk: a
// tail of zeros, whole frames long or not, is a torn tail too.
func TestFileZeroTail(t *testing.T) {
	for _, n := range []int{1, 39, 40, 41, 4096} {
		path, sizes := newFile(t, 2)
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.Write(make([]byte, n))
		f.Close()
		l := openFile(t, path)
		if l.TornBytes != int64(n) {
			t.Fatalf("%d zeros: TornBytes %d", n, l.TornBytes)
		}
		lt.WantRecords(t, lt.ReadAll(t, l, 0), 1, 2)
		if st, _ := os.Stat(path); st.Size() != sizes[2] {
			t.Fatalf("%d zeros: file of %d bytes after open, want %d", n, st.Size(), sizes[2])
		}
	}
}

// The last frame's head reached the disk, its data and sum did not (they
// read as zeros): a torn write, dropped, not damage. The same zeros in a
// frame that is not the last are damage.
func TestFileTornDataAfterHead(t *testing.T) {
	path, sizes := newFile(t, 3)
	zero := func(from, to int64) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		clear(b[from:to])
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	zero(sizes[2]+32, sizes[3]) // record 3's data and sum, after its 32-byte head
	l := openFile(t, path)
	if l.TornBytes != sizes[3]-sizes[2] {
		t.Fatalf("TornBytes %d, want record 3's %d", l.TornBytes, sizes[3]-sizes[2])
	}
	lt.WantRecords(t, lt.ReadAll(t, l, 0), 1, 2)
	if err := l.Append(lt.Recs(3, 3)); err != nil {
		t.Fatalf("Append after a dropped torn write: %v", err)
	}
	l.Close()

	path, sizes = newFile(t, 3)
	zero(sizes[1]+32, sizes[2]) // record 2's, with record 3 whole after it
	l = openFile(t, path)
	if l.TornBytes != 0 {
		t.Fatalf("zeros inside the log dropped as a torn tail (%d bytes)", l.TornBytes)
	}
	if err := l.Append(lt.Recs(4, 4)); !errors.Is(err, logstore.ErrDamaged) {
		t.Fatalf("Append to a log damaged in its middle: %v", err)
	}
}

// flip flips one bit of the file at off.
func flip(t *testing.T, path string, off int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[off] ^= 0x04
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// A damaged record's data is no torn tail: the record is read back as it
// is, so that the replay's hash check fails on it and names it; the file
// is not shortened, and takes no more appends or truncations.
func TestFileCorruptRecordReachesReplay(t *testing.T) {
	path, sizes := newFile(t, 4)
	flip(t, path, sizes[2]-10) // in record 2's data (4 bytes before its sum)
	l := openFile(t, path)
	r := msglog.NewReceiver(msglog.Point{})
	r.BeginReplay(0)
	var delivered int
	var replayErr error
	err := l.ReadAfter(0, func(rec msglog.Record) error {
		rd, err := r.Replay(rec, 0)
		delivered += len(rd.Deliver)
		replayErr = err
		return err
	})
	var re *msglog.ReplayError
	if !errors.As(err, &re) || !errors.Is(err, msglog.ErrCorrupt) || re.After != 1 || err != replayErr {
		t.Fatalf("replay over a damaged record 2: %v", err)
	}
	if delivered != 1 {
		t.Fatalf("delivered %d records, want 1", delivered)
	}
	if st, _ := os.Stat(path); st.Size() != sizes[4] {
		t.Fatalf("file of %d bytes, want %d: shortened past the damage", st.Size(), sizes[4])
	}
	if err := l.Append(lt.Recs(5, 5)); !errors.Is(err, logstore.ErrDamaged) {
		t.Fatalf("Append to a damaged log: %v", err)
	}
	if err := l.Truncate(1); !errors.Is(err, logstore.ErrDamaged) {
		t.Fatalf("Truncate of a damaged log: %v", err)
	}
}

// A damaged frame head (its length, here) cannot be framed: ReadAfter
// gives the records before it, then fails naming where.
func TestFileCorruptHead(t *testing.T) {
	path, sizes := newFile(t, 3)
	flip(t, path, sizes[1]+1) // record 2's length
	l := openFile(t, path)
	var got []msglog.Record
	err := l.ReadAfter(0, func(rec msglog.Record) error {
		got = append(got, rec)
		return nil
	})
	lt.WantRecords(t, got, 1, 1)
	if !errors.Is(err, logstore.ErrDamaged) || !strings.Contains(err.Error(), "after index 1") {
		t.Fatalf("ReadAfter over a damaged head: %v", err)
	}
	if l.TornBytes != 0 {
		t.Fatalf("a damaged head was taken for a torn tail")
	}
	if st, _ := os.Stat(path); st.Size() != sizes[3] {
		t.Fatalf("file of %d bytes, want %d: shortened past the damage", st.Size(), sizes[3])
	}
	if err := l.Append(lt.Recs(2, 2)); !errors.Is(err, logstore.ErrDamaged) {
		t.Fatalf("Append to a damaged log: %v", err)
	}
}

func TestFileBadHeader(t *testing.T) {
	path, _ := newFile(t, 1)
	flip(t, path, 9) // the base
	if _, err := logstore.OpenFile(path); !errors.Is(err, logstore.ErrBadHeader) {
		t.Fatalf("OpenFile of a damaged header: %v", err)
	}
	other := filepath.Join(t.TempDir(), "other")
	os.WriteFile(other, []byte("not a log at all, but long enough"), 0o600)
	if _, err := logstore.OpenFile(other); !errors.Is(err, logstore.ErrBadHeader) {
		t.Fatalf("OpenFile of another file: %v", err)
	}
}

// A Truncate that crashed before its rename leaves a temporary file
// beside the old log (named as local.WriteFileFrom names it, or as
// before it), which stands; the open removes the temporary file.
func TestFileTruncateCrashLeavesOldLog(t *testing.T) {
	path, _ := newFile(t, 3)
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		t.Fatal(err)
	}
	tmp.WriteString("half a new log")
	tmp.Close()
	if err := os.WriteFile(path+".tmp", []byte("half a new log"), 0o600); err != nil {
		t.Fatal(err)
	}
	l := openFile(t, path)
	lt.WantRecords(t, lt.ReadAll(t, l, 0), 1, 3)
	for _, p := range []string{tmp.Name(), path + ".tmp"} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("temporary file %s left: %v", filepath.Base(p), err)
		}
	}
}

// A log cut short deep inside (a lost tail of blocks, not a torn append)
// looks torn to the file, which cannot tell; the records lost had been
// acknowledged, and the sender tells: the rank cannot recover alone, and
// no message goes missing silently.
func TestFileLostAckedRecordsDetectedBySender(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	l, err := logstore.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sender := msglog.NewSender(msglog.SenderState{})
	recv := msglog.NewReceiver(msglog.Point{})
	for i := range 3 {
		m, _ := sender.Send(7, 0, []byte{byte(i)})
		rd := recv.Receive(m, 0)
		if err := l.Append(rd.Persist); err != nil {
			t.Fatal(err)
		}
		for _, a := range recv.Persisted(rd.Persist[0].Index, 0).Acks {
			sender.Ack(0, a.Seq) // from the receiving rank, 0
		}
	}
	l.Close()
	st, _ := os.Stat(path)
	if err := os.Truncate(path, st.Size()-50); err != nil { // into record 2
		t.Fatal(err)
	}
	recv = msglog.NewReceiver(msglog.Point{})
	recv.BeginReplay(0)
	l = openFile(t, path)
	if err := l.ReadAfter(0, func(rec msglog.Record) error {
		_, err := recv.Replay(rec, 0)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	rd, err := recv.EndReplay(0)
	if err != nil || len(rd.Acks) != 1 || rd.Acks[0].Seq != 1 {
		t.Fatalf("EndReplay = %+v, %v; want an ack of seq 1", rd, err)
	}
	if _, err := sender.Recovered(0, rd.Acks[0].Seq); !errors.Is(err, msglog.ErrAckedLost) {
		t.Fatalf("Recovered = %v, want ErrAckedLost", err)
	}
}

func TestFileNoSyncConformance(t *testing.T) {
	lt.Run(t, func(t *testing.T) lt.Opener {
		path := filepath.Join(t.TempDir(), "rank-0.mlog")
		return func() (logstore.Store, error) {
			return logstore.OpenFileWith(path, logstore.FileOptions{NoSync: true})
		}
	})
}
