package hostile

import (
	"github.com/ckpt/ckpt/internal/peer"
	"github.com/ckpt/ckpt/internal/stage"
	"github.com/ckpt/ckpt/internal/wire"
)

// The first frames of each kind of listener, length prefix included, as
// its legitimate clients send them: Target.Hello and Target.Replays are
// built from them, by the tests of this package and by `ckpt torture`,
// which attacks a live job's listeners.

// CoordHello is the Hello a rank (one rank) or a node's relay (the
// node's ranks) sends a coordinator, or a rank sends its node's relay.
func CoordHello(token string, inc uint64, node string, ranks ...int32) []byte {
	b, err := wire.Encode(&wire.Hello{Token: token, Incarnation: inc, Node: node, Ranks: ranks})
	if err != nil {
		panic(err) // a Hello of a few ranks always encodes
	}
	return b
}

// PeerHello is the handshake rank from sends rank to's peer listener.
func PeerHello(token string, from, to int) []byte { return peer.Handshake(token, from, to) }

// StageHello is the Hello a node's staging client sends a staging server.
func StageHello(token, node string) []byte {
	return stage.Append(nil, &stage.Hello{Version: stage.Version, Token: token, Node: node})
}

// StageData is a staging client's answer to a pull, with no bytes: a
// frame that is valid only after a Hello, to replay on a connection of
// its own.
func StageData(id uint64) []byte { return stage.Append(nil, &stage.Data{ID: id}) }

// Previous is the incarnation before inc, whose Hellos a replay presents
// to the listeners of inc (the one after, for the first).
func Previous(inc uint64) uint64 {
	if inc == 0 {
		return 1
	}
	return inc - 1
}
