// Package transparent checkpoints unmodified programs: each rank of a
// job is a process tree that knows nothing of ckpt, and a supervisor (one
// per rank, itself a rank of ckpt's job runtime) saves it with CRIU
// (internal/criu) into ckpt's checkpoints, where its images get what API
// checkpoints get: the node cache, hashing, the job's redundancy across
// nodes, the manifest written last, the flushes, and a verified restart
// from the newest checkpoint the job can recover (docs/TRANSPARENT.md).
//
// # The supervisor's loop (Run)
//
// Every Tick, in lockstep with the other ranks:
//
//  1. All ranks exchange whether their program ended (Job.AllGather); when
//     every program has, each rank finishes. A program that fails ends
//     its rank with the program's status: the launcher relaunches the job.
//  2. Job.NeedCheckpoint(step), the job's interval policy (a fixed
//     interval, or Daly's from the measured checkpoint cost), decides
//     whether to checkpoint now; every rank gets the same answer.
//  3. A checkpoint (Job.Checkpoint) is a consistent cut: every rank
//     freezes its tree (SIGSTOP to every process, until all are stopped)
//     and writes what the program printed so far into its output files;
//     the ranks agree that all are frozen before any is dumped; each dumps
//     its tree with CRIU, leaving it running; the ranks agree that all
//     are dumped before any resumes (a message sent after one rank's dump
//     must not reach a rank not yet dumped); then each resumes its tree
//     and makes the images (which CRIU wrote straight into the
//     checkpoint's directory in the node cache, inplace.go) and its Meta
//     the checkpoint's files, which the engine commits. The two agreements are DMTCP's global barriers
//     around a checkpoint (Cao et al. 2016, §II-B), over ckpt's
//     coordinator.
//
// After a failure the launcher relaunches every rank; each supervisor
// restarts from the checkpoint Job.Restart recovered (every byte checked
// against its hash), truncates its output files to where they ended at
// the checkpoint, and the files the program had open for writing to their
// sizes then (Meta.Files: CRIU refuses a file whose size changed), and has
// CRIU restore the tree as its child from the images where they are in
// the cache, with new pipes for its output in place of the old (CRIU's
// --inherit-fd). A supervisor starts by removing what a crashed one left
// in its scratch directory; a dump is never part of a committed
// checkpoint before every rank's dump succeeded.
//
// With Config.Net (ckpt run --transparent --netns: each node's ranks in
// its network namespace) the trees' established TCP connections are
// dumped and restored with them (CRIU's --tcp-established), and kept
// quiet across the ranks' one-by-one dumps and restores: each rank locks
// its tree's connections (package tcplock) once frozen, before the first
// agreement, and unlocks them after its dump; at a restart it locks the
// checkpoint's connections (Meta.Conns) before its restore and unlocks
// them once every rank agreed it restored its tree (reconnect).
//
// The process side (Processes: trees in PID namespaces of their own, the
// pipes, freezing) is Linux only; the loop itself runs against the Job,
// Runner and criu.Tool interfaces and is tested with fakes.
package transparent
