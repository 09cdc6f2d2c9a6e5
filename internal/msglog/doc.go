// Package msglog is the pure core of uncoordinated checkpointing with
// pessimistic receiver-based message logging, the protocol of RADIC that
// Fialho et al. 2011 model (§3.2, fig. 2; the overhead of eq. 10 and the
// interval of eq. 11): every rank checkpoints on its own schedule, every
// message a rank receives is logged at its protector before the
// application sees it, and after a failure only the failed rank rolls
// back: it restarts from its own checkpoint and its received messages are
// replayed from the log in their original order, while the other ranks go
// on. Like internal/coord it does no I/O, reads no clock and starts no
// goroutine; the log's storage is behind internal/msglog/logstore.
//
// # Terms
//
// A channel is an ordered pair of ranks (sender, receiver). Its messages
// are numbered from 1 by the Sender (a sequence number per channel); the
// Receiver delivers them in that order, once each, whatever the network
// does: a duplicate (a sequence number the channel already has) is
// dropped, a message ahead of its channel's next one is buffered (up to a
// window, WithWindow, beyond which it is dropped and sent again), and a
// gap waits for the retransmission that fills it.
//
// A record is a message as the log holds it: the message, its delivery
// index (its position in the order in which this receiver delivers
// messages, over all channels and the rank's whole life), and an XXH3-64
// hash of all of it. Because the index orders records across channels, a
// replay gives the application the same interleaving it saw before —
// which message a receive from any source (MPI_ANY_SOURCE) took — not only
// the same order within each channel. The delivery point (Point) is the
// index and the per-channel sequence numbers of the last message
// delivered: a checkpoint records its point, a restart replays the records
// after it, and the log is truncated up to it once the checkpoint is
// protected.
//
// Pessimistic means a message is delivered only once its record is durable
// at the protector: a failure can then lose no message the application
// has seen, so no other rank ever rolls back (no orphans). The price is
// the wait for the record to become durable, which receiver-based logging
// cannot overlap with the delivery (Fialho et al. 2011 fig. 2): Δ_lp,
// which Stats.PersistWait measures. The replay's time is Δ_lr
// (Stats.ReplayTime).
//
// The protocol assumes that ranks are piecewise deterministic: given the
// same messages in the same order, a rank re-executing from its
// checkpoint sends the same messages. Nondeterminism other than the
// receive order (a probe, a test of a request, the clock) is not logged.
//
// # The driver's obligations
//
// A driver (the rank runtime) feeds a Receiver the events of one rank and
// carries out the Ready it returns:
//
//  1. Every message read from the network goes to Receive, in the order
//     read, whatever its sequence number: the receiver sorts out
//     duplicates, reordering and gaps.
//  2. The records of Ready.Persist are appended to the protector's log in
//     order. Once every record up to index i is durable there (written
//     and synced), the driver calls Persisted(i). It never calls
//     Persisted beyond the last record it was given.
//  3. The messages of Ready.Deliver are handed to the application in
//     order, and only those: a receive from a given rank takes that
//     channel's oldest delivered message, a receive from any rank the
//     oldest of all. Nothing is handed over before Persisted said its
//     record is durable.
//  4. Ready.Acks are sent to their ranks, which give them to their
//     Sender's Ack; Ready.Truncate is passed to the protector's log.
//  5. A checkpoint saves the Receiver's Point() and the Sender's State()
//     with the application's state, taken between events. When the
//     checkpoint is committed at the protector the driver calls
//     Protected with that point.
//  6. A restarted rank makes its Receiver with NewReceiver(point) and its
//     Sender with NewSender(state) from the checkpoint it restarts from,
//     calls BeginReplay, hands the protector's records after point.Index
//     to Replay in order, then calls EndReplay. A Replay or EndReplay
//     error means the log cannot serve: the rank must not go on (the
//     runtime falls back to restarting the whole job). Live messages
//     that arrive meanwhile go to Receive as always. A second failure
//     during the replay starts it again from the same checkpoint, which
//     gives the same order.
//  7. When a rank learns that a peer restarted, it gives what the peer's
//     receiver holds (the Acks EndReplay returns) to Recovered and sends
//     the messages it returns; its error (ErrAckedLost: the peer's log
//     lost what it had acknowledged) means the peer cannot recover alone.
//     A rank that restarted asks each receiver for Durable and gives it
//     to Ack before it re-executes, so that Send skips what the receivers
//     already have. Messages not acknowledged for a while are sent again
//     (Resend): the network may have lost them.
//
// Events carry the driver's clock (now) only for Stats.
package msglog
