// Package torture runs randomized fault campaigns against real jobs, in
// the spirit of Jepsen: a job of the examples runs under `ckpt run`,
// faults chosen by a seeded schedule hit it at random points, and after
// every recovery the state the job restored is compared, bit for bit
// (through the example's checksum), with a failure-free run's state at
// the same step.
//
// Terms:
//
//   - A Fault is what the schedule chose: a Kind (kill-rank, hang-stage,
//     corrupt-parity, ...), a target (a rank, a node, a staging server),
//     when (after how many committed checkpoints, then a delay) and, for
//     corruption, which bytes. Schedule is pure: a seed gives the same
//     faults in the same order on every machine.
//   - Damage is what a fault did to the job's checkpoints (node caches
//     lost, one rank's cached data unusable, the shared copy corrupted);
//     Judge says whether the job's redundancy tolerates it. Both are pure.
//   - A Tally is the account of a campaign: faults, recoveries by source,
//     the time each recovery took, wrong results, checkpoints lost. It is
//     fed events and knows nothing of processes.
//
// Run is the campaign's loop over a Runner, the process I/O: Procs starts
// `ckpt run` as a subprocess of the ckpt binary and injects faults with
// signals and file edits, and the network and disk faults inside a
// sandbox of network and mount namespaces per job (sandbox_linux.go);
// tests use fakes.
//
// The driver's obligations (what a Runner must do) are on the Runner and
// Job interfaces.
package torture
