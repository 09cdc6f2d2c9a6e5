package redundancy

import (
	"context"
	"errors"
	"fmt"
)

// Transport is one member's connection to the other members of its set,
// through which Encode and Rebuild exchange blocks. Members are the indices
// 0..n−1 of the set (the Layout's numbering), not ranks of the job.
//
// Contract, for every implementation:
//
//  1. Ordering: messages from one member to another arrive in the order
//     they were sent (one FIFO stream per ordered pair). There is no
//     ordering between different pairs. Recv(from, tag) takes the next
//     message of the stream from→me; tags do not select among messages,
//     they check them: if the next message carries another tag, Recv fails
//     with an error wrapping ErrTagMismatch, and the stream is then broken.
//     Encode and Rebuild give every message a tag naming the operation, the
//     shard, the row and the block, so a protocol slip is an error, never
//     confused data.
//  2. Buffers: Send does not retain msg; the caller may reuse it as soon as
//     Send returns. Recv stores the message in buf if it fits (cap(buf)),
//     and otherwise allocates; the returned slice belongs to the caller.
//     Messages may be empty.
//  3. Flow control: each ordered pair buffers a bounded amount (at least
//     one message); Send blocks while the receiver's buffer for the pair is
//     full. This backpressure is what bounds memory.
//  4. Cancellation and failure: Send and Recv return promptly with an error
//     when ctx is done, when this endpoint is closed (wrapping ErrClosed),
//     or when the peer has closed or failed (wrapping ErrPeerClosed; Recv
//     first delivers whatever the peer sent before closing). They never
//     block forever on a dead peer.
//  5. Concurrency: calls for different peers may run concurrently; calls for
//     the same peer and direction must not (their order defines the stream).
//
// Implementations: package inproc (members as goroutines of one process);
// the network implementation lives with the runtime.
type Transport interface {
	Send(ctx context.Context, to int, tag uint64, msg []byte) error
	Recv(ctx context.Context, from int, tag uint64, buf []byte) ([]byte, error)
}

// Errors shared by Transport implementations.
var (
	ErrClosed      = errors.New("redundancy: transport endpoint closed")
	ErrPeerClosed  = errors.New("redundancy: peer closed or failed")
	ErrTagMismatch = errors.New("redundancy: message tag mismatch")
)

// Operations named in tags.
const (
	// 1 tagged a size exchange, which is no more: members learn the sizes
	// from their manifests.
	opEncode  = 2
	opRebuild = 3
)

// Tag layout: 4 bits operation, 12 bits shard, 16 bits row, 32 bits block.
const maxBlocks = 1 << 32

// tag packs the fields of a message tag (TagString shows them).
func tag(op, shard, row int, block int64) uint64 {
	return uint64(op)<<60 | uint64(shard)<<48 | uint64(row)<<32 | uint64(block)
}

// TagString renders a tag made by Encode or Rebuild for
// error messages.
func TagString(t uint64) string {
	op := map[uint64]string{opEncode: "encode", opRebuild: "rebuild"}[t>>60]
	if op == "" {
		return fmt.Sprintf("tag %#x", t)
	}
	return fmt.Sprintf("%s shard %d row %d block %d", op, t>>48&0xfff, t>>32&0xffff, t&0xffffffff)
}
