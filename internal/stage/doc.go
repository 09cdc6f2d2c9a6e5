// Package stage is the non-blocking flush: staging servers on extra nodes
// pull committed checkpoints from the compute nodes' caches and write them
// to the shared tier while the application computes (Sato et al. 2012;
// docs/STAGING.md describes the design).
//
// # Pieces
//
//   - Server (NewServer, Serve): one staging server. It accepts the
//     connections of the compute nodes' clients, pulls the files of every
//     announced checkpoint chunk by chunk through a bounded pool of buffers
//     and a rate limit (Config.Rate), writes each rank's object to the
//     shared tier with Config.Writers writers, verifies every file against
//     the content hash of the checkpoint's manifest, and commits the
//     checkpoint on the shared tier once every rank's object is durable. A
//     journal (Config.Journal) keeps the pending flushes, so that a
//     restarted server resumes them.
//   - Client (NewClient): the compute node's side, run by the lowest rank of
//     a node. It announces the checkpoints committed in the node's cache
//     (Announce), serves the server's pulls from the cache through a Source
//     (straight from the file with sendfile where it can), and reports the
//     state of each flush (State, Latency, Busy, WaitIdle; Pinned tells
//     retention which checkpoints a flush still needs).
//   - The protocol (proto.go): length-prefixed frames (Hello, Welcome,
//     Refused, Announce, Pull, Data, PullError, Status) with strict, fuzzed
//     decoders.
//
// # Who uses it
//
// `ckpt stage` (cmd/ckpt/stage.go) runs a Server; the launcher starts those
// processes (internal/launch). A rank's runtime (internal/rank, through
// internal/flush/transfer's staged transfer) runs a Client when the job has
// staging servers. internal/bench measures
// the server's throughput.
package stage
