// Package peer carries point-to-point messages between the ranks of a job
// over TCP: the application's Send/Recv, and the redundancy sets' blocks
// for the store (it implements redundancy.Transport for both). It also
// drains the application messages in flight at a checkpoint (paper 002
// §III-B) so that they can be saved and delivered again after a restart.
//
// # Nodes and virtual rank addresses
//
// Each rank runs one Node (Listen), which listens on a TCP port and knows
// the job token and its rank. The application names ranks, never hosts or
// ports: a Node finds a peer through a Resolver, which the coordinator's
// key–value service implements with the key AddrKey(rank) ("addr/<rank>");
// Lookup waits until the rank has published. After a relaunch on other
// hosts or ports, the new Node of a rank publishes its new address and
// peers dial that: a connection that failed is reported once (Send
// returns redundancy.ErrPeerClosed) and the next Send looks the rank up
// and dials again.
//
// # Contract
//
// The application channel (Node.Send, Node.Recv; indices are job ranks)
// and every set channel (OpenSet; indices are members of the set) honour
// the redundancy.Transport contract point by point, as package inproc
// does, and pass the same conformance suite (package transporttest):
//
//  1. Ordering: one FIFO stream per ordered pair and channel; tags are
//     checked, not selected (redundancy.ErrTagMismatch).
//  2. Buffers: Send does not retain msg. Recv fills buf when the message
//     fits (cap(buf)), and otherwise returns a buffer of its own; either
//     way the result is the caller's.
//  3. Flow control: each stream buffers at most WithDepth messages and
//     WithWindow bytes on the receiving Node, and at least one message
//     whatever its size; Send blocks while that is full. The limits are
//     the receiver's, announced in the handshake and enforced by credit.
//  4. Cancellation and failure: calls return promptly when ctx is done
//     (wrapped ctx.Err()), when this side is closed
//     (redundancy.ErrClosed), or when the peer closed or its connection
//     failed (redundancy.ErrPeerClosed; Recv first delivers everything
//     that arrived). A Recv waiting for a peer that has not connected
//     dials it, so that it notices when the peer is gone. A Send made
//     before a peer's failure has reached this Node may succeed and be
//     lost; the next one fails. A peer that hangs without closing (a
//     stopped process, a partition) is not detected here: the
//     coordinator's heartbeats are, and the caller's context ends the
//     calls.
//  5. Concurrency: calls for different peers, channels or directions may
//     run concurrently; calls for the same peer, channel and direction
//     must not.
//
// # Channels and connections
//
// A channel is the application channel or one use of a set, named by
// (members, epoch). Every (channel, sender, receiver) has its own TCP
// connection, dialled by the sender on first use (or by a receiver's
// liveness check, see 4 above): data flows from the dialler to the
// acceptor, credit flows back. So no channel and no direction can hold
// another up: a full application stream never delays the store's
// blocks. Every socket has TCP_NODELAY. Peers may connect to a set before
// this Node opens it; their messages wait, within the window, until
// OpenSet. A closed set is remembered, and late connections to it are
// answered "closed" (the dialler sees ErrPeerClosed).
//
// # Handshake
//
// The dialler sends, after a 4-byte little-endian length (at most 8 MiB):
//
//	"ckpP" | version u8 (1) | kind u8 (0 application, 1 set)
//	| token (uvarint length, bytes; at most 4096) | from uvarint | to uvarint
//	| set only: epoch u64 LE | member count uvarint | members uvarint…
//
// The acceptor checks the token (in constant time) as soon as it is in,
// before it reads the rest (a set's member list may be megabytes), then
// that to is its rank and that from is a peer on that channel, and
// answers 21 bytes:
//
//	status u8 (0 ok, 1 refused, 2 closed) | depth u32 | window u64 | max frame u64
//
// A wrong token, rank or set is refused; a malformed handshake closes
// the connection without an answer. Both are logged and counted
// (Stats.Refused), and the dialler's call fails with ErrRefused; they
// never disturb the Node. Handshakes time out (WithHandshakeTimeout).
// With WithTLS (ckpt run --tls) every connection is mutual TLS with the
// job's certificate (package jobtls) first, the handshake inside it.
//
// # Frames
//
// After the handshake every frame is a 13-byte header, type u8 | a u32 LE
// | b u64 LE, and for data a payload:
//
//	data    (1) a = length, b = tag, then length bytes      dialler → acceptor
//	marker  (2) a = b = 0: the drain marker                 dialler → acceptor
//	blocked (3) a = b = 0: the sender waits for credit      dialler → acceptor
//	credit  (4) a = messages, b = bytes given back          acceptor → dialler
//
// The decoder checks each header before it allocates anything: an
// unknown type, non-zero fields in a control frame, a length above the
// frame limit (WithMaxFrame, 64 MiB by default), or data beyond the
// credit granted closes the connection (Stats.Malformed); the receiver
// then gets what came before and ErrPeerClosed wrapping ErrMalformed.
//
// Credit comes back in batches of half the window, at once when the
// sender reports it is blocked, so small messages cost no extra system
// calls. Messages up to 32 KiB are written with their header in one
// write; larger ones in place, header and message together with writev.
// Each connection's reader reads through a 64 KiB buffer, and when a Recv
// is waiting with room, straight into the caller's buffer (a Recv that
// gives up interrupts the read and the message moves to the queue, so
// the caller's memory is never touched after Recv returns).
//
// # Draining at a checkpoint
//
// Drain is a collective of all ranks, called when they have stopped
// sending application messages:
//
//  1. Each rank writes a marker on every outbound application connection
//     it has, behind everything it sent.
//  2. The ranks all-gather (group.Group.AllGather) a bitmap of the ranks
//     each sent a marker to, and a failure flag. So every receiver knows
//     exactly which markers to expect, including on connections whose
//     first bytes have not arrived yet, and never waits for one that was
//     not sent (timeouts, as in the paper, are not needed).
//  3. Each rank waits, on every stream that carries a marker, until the
//     marker has arrived; the messages queued before it that the
//     application has not received are removed and returned as Pending,
//     by sender rank and in order. Messages peers send after their Drain
//     queue behind the marker and are left for the application.
//
// The caller saves MarshalPending's encoding with the checkpoint; after a
// restart UnmarshalPending and Inject put the messages back at the head
// of the receive queues, before anything sent since. If any rank fails,
// Drain fails on every rank that sees it (ErrDrainAborted) and leaves the
// queues as they were.
//
// # The caller's obligations
//
//  1. Publish Node.Addr under AddrKey(rank) once Listen returns, and again
//     after every relaunch.
//  2. Open a set with the same members and epoch on every member, and
//     never reuse a (members, epoch) on a Node.
//  3. Call Drain on every rank at the same point, with no application Send
//     or Recv in progress; use its result only if every rank succeeded.
//  4. Call Inject before the application's first Recv after a restart.
//  5. Close the Node (or a set's Closer) when done: peers waiting for it
//     then fail instead of waiting.
package peer
