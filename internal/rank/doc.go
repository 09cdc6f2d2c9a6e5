// Package rank is one rank's runtime in a job: the internals of ckpt.Job.
// The root's Job is a thin wrapper over a Runtime and the rank's Store.
//
// A rank's life, in the order the root drives it:
//
//  1. Configure resolves the settings: the application's options first,
//     then the environment the launcher set (read once, checked, through
//     jobenv.LookupOnly), then the defaults. Every error it returns is a
//     configuration error.
//  2. Join joins the job: without a coordinator the process is a job of
//     one rank; with one, the rank's endpoint for its peers listens, the
//     rank joins the coordinator and publishes its address. Comm is then
//     the job's communicator, over which the root opens the rank's store.
//  3. Attach hands the runtime the store's engine: checkpoints, restarts
//     and flushes go through it.
//  4. NeedCheckpoint decides collectively when to checkpoint (through the
//     coordinator, which applies package policy to the slowest rank);
//     Checkpoint takes one: it drains the messages in flight into it,
//     commits it through the engine, and flushes it when package flush's
//     Scheduler says it is due (blocking, or staged: each node's lowest
//     rank announces it to a staging server, after the ranks voted that
//     no node's previous flush still runs); Restart restores and delivers
//     the saved messages again.
//  5. Finish and Close leave the job.
//
// Under the uncoordinated strategy (Config.Strategy; uncoord.go) steps 4
// and 5 change: StartStrategy (after Attach) learns the ranks' places
// and starts the rank's message-logging driver (internal/uncoord), Send
// and Recv go through it, NeedCheckpoint decides per rank
// (policy.Own), CheckpointAlone and RestartAlone replace the engine's
// collective Checkpoint and Restart, and Finish waits for every rank
// through the key–value service instead of a barrier: no collective is
// on the strategy's path.
//
// Rank 0 publishes for the launcher, under jobenv's keys, where the launch
// restored from, its flush statistics and its result.
//
// The package imports neither the module root nor the launcher: the root
// calls it, and it calls only the layers below (engine, flush, peer,
// coordnet, policy, jobenv, uncoord).
package rank
