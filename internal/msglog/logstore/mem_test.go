package logstore_test

import (
	"errors"
	"testing"

	"github.com/ckpt/ckpt/internal/msglog"
	"github.com/ckpt/ckpt/internal/msglog/logstore"
	"github.com/ckpt/ckpt/internal/msglog/logstore/logstoretest"
)

func TestMemConformance(t *testing.T) {
	logstoretest.Run(t, func(t *testing.T) logstoretest.Opener {
		m := logstore.NewMem()
		return func() (logstore.Store, error) { return m, nil }
	})
}

// A record corrupted in the twin (Mem.Corrupt, as a disk might) is handed
// out as it is, and the replay fails on it, naming it: one with data, and
// one without (whose sequence number is what changes).
func TestMemCorruptFailsReplay(t *testing.T) {
	for _, bad := range []uint64{3, 4} {
		m := logstore.NewMem()
		r := msglog.NewReceiver(msglog.Point{})
		for seq, data := range []string{"a", "b", "c", ""} {
			rd := r.Receive(msglog.Msg{From: 1, Seq: uint64(seq + 1), Data: []byte(data)}, 0)
			if err := m.Append(rd.Persist); err != nil {
				t.Fatal(err)
			}
		}
		m.Corrupt(bad)
		r = msglog.NewReceiver(msglog.Point{})
		r.BeginReplay(0)
		err := m.ReadAfter(0, func(rec msglog.Record) error {
			_, err := r.Replay(rec, 0)
			return err
		})
		var re *msglog.ReplayError
		if !errors.As(err, &re) || !errors.Is(err, msglog.ErrCorrupt) || re.After != bad-1 {
			t.Fatalf("replay over corrupt record %d: %v", bad, err)
		}
	}
}
