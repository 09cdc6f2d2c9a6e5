// Package coord is the job's coordinator (Machine) and a node's
// sub-coordinator (Relay), written as deterministic state machines in the
// manner of etcd's raft: they do no I/O, read no clock and start no
// goroutine. A driver (internal/coordnet) owns the sockets and the timers;
// it hands every event to the machine — a connection opened, a message
// read, a connection lost, time passing — and carries out the Ready batch of
// actions the machine returns. The same sequence of events always gives the
// same actions, so the tests replay scripted and randomized schedules
// (testdata/*.txt, TestRandomized) without a network.
//
// # Terms
//
// A connection (ConnID) belongs to a client: a rank, or a relay speaking for
// the ranks of its node. Every request names the ranks it speaks for, so
// the coordinator's work per event grows with the message and with the
// connections, never with the job's size; a job of 16384 ranks on 64 nodes
// is 64 connections to the coordinator (002 §III-C).
//
// The job goes through the Phases Joining, Running, then Finished or
// Aborted:
//
//   - Joining: clients send Hello. A wrong token or incarnation, a rank out
//     of range, held by another live connection or listed twice, or no rank
//     at all gets Refused and the connection is closed. A connection lost
//     now just frees its ranks (NoticeDropped): nothing has been computed
//     yet and a restarted client may take them. When every rank has joined,
//     every client gets the same Welcome (NoticeStarted). Joins after that
//     are refused: losing a rank aborts the job, so there is nothing to
//     replace. A client whose ranks joined waits for the others: it is
//     sent nothing before Welcome (no Heartbeat; only its last word,
//     Abort, should the job fail) and is not timed out for its silence,
//     since ranks started by srun or mpirun may start minutes apart.
//     Config.JoinTimeout bounds admission instead: a job not complete by
//     then aborts, naming the ranks missing. A connection whose Hello was
//     not read yet gets two heartbeat timeouts while the job joins: a
//     client says Hello first thing, so its silence may mean a server too
//     busy to read it (16K ranks joining a busy machine), but one that
//     never says it (a slowloris) must not hold a connection for the whole
//     join; once the job runs, such a connection is refused after one
//     heartbeat timeout, told why.
//   - Running: collectives, the key–value service and Leave (see below).
//     The loss of a rank that has not left — its connection closed or lost,
//     silent for longer than the heartbeat timeout, breaking the protocol,
//     or reported by Fail — aborts the job; with Config.Relays the loss of
//     a relay's connection first waits for the relay to come back (see
//     Resuming); with Config.Uncoordinated the lost rank's next process
//     may rejoin (see Recovering one rank alone).
//   - Aborted: every live connection got Abort naming the rank(s) and the
//     cause, and was closed (NoticeAborted); every later message gets the
//     same Abort. A round that loses a rank is aborted, which leaves the
//     previous checkpoint current.
//   - Finished: every rank left (NoticeFinished).
//
// # Collectives
//
// Collective seq s (numbered from 1) completes when every rank contributed
// to s; each rank's contributions come in seq order, one per collective,
// and a connection may split its ranks' contributions over several
// messages. Each connection then gets one Result — the same *wire.Result
// for all, so a driver may encode it once: no data for a barrier, every
// rank's contribution indexed by rank for an all-gather or commit, and for
// a decide the answer of Config.Decide, a pure function of all
// contributions; when Decide finds them malformed instead, the job aborts
// with its error, naming the rank it blames (RankError). A duplicate contribution, a seq other than the open one, a
// kind other than the open collective's, or a rank the connection does not
// hold is a protocol error: the connection gets Error and is closed, which
// aborts the job. A rank that leaves while a collective waits for it, or a
// collective started after some rank left, aborts the job at once instead of
// leaving every other rank waiting forever.
//
// A commit is an all-gather of votes (wire.AppendVote); when every rank
// voted yes for the same checkpoint, the machine records it as the newest
// committed one (Status, NoticeCommitted) for the launcher.
//
// # Key–value service
//
// Publish stores a value (a later publish of the key replaces it) and is
// answered by Ack; Lookup is answered by Value at once, or with Wait when
// the key is first published, parked lookups in arrival order. Requests
// carry the client's ids, echoed in the answers. Because a connection's
// messages are handled in order, a rank that publishes and then contributes
// to a collective has its value visible to every rank once the collective
// completes: peers find each other this way after a restart (virtual rank
// addresses).
//
// # Relay
//
// A Relay serves its node's ranks with the same protocol and speaks for
// them upstream on one connection (see Relay): one Hello for the node, one
// merged Collective per collective (split to respect MaxFrame), key–value
// requests under its own ids. A client cannot tell a relay from the
// coordinator: it gets the same messages, and the failure of a local rank
// is reported upstream with Fail in the words the coordinator then uses in
// everyone's Abort. The two share their client-facing side (front.go:
// connections, admission, liveness, protocol errors); they differ in what
// a lost rank means.
//
// # Resuming
//
// With Config.Relays (tree mode: every client is a node's relay), a relay
// whose connection to the coordinator drops while the job runs — a network
// blip, the coordinator alive — keeps its node running and its driver dials
// again (with the same jittered back-off); on the new connection it sends
// its Hello again. The coordinator kept the lost connection's ranks
// (detached): a Hello from the same node for exactly those ranks, with the
// job's token and incarnation, gives them to the new connection — not a new
// join, not a failure; if the old connection is still open (its loss not
// seen yet) it is closed. Neither side knows which messages in flight at
// the cut arrived, so the relay sends again its contributions to the open
// collective if their Result has not come, the Leaves it sent, and the
// key–value requests not answered, in their first order; the coordinator
// answers the Hello with Welcome and the last Result, and drops from a
// resumed connection what it already has (contributions to completed
// collectives or of ranks that contributed, Leaves of ranks that left,
// publishes up to the highest request id it saw from the node, answered
// with Ack alone so that a later publish of the key is not undone). The
// relay ignores a Welcome or a stale Result after resuming, and answers to
// requests it no longer waits for.
//
// A relay treats a connection on which the coordinator has been silent
// for the heartbeat timeout as lost too (a hung coordinator, or a route
// that drops its messages): it closes it and dials again, as after the
// connection's end. The heartbeat timeout bounds the wait on both sides:
// the coordinator aborts the job when a detached relay's last message is
// older than it, and the relay aborts its node, naming the loss (the
// connection's end or the silence), when the coordinator has not answered
// on a new connection within it of the loss (the coordinator truly died,
// or hung for good); connections that are accepted and end again do not
// restart that window. A local rank that fails while the relay is cut
// aborts the node at once, and the relay dials on within the window to
// say why (Hello, then Fail, until the coordinator's Abort): the job's
// reason then names that rank and its cause, where it would otherwise be
// a relay that did not come back. A relay lost after its Hello but before the
// start aborts its node at once, as a silent or misbehaving relay does.
// Without Config.Relays the coordinator treats a relay's connection as any
// client's: its loss aborts the job, and a resuming relay is told so.
//
// # Recovering one rank alone
//
// With Config.Uncoordinated, under uncoordinated checkpointing with
// pessimistic receiver-based message logging (Fialho et al. 2011, §3.2;
// package uncoord) a failed rank restarts from its own checkpoint and the
// others go on, so the loss of a rank while the job runs does not abort it.
// Its slot is freed instead (the rank is vacant), the launcher hears of it
// (NoticeLost) and starts the rank's next process, and that process's Hello
// for exactly the vacant ranks joins the running job (NoticeRejoined). A
// Hello with the job's credentials for exactly the ranks of a live
// connection, none of them left, replaces that connection as lost: the
// coordinator may read the new process's Hello before the end of the dead
// one's connection, and only the launcher starts a rank's process, after
// the last one ended. Its peers find it again through the address it
// publishes anew in the key–value service (a later Publish of a key
// replaces the value; package peer re-dials it).
//
// What a lone recovery cannot serve still aborts the job, which the
// launcher answers with a whole-job restart:
//
//   - a collective open when the rank is lost, or started while a rank is
//     vacant or after one recovered: a collective needs every rank's
//     contribution at the same seq, and a restarted process neither has
//     its predecessor's place in the sequence nor can learn it;
//   - a vacant rank that does not rejoin within the join timeout of its
//     loss;
//   - a connection dropped for breaking the protocol: a bug of its
//     client, which restarting it would not cure.
//
// A connection is the unit of loss: every rank of a lost connection that
// has not left becomes vacant, even when a Fail names only some of them
// (the launcher restarts a process whole). A lost rank's address stays in
// the key–value service until its next process publishes anew: a peer that
// dials the old one fails and looks it up again. Relays (tree mode) are not
// supported with this mode: a relay's lost link would stand for a node's
// ranks, which cannot rejoin one by one.
//
// # Clients
//
// A client (the rank side, in internal/coordnet) sends Hello first, then
// requests; it sends Heartbeat whenever it has sent nothing for the
// heartbeat interval — also while it waits for Welcome or a Result, which
// may take long — and treats Abort, Refused, Error or the end of the
// connection as the failure of the job. While it waits for Welcome it
// ignores a Heartbeat: coordinators before the join timeout sent them.
//
// # The driver's obligations
//
//  1. One goroutine at a time calls the machine: its methods are not safe
//     for concurrent use. The usual driver has one loop that receives events
//     from per-connection reader goroutines and a ticker over channels.
//  2. Call Connect for a connection before any other event of it, with an
//     id never used before in this machine (for a relay, Upstream names the
//     connection to the coordinator and is never a local id).
//  3. Hand messages of a connection to Receive in the order they were read.
//     The machine keeps messages and the slices in them (contributions,
//     values), so the driver must not reuse their memory: wire.ReadFrame
//     allocates a fresh buffer per frame.
//  4. Call Disconnect when a connection ends: end of stream (err nil), a
//     read or write error, or a frame that wire could not decode or that
//     exceeds the frame limit (err says which; it appears in the abort
//     reason). Events for connections the machine has closed or never knew
//     are ignored, so readers need not be synchronized with Closes.
//  5. Call Tick regularly, at least a few times per heartbeat interval,
//     with the logical time now: a monotonic duration since any fixed
//     origin (time.Since(start)). Every event carries now; it never goes
//     back (earlier values are taken as the latest seen).
//  6. Carry out every Ready before the next call: the next call reuses its
//     slices. Write each connection's Sends in order; a message may be
//     shared by several Sends and by later Readys, so treat it as read-only
//     (encode it; a driver may cache the frame of a shared *wire.Result).
//  7. For each Close, close the connection after writing every message sent
//     to it before, so that a Refused, Error or Abort reaches the client.
//     Then stop reading it; the machine has already forgotten it.
//  8. Read frames with a limit: wire.DefaultLimit serves requests to the
//     coordinator and to relays as long as a relay's MaxFrame does not
//     exceed the coordinator driver's limit; whoever reads Results (clients,
//     and relays from upstream) needs wire.ResultLimit(Size, MaxContrib).
//  9. Report Notices: NoticeAborted, NoticeFinished and NoticeCommitted are
//     what the launcher waits for. After Aborted or Finished the driver may
//     stop the machine once the Ready's Sends are written.
//
// A relay's driver has the same obligations for its local connections and
// its upstream one; it dials the coordinator (with jittered back-off)
// whenever it has no connection to it and Relay.WantsUpstream says so
// (after each Ready), and reports the connection with Connect(Upstream).
// The relay wants one once every local rank joined, so that its Hello is
// the first thing on it, and again after it was lost or given up while the
// job needs it: before the relay sent its Hello that is harmless, and
// while the job runs the relay resumes (see Resuming). A connection it
// reports after the relay gave up is closed at once.
package coord
