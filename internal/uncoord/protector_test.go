package uncoord

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt/ckpt/internal/msglog"
	"github.com/ckpt/ckpt/internal/msglog/logstore"
	"github.com/ckpt/ckpt/internal/placement"
)

func TestProtectorOfIsTheNextRankInAnotherDomain(t *testing.T) {
	// Two ranks per node; node c is a domain of its own, a and b share a
	// rack.
	ms := []placement.Member{
		{Rank: 5, Node: "c"}, {Rank: 0, Node: "a", Domain: "r1"}, {Rank: 1, Node: "a", Domain: "r1"},
		{Rank: 2, Node: "b", Domain: "r1"}, {Rank: 3, Node: "b", Domain: "r1"}, {Rank: 4, Node: "c"},
	}
	want := map[int]int{0: 4, 1: 4, 2: 4, 3: 4, 4: 0, 5: 0}
	for r, w := range want {
		if p, ok := ProtectorOf(ms, r); !ok || p != w {
			t.Errorf("ProtectorOf(rank %d) = %d, %v; want %d", r, p, ok, w)
		}
	}
	if _, ok := ProtectorOf(ms[1:3], 0); ok {
		t.Error("ranks that all share a node have a protector")
	}
	if _, ok := ProtectorOf(ms, 9); ok {
		t.Error("a rank not in the job has a protector")
	}
}

func TestFileProtectorsKeepTheLogInTheProtectorsDirectory(t *testing.T) {
	root := t.TempDir()
	p := FileProtectors{Dir: func(rank int) (string, error) {
		if rank == 7 {
			return "", errors.New("no node")
		}
		return filepath.Join(root, "node-of-protector"), nil
	}}
	l, err := p.OpenLog(3)
	if err != nil {
		t.Fatal(err)
	}
	rec := msglog.Record{Index: 1, From: 2, Seq: 1, Data: []byte("x")}
	rec.Sum = msglog.Hash(rec.Index, rec.From, rec.Seq, rec.Data)
	if err := l.Append([]msglog.Record{rec}); err != nil {
		t.Fatal(err)
	}
	l.Close()
	if _, err := os.Stat(filepath.Join(root, "node-of-protector", "msglog", "rank-3.log")); err != nil {
		t.Fatalf("the log is not in the protector's directory: %v", err)
	}
	l, err = p.OpenLog(3)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, last, err := l.Bounds(); err != nil || last != 1 {
		t.Errorf("reopened log: last %d, %v; want 1", last, err)
	}
	if _, err := p.OpenLog(7); err == nil {
		t.Error("OpenLog succeeded without a directory")
	}
	var _ logstore.Store = l
}

// RemoveLog deletes the rank's log (a fresh start), and a missing one is
// no error; the next OpenLog starts an empty log.
func TestFileProtectorsRemoveLog(t *testing.T) {
	root := t.TempDir()
	p := FileProtectors{Dir: func(int) (string, error) { return root, nil }}
	l, err := p.OpenLog(1)
	if err != nil {
		t.Fatal(err)
	}
	rec := msglog.Record{Index: 1, From: 0, Seq: 1, Data: []byte("x")}
	rec.Sum = msglog.Hash(rec.Index, rec.From, rec.Seq, rec.Data)
	if err := l.Append([]msglog.Record{rec}); err != nil {
		t.Fatal(err)
	}
	l.Close()
	if err := p.RemoveLog(1); err != nil {
		t.Fatal(err)
	}
	if err := p.RemoveLog(1); err != nil {
		t.Fatalf("removing a log that is not there: %v", err)
	}
	if l, err = p.OpenLog(1); err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, last, err := l.Bounds(); err != nil || last != 0 {
		t.Errorf("log after RemoveLog: last %d, %v; want an empty log", last, err)
	}
}

// The log's durability follows NoSync (the job's cache durability): synced
// appends by default (node durability), none under process durability.
func TestFileProtectorsSyncFollowsDurability(t *testing.T) {
	root := t.TempDir()
	for _, noSync := range []bool{false, true} {
		p := FileProtectors{Dir: func(int) (string, error) { return root, nil }, NoSync: noSync}
		s, err := p.OpenLog(3)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.(*logstore.File).Synced(); got == noSync {
			t.Errorf("FileProtectors{NoSync: %v}: the log's appends synced = %v", noSync, got)
		}
		s.Close()
	}
}
