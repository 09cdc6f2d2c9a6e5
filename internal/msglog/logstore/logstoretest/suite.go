// Package logstoretest is the conformance suite of logstore.Store: every
// implementation runs it (logstore's Mem and File; a protector reached
// over the network, later).
package logstoretest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/ckpt/ckpt/internal/msglog"
	"github.com/ckpt/ckpt/internal/msglog/logstore"
)

// Opener opens one log, the same each time it is called: a reopen after
// Close sees what was appended before.
type Opener func() (logstore.Store, error)

// Run runs every conformance test as a subtest; newLog gives each test a
// new, empty log.
func Run(t *testing.T, newLog func(t *testing.T) Opener) {
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, Opener)
	}{
		{"Empty", testEmpty},
		{"AppendRead", testAppendRead},
		{"Gap", testGap},
		{"Reopen", testReopen},
		{"Truncate", testTruncate},
		{"ReadStops", testReadStops},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newLog(t)) })
	}
}

// Rec makes record i of a test log: from rank i%3, with i%5 bytes of data
// (so some have none), and its hash.
func Rec(i uint64) msglog.Record {
	from, seq := int(i%3), i
	data := []byte(fmt.Sprintf("%d-data", i))[:i%5]
	return msglog.Record{Index: i, From: from, Seq: seq, Data: data, Sum: msglog.Hash(i, from, seq, data)}
}

// Recs returns records lo to hi.
func Recs(lo, hi uint64) []msglog.Record {
	var rs []msglog.Record
	for i := lo; i <= hi; i++ {
		rs = append(rs, Rec(i))
	}
	return rs
}

func open(t *testing.T, o Opener) logstore.Store {
	t.Helper()
	s, err := o()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func mustAppend(t *testing.T, s logstore.Store, recs []msglog.Record) {
	t.Helper()
	if err := s.Append(recs); err != nil {
		t.Fatal(err)
	}
}

// ReadAll returns the records after after, failing the test on an error.
func ReadAll(t *testing.T, s logstore.Store, after uint64) []msglog.Record {
	t.Helper()
	var got []msglog.Record
	if err := s.ReadAfter(after, func(r msglog.Record) error {
		got = append(got, r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

// WantRecords fails the test unless got are records lo to hi, intact.
func WantRecords(t *testing.T, got []msglog.Record, lo, hi uint64) {
	t.Helper()
	want := Recs(lo, hi)
	if len(got) != len(want) {
		t.Fatalf("got %d records, want %d to %d", len(got), lo, hi)
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Index != w.Index || g.From != w.From || g.Seq != w.Seq || string(g.Data) != string(w.Data) || g.Sum != w.Sum {
			t.Fatalf("record %d = %+v, want %+v", w.Index, g, w)
		}
	}
}

func wantBounds(t *testing.T, s logstore.Store, base, last uint64) {
	t.Helper()
	b, l, err := s.Bounds()
	if err != nil || b != base || l != last {
		t.Fatalf("Bounds = %d, %d, %v; want %d, %d", b, l, err, base, last)
	}
}

func testEmpty(t *testing.T, o Opener) {
	s := open(t, o)
	wantBounds(t, s, 0, 0)
	WantRecords(t, ReadAll(t, s, 0), 1, 0)
}

// Records come back as appended, from any point; the store keeps its own
// copy of their data.
func testAppendRead(t *testing.T, o Opener) {
	s := open(t, o)
	first := Recs(1, 2)
	mustAppend(t, s, first)
	first[1].Data = append(first[1].Data[:0], 'X')
	mustAppend(t, s, Recs(3, 7))
	wantBounds(t, s, 0, 7)
	WantRecords(t, ReadAll(t, s, 0), 1, 7)
	WantRecords(t, ReadAll(t, s, 4), 5, 7)
	WantRecords(t, ReadAll(t, s, 7), 1, 0)
	got := ReadAll(t, s, 6)
	if len(got[0].Data) > 0 {
		got[0].Data[0] ^= 1 // the caller's to keep: the log is unchanged
	}
	WantRecords(t, ReadAll(t, s, 6), 7, 7)
	mustAppend(t, s, nil)
	wantBounds(t, s, 0, 7)
}

// A record out of order is refused, and nothing of its batch appended.
func testGap(t *testing.T, o Opener) {
	s := open(t, o)
	if err := s.Append(Recs(2, 3)); !errors.Is(err, logstore.ErrGap) {
		t.Fatalf("Append of 2 to an empty log: %v, want ErrGap", err)
	}
	bad := append(Recs(1, 2), Rec(4))
	if err := s.Append(bad); !errors.Is(err, logstore.ErrGap) {
		t.Fatalf("Append of 1, 2, 4: %v, want ErrGap", err)
	}
	wantBounds(t, s, 0, 0)
	mustAppend(t, s, Recs(1, 1))
	if err := s.Append(Recs(1, 1)); !errors.Is(err, logstore.ErrGap) {
		t.Fatalf("Append of 1 again: %v, want ErrGap", err)
	}
	WantRecords(t, ReadAll(t, s, 0), 1, 1)
}

func testReopen(t *testing.T, o Opener) {
	s := open(t, o)
	mustAppend(t, s, Recs(1, 4))
	if err := s.Truncate(1); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, o)
	wantBounds(t, s, 1, 4)
	WantRecords(t, ReadAll(t, s, 1), 2, 4)
	mustAppend(t, s, Recs(5, 5))
	WantRecords(t, ReadAll(t, s, 1), 2, 5)
}

// Truncation drops the records up to a point, for good; the log goes on
// after it.
func testTruncate(t *testing.T, o Opener) {
	s := open(t, o)
	mustAppend(t, s, Recs(1, 5))
	if err := s.Truncate(2); err != nil {
		t.Fatal(err)
	}
	wantBounds(t, s, 2, 5)
	WantRecords(t, ReadAll(t, s, 2), 3, 5)
	if err := s.ReadAfter(1, func(msglog.Record) error { return nil }); !errors.Is(err, logstore.ErrTruncated) {
		t.Fatalf("ReadAfter(1) after truncating to 2: %v, want ErrTruncated", err)
	}
	if err := s.Truncate(1); err != nil {
		t.Fatalf("Truncate below the base: %v", err)
	}
	wantBounds(t, s, 2, 5)
	if err := s.Truncate(6); err == nil {
		t.Fatal("Truncate beyond the last record succeeded")
	}
	if err := s.Truncate(5); err != nil {
		t.Fatal(err)
	}
	wantBounds(t, s, 5, 5)
	WantRecords(t, ReadAll(t, s, 5), 1, 0)
	if err := s.Append(Recs(7, 7)); !errors.Is(err, logstore.ErrGap) {
		t.Fatalf("Append of 7 after truncating to 5: %v, want ErrGap", err)
	}
	mustAppend(t, s, Recs(6, 8))
	WantRecords(t, ReadAll(t, s, 5), 6, 8)
}

// ReadAfter stops at the callback's first error and returns it.
func testReadStops(t *testing.T, o Opener) {
	s := open(t, o)
	mustAppend(t, s, Recs(1, 3))
	stop := errors.New("stop")
	n := 0
	err := s.ReadAfter(0, func(msglog.Record) error {
		n++
		if n == 2 {
			return stop
		}
		return nil
	})
	if err != stop || n != 2 {
		t.Fatalf("ReadAfter = %v after %d records, want stop after 2", err, n)
	}
}
