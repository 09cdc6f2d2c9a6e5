// Package nodeloss is a torture campaign for ckpt's promise about lost
// nodes and damaged data: a committed checkpoint survives every failure
// within its redundancy's tolerance, restored bit-exactly; nothing partial
// is ever restored; and beyond the tolerance a restart falls back safely,
// to an older checkpoint, to the shared tier's copy, or to a start from
// scratch, never to wrong bytes and never into a hang.
//
// # Terms
//
// A pattern is one randomized trial, fully determined by its seed: a job
// of Nodes × RanksPerNode ranks (rank r on node slot r % Nodes) commits
// one to three checkpoints of random content through the real engine on
// the in-process cluster (internal/cluster), flushes some of them to the
// shared tier, and then suffers faults: a random subset of nodes lost
// (their caches gone, their ranks relaunched on spare nodes with empty
// caches) and random single-byte corruptions of surviving caches' data
// files, parity files and manifests, and of the shared tier's objects and
// manifests. Then every rank restarts, and the outcome is compared with
// the oracle's expectation and every restored byte with what was written.
//
// The oracle (Expect) is a pure function written from the schemes'
// definitions, independent of internal/recovery's planner: per redundancy
// set, the members lost (node lost, or a data or parity file corrupt) may
// number at most the scheme's tolerance (SINGLE 0; PARTNER 1, a member or
// its partner but not both; XOR 1; RS K+M, M). Within it the newest
// checkpoint comes back from the caches (as they are, or rebuilt);
// beyond it the newest checkpoint still recoverable does, from the caches
// or from an intact shared copy, or, with none, the job starts from
// scratch. The sets themselves are placement.FormSets' (input of the
// engine, not what is under test), and each pattern checks that the
// committed manifest names the same sets.
//
// A campaign (Run) plays patterns with seeds Seed, Seed+1, ...; a failing
// pattern is reported with its seed, so that a campaign of one pattern
// from that seed replays it alone.
package nodeloss
