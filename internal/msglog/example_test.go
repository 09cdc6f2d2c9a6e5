package msglog_test

import (
	"fmt"

	"github.com/ckpt/ckpt/internal/msglog"
	"github.com/ckpt/ckpt/internal/msglog/logstore"
)

// A driver's loop in brief: log, persist, deliver; a checkpoint; a
// failure; the replay from the checkpoint over the protector's log.
func Example() {
	log := logstore.NewMem() // the protector's copy of this rank's log
	r := msglog.NewReceiver(msglog.Point{})
	handle := func(rd msglog.Ready) {
		if len(rd.Persist) > 0 {
			if err := log.Append(rd.Persist); err != nil { // durable on return
				panic(err)
			}
			rd = r.Persisted(rd.Persist[len(rd.Persist)-1].Index, 0)
		}
		for _, rec := range rd.Deliver {
			fmt.Printf("deliver %s from rank %d\n", rec.Data, rec.From)
		}
	}
	handle(r.Receive(msglog.Msg{From: 2, Seq: 1, Data: []byte("a")}, 0))
	cp := r.Point() // saved with the application's state

	// Rank 1's seq 2 overtakes its seq 1, and waits for it.
	handle(r.Receive(msglog.Msg{From: 1, Seq: 2, Data: []byte("c")}, 0))
	handle(r.Receive(msglog.Msg{From: 1, Seq: 1, Data: []byte("b")}, 0))

	// The rank fails and restarts from cp.
	r = msglog.NewReceiver(cp)
	r.BeginReplay(0)
	err := log.ReadAfter(cp.Index, func(rec msglog.Record) error {
		rd, err := r.Replay(rec, 0)
		for _, rec := range rd.Deliver {
			fmt.Printf("replay %s from rank %d\n", rec.Data, rec.From)
		}
		return err
	})
	if err != nil {
		panic(err) // the log cannot serve: restart the whole job
	}
	rd, _ := r.EndReplay(0)
	fmt.Println("tell the senders:", rd.Acks)
	// Output:
	// deliver a from rank 2
	// deliver b from rank 1
	// deliver c from rank 1
	// replay b from rank 1
	// replay c from rank 1
	// tell the senders: [{1 2} {2 1}]
}
