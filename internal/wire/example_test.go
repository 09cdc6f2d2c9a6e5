package wire_test

import (
	"bufio"
	"bytes"
	"fmt"

	"github.com/ckpt/ckpt/internal/wire"
)

func Example() {
	var conn bytes.Buffer // stands for a socket
	_ = wire.WriteFrame(&conn, &wire.Hello{Token: "s3cret", Incarnation: 1, Node: "n0", Ranks: []int32{0, 1, 2, 3}})
	_ = wire.WriteFrame(&conn, &wire.Collective{Seq: 1, Kind: wire.AllGather, Contribs: []wire.Contrib{{Rank: 0, Data: []byte("size=42")}}})

	r := bufio.NewReader(&conn)
	for range 2 {
		m, err := wire.ReadFrame(r, wire.DefaultLimit)
		fmt.Println(m, err)
	}
	// Output:
	// Hello{inc=1 node=n0 ranks=[0-3]} <nil>
	// Collective{seq=1 allgather 0:"size=42"} <nil>
}
