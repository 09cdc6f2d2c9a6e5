package coord_test

import (
	"fmt"
	"time"

	"github.com/ckpt/ckpt/internal/coord"
	"github.com/ckpt/ckpt/internal/wire"
)

// A driver's loop, reduced to its core: every event goes to the machine
// and every action of the Ready is carried out (here: printed).
func Example() {
	m, err := coord.New(coord.Config{Size: 2, Token: "s3cret", Incarnation: 1})
	if err != nil {
		panic(err)
	}
	show := func(rd coord.Ready) {
		for _, s := range rd.Sends {
			fmt.Printf("to %v: %v\n", s.Conn, s.Msg)
		}
		for _, c := range rd.Closes {
			fmt.Printf("close %v: %s\n", c.Conn, c.Reason)
		}
		for _, n := range rd.Notices {
			fmt.Println("notice:", n)
		}
	}
	now := time.Duration(0)
	for c := coord.ConnID(1); c <= 2; c++ {
		show(m.Connect(c, now))
		show(m.Receive(c, &wire.Hello{Token: "s3cret", Incarnation: 1, Node: "n0", Ranks: []int32{int32(c - 1)}}, now))
	}
	for c := coord.ConnID(1); c <= 2; c++ {
		show(m.Receive(c, &wire.Collective{Seq: 1, Kind: wire.AllGather,
			Contribs: []wire.Contrib{{Rank: int32(c - 1), Data: []byte{byte('a' + c - 1)}}}}, now))
	}
	show(m.Disconnect(2, nil, now))
	// Output:
	// notice: joined c1 ranks=[0]
	// to c1: Welcome{size=2 inc=1 nodes=1}
	// to c2: Welcome{size=2 inc=1 nodes=1}
	// notice: joined c2 ranks=[1]
	// notice: started
	// to c1: Result{seq=1 allgather "a" "b"}
	// to c2: Result{seq=1 allgather "a" "b"}
	// to c1: Abort{rank 1 (node n0): connection closed before leave}
	// close c1: job aborted
	// notice: aborted: rank 1 (node n0): connection closed before leave
}
