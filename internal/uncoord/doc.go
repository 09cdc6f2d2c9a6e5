// Package uncoord is the driver of uncoordinated checkpointing with
// pessimistic receiver-based message logging (Fialho et al. 2011 §3.2,
// fig. 2): it carries out, with goroutines and I/O, what the pure state
// machines of internal/msglog decide. One Rank drives one rank's Receiver
// and Sender over the messages it exchanges with its peers (Net, which
// internal/peer's Node implements) and the rank's log at its protector
// (a logstore.Store).
//
// # What a rank does
//
//   - Send numbers the message (msglog.Sender) and queues it to the peer's
//     outbox; a message the peer already has durable (a restarted rank
//     re-executing) is not sent at all.
//   - A reader per peer hands every frame read to the Receiver. The
//     records it gives to log go to one persister, which appends all that
//     came while its previous append ran in one (one sync for all: group
//     commit) and, once they are durable, tells the Receiver; only then
//     are their messages delivered to the application (pessimistic
//     logging: the application never sees a message a failure could lose,
//     so no other rank ever rolls back). Recv takes the oldest delivered
//     message of a rank, RecvAny the oldest of all (MPI_ANY_SOURCE): a
//     replay gives the same sequence. The acknowledgements go back to the
//     senders through their outboxes, coalesced; an outbox sends its
//     frames in order, and waits for a failed peer to come back rather
//     than drop them.
//   - Checkpoint is local to the rank: it snapshots, between events, the
//     Receiver's delivery point, the Sender's state and the messages
//     delivered and not yet received by the application, in delivery
//     order (Snapshot). Once the runtime has saved the snapshot with the
//     application's state, Protected truncates the log behind it.
//   - Start with Restarted replays: a rank that restarts from a snapshot
//     (or from the beginning, when it had none) replays the records its
//     log holds after the snapshot's point, in their delivery order, then
//     tells every peer what it holds from it (hello). Each peer answers
//     with what it holds from the restarted rank, so that the rank's
//     re-execution skips the messages their receivers already have, and
//     sends again what the restarted rank had not logged
//     (msglog.Sender.Recovered). Start returns when every peer has
//     answered: the application then re-executes from its checkpoint.
//
// # Collectives
//
// AllGather and Barrier are built from a Rank's Send and Recv (P2P): the
// contributions gathered to rank 0, which sends the set back to every
// rank. Their messages are logged and replayed like any other, so a rank
// recovering alone re-executes its collectives against its log, its sends
// suppressed by their sequence numbers, and the others are not disturbed.
//
// # When the log cannot serve
//
// A record whose hash does not match (msglog.ErrCorrupt), a log truncated
// beyond the snapshot, or a peer that finds the restarted rank's log lost
// messages it had acknowledged (msglog.ErrAckedLost: two failures in one
// protection pair) mean the rank cannot recover alone. Start, and on the
// peer every later call, then fail with an error wrapping
// ErrCannotServe: the runtime must fall back to restarting the whole job
// from a consistent set of checkpoints. No byte of a corrupt record is
// ever delivered: the replay stops at it.
//
// # Frames
//
// Every frame travels on the application channel with tag Tag, as a kind
// byte and uvarints:
//
//	data  (1) seq, data (uvarint length, bytes)
//	ack   (2) seq: the receiver's log holds the channel up to seq
//	hello (3) seq: the restarted sender holds the channel up to seq
//	reply (4) seq: answer to hello, what the receiver of it holds
//	refuse(5): answer to hello when the log cannot serve
//
// Protectors is the seam to the log's storage at a rank's protector
// (ProtectorOf picks it: the next rank in another failure domain);
// FileProtectors keeps the logs as files in the protector node's cache,
// which is right when every node shares a machine; their appends are
// synced, or not (NoSync) when the job's cache durability is the
// process's.
//
// A Rank's calls may be made from any goroutine. Peers' failures are seen
// by Net as errors wrapping redundancy.ErrPeerClosed: the reader tries
// again (a restarted peer is found again through the coordinator's
// virtual addresses) and a message lost on the way is sent again when the
// peer says hello. A restarted rank says hello again to a peer that has
// not answered after Config.HelloRetry: the answer may have gone into the
// peer's connection to the failed incarnation.
package uncoord
