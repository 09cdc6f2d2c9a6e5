// Package flush is the flushing subsystem: which checkpoints go from the
// node-local caches to the shared tier, how they get there, and what that
// cost.
//
//   - Scheduler decides (every K-th checkpoint, or the K the two-level
//     Markov model of Sato et al. 2012 chooses from what the job measured;
//     skip or wait while a non-blocking flush still runs) and keeps the
//     statistics. It is pure: a fake clock drives it in tests.
//   - Transfer is the one lifecycle of a flush (start, state, wait, cancel,
//     resume: the model of AXL, SCR's transfer library, Moody et al.
//     2010). Its two implementations are in package flush/transfer: the
//     blocking copy by the ranks themselves (engine.Engine.Flush) and the
//     staged pull by a staging server (internal/stage).
//   - Tracker follows the announced non-blocking flushes to their end.
//   - Stats are the statistics: the public package flushstats's type (so
//     that ckpt.FlushStats, jobenv.FlushStats and Stats are one), with its
//     one JSON form, the wire form of jobenv.KeyFlush and
//     jobenv.VarFlushPrior.
//
// The package imports neither the engine nor the staging service (jobenv,
// below them, uses its busy policies); flush/transfer does. Package rank
// drives it from a Job's checkpoints: the pooled inputs, the collective
// skip vote, the transfers.
package flush
