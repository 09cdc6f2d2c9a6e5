// Package sim is a discrete-event simulator of checkpointed jobs under
// failures, written to check the models of package model. It is pure: no
// I/O, no clock; its only randomness comes from the seed. Run simulates a
// Config in many independent replications, in parallel, and returns means
// with 95% confidence intervals. `ckpt simulate` is its front end.
//
// # Terms
//
// A job has Work seconds of computation (T_s), cut into intervals of
// Interval seconds of computation (the last one shorter when Work is not a
// multiple); every interval, the last included, ends with a checkpoint.
// Levels (model.Levels) are numbered from 1, the cheapest, to L, the most
// resilient: a failure of level i can only be recovered from a checkpoint
// of level ≥ i. Rates[i-1] is the rate of failures of level i, Cost and
// Restart the level's checkpoint and recovery times. The job's start counts
// as a level-L checkpoint.
//
// # Failures
//
// Each level's failures form a renewal process on the job's wall clock,
// independent of the other levels and of what the job is doing: they strike
// computation, checkpoint writes and recoveries alike. The times between
// two failures of a level are exponential with mean 1/rate (a Poisson
// process, the models' assumption) or Weibull of shape Dist.Shape with the
// same mean (scale mean/Γ(1+1/k)). Every process starts at the job's start
// as if a failure had just happened. A failure is instantly detected; a
// detection latency (Config.Detect) is added to every recovery attempt.
//
// # Strategies: the operational rules
//
// Coordinated, one level, is the setting of Daly's run-time model (000
// eq. 1, model.DalyRuntime): intervals of τ + δ, a failure loses the
// interval in progress (a checkpoint being written is not taken), the job
// recovers in R seconds from the last checkpoint, and a failure during a
// recovery starts the recovery again. These are exactly eq. 1's
// assumptions (Poisson failures that also strike checkpoints and restarts,
// no down time besides R, restarts retried until one succeeds), so eq. 1 is
// exact for this simulation except that it counts T_s/τ intervals of full
// length where the job has ⌈T_s/τ⌉, the last one shorter: a difference far
// below the statistical error for δ ≪ T_s, the condition 000 states.
//
// Coordinated, several levels, follows SPEC-markov §4.3 (Moody et al.):
//
//  1. The checkpoint after interval j has level max{l : B_l divides j},
//     B_1 = 1, B_{l+1} = B_l·(Counts[l-1] + 1).
//  2. A failure of level i during an interval rolls back to C, the most
//     recent checkpoint of level ≥ i, and recovers at the restart cost of
//     C's level, k.
//  3. A failure of level i2 during a recovery R_k restarts R_k if k = L or
//     i2 < k; otherwise the needed level becomes max(i2, k+1) and rule 2
//     applies again from the same point.
//
// L1ProtectedFirst (two levels) recovers a level-1 failure at cost r_1 even
// when C is a level-2 checkpoint (SPEC §4.4's variant).
//
// NonBlocking follows SPEC-markov §5 (001 §V): periods of n = Counts[0]+1
// segments, each computation then a blocking level-1 checkpoint (the
// period's last costs Cost[1], the blocking part of a level-2 checkpoint).
// The period's checkpoint is copied to level 2 in the background; the copy
// occupies the first m = ⌈ℓ_2/((1+α)t + c_1)⌉ segments of the next period
// (positionally: a re-executed segment is again incomplete), which compute
// (1+α)t instead of t. A level-1 failure recovers with r_1 and redoes the
// segment; any failure during that recovery counts as level 2 at the same
// place. A level-2 failure rolls back to the start of the current period,
// or of the previous one when the copy of its checkpoint was still in
// flight, and recovers with r_2, retried after any failure; the period
// then restarts with no copy in flight.
//
// Uncoordinated follows 003 §3.2, pessimistic receiver-based message
// logging: N processes (len(Dependents)) checkpoint independently every
// Interval of computation, which logging slows by (1 + LogOverhead).
// Failures of the whole application (Rates[0], 1/α of 003) each strike one
// process chosen uniformly. That process alone rolls back to its last
// checkpoint and recovers: detection, loading (Restart[0]), replaying its
// log (LogReplay), then re-executing its lost computation at plain speed
// (its messages come from the log), all of which a new failure of it
// starts again. The processes that depend on it (Dependents[n]; P(n) =
// 1 + len(Dependents[n]) in 003 eq. 12, so that φ = Σ P(n)/N²) stop at the
// failure and resume when it has caught up, that is, when its recovery
// ends; they keep what they had done, including the part of a checkpoint
// they were writing. Dependence is direct, as 003 defines P(n): a process
// that waits makes nobody wait. The job ends when its last process does;
// Result.ProcessSeconds is the mean over the processes, what 003's model
// describes.
//
// # Estimates
//
// A replication is one job. Run reports, per job, means over the
// replications and the half-widths of their 95% confidence intervals
// (Student's t). Efficiency is Work divided by the mean run time, ideal time
// over expected time as the Markov models define it, with its interval from
// the run time's by the delta method. For Coordinated and NonBlocking every
// replication satisfies Seconds = Work + Checkpoint + Restart + Lost.
//
// The Markov models give the long-run efficiency N·t/E[period]. A job of K
// whole periods has expected run time K·E[period] under the blocking model
// (every period starts at a level-L checkpoint) and E_R + (K−1)·E_N under
// the non-blocking one (its first period has no copy in flight).
//
// # Reproducibility and parallelism
//
// Replication r draws its failures, and the Uncoordinated targets, from its
// own math/rand/v2 PCG generator seeded from (seed, r) through SplitMix64,
// using the raw 64-bit output (inverse transform sampling; Lemire's method
// for targets), never rand.Rand's methods, whose algorithms may change.
// Workers take batches of consecutive replications; the statistics of each
// batch are merged in batch order. A seed therefore gives the same Result
// whatever the number of workers (GOMAXPROCS), with every Go release that
// keeps PCG's output and math.Log and math.Pow.
//
// # Speed
//
// The event loops allocate nothing and call no interface or closure; the
// workers share nothing but an atomic stop flag. Coordinated and
// NonBlocking count interval completions, failures and recoveries as
// events; Uncoordinated reads checkpoints off each process's position and
// counts failures and the waits they impose. docs/PERFORMANCE.md gives the
// figures.
package sim
