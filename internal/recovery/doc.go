// Package recovery decides where a restarted job gets its checkpoint from:
// which candidate, and whether its files are used from the node caches as
// they are, rebuilt from the redundancy of their sets, or fetched from the
// shared tier. It is pure: no I/O, no goroutines, no clock. The driver (the
// engine's Restart, or a tool that verifies checkpoints from outside a job)
// gathers what the tiers hold, calls Decide, carries out the Plan, and
// reports back what failed (Input.Failed); the same Input always gives the
// same Plan.
//
// # Terms
//
// A candidate is a checkpoint with a valid manifest in some node's cache of
// the job, or on the shared tier, or both. Its manifest lists the
// redundancy sets: groups of ranks that protect each other (SCR's
// redundancy descriptors, Moody et al., "Design, Modeling, and Evaluation
// of a Scalable Multi-level Checkpointing System", SC 2010). A scheme with
// tolerance M rebuilds up to M lost members of every set and no more:
// SINGLE keeps no redundancy (M = 0); PARTNER keeps a full copy of each
// member on the other member of its pair (M = 1); XOR keeps one parity
// shard per row, the XOR of the others, as RAID-5 does, and "withstands
// node failures as long as two or more nodes from the same set do not fail
// concurrently" (paper 001, Sato et al. SC 2012, §III) (M = 1 per set);
// RS K+M is a Reed–Solomon code, maximum distance separable, so any K of
// its K+M shards rebuild the rest (M per set). internal/redundancy lays the
// shards out rotated (RAID-5/6 style), so every member holds one shard of
// every row, data or parity: a member whose data or parity file is bad is
// lost as a whole, and a set is rebuildable exactly when it lost at most M
// members.
//
// A rank's cached copy is what the cache of the node the rank runs on now
// holds of its files: its data files and its parity file (Held).
//
// # Decision rules
//
// These are the rules of Store.Restart before the planner existed
// (gatherCandidates, tryRestore and rebuild in restart.go, fetch and
// reprotect in shared.go), so that wiring it in changed no decision; the
// skip reasons are worded anew.
//
// # Where it is called
//
// Engine.Restart (internal/engine, restart.go) drives it for a job's
// restart: every rank builds the same Input from what all ranks gathered
// (planInput in select.go), so that every rank gets the same Plan and
// joins the same collective rounds. VerifyCheckpoint (internal/inspect,
// behind ckpt verify) drives it for a checkpoint seen from outside a job.
// Neither compares lost members with a scheme's tolerance itself.
//
//  1. Candidates are tried newest first: by ID, descending, then by name; a
//     newer checkpoint only on the shared tier is therefore chosen over an
//     older one intact in the caches.
//  2. A candidate written by a job of another number of ranks is skipped
//     without trying either tier.
//  3. For each candidate the caches are tried first (if some node of the
//     job holds a valid manifest of it), then the shared tier (if it holds
//     the manifest); if neither gives the checkpoint back, the next older
//     candidate is tried.
//  4. The caches are checked lazily: if the next decision needs a
//     candidate's holdings and they are unknown, the plan is Verify, so
//     that older checkpoints are not read when a newer one will do.
//  5. A rank's cached copy is intact only if its data files and its parity
//     are all intact in the cache of the node it runs on now; a rank whose
//     node was lost, or that moved to another node, or whose data or parity
//     is corrupt or missing is lost (even if only its parity is bad: the
//     member is rebuilt whole, data and parity).
//  6. If every rank is intact the cache is used as it is (UseCache).
//  7. Else, if every set lost at most M members, the lost members are
//     rebuilt from their sets' survivors onto the nodes their ranks run on
//     now (Rebuild); the sets are independent, so several sets may rebuild
//     at once.
//  8. Else the caches fail for this candidate, naming the first set (in set
//     order) that lost more than M members, its lost ranks and what each
//     lacks.
//  9. A fetch from the shared tier fetches every rank, even ranks whose
//     cached copy is intact, verifies every file and then encodes the
//     parity again (Reprotect) when the scheme has parity (M > 0).
//  10. A shared copy that is known (checked beforehand) to lack a rank's
//     object or to hold it corrupt is not fetched; an unchecked one is
//     tried, and the fetch finds out.
//  11. Whatever the source, the manifest is written back into the cache of
//     every node of the job that lacks a valid copy (WriteManifest).
//  12. An attempt that fails while the driver carries it out (Input.Failed)
//     rules out that tier for that candidate; the plan moves on to the
//     next option, and the failure becomes part of the skip reason.
//
// # Obligations of the driver
//
//  1. Offer every candidate of the caches and of the shared tier; fill
//     Checkpoint.Manifests from what every node of the job reported.
//  2. On Verify, have every rank check its data and parity files of that
//     checkpoint in its node's cache against the manifest's hashes, fill
//     Held for every rank, and call Decide again.
//  3. On UseCache, Rebuild or Fetch, carry the plan out on every rank,
//     verify every rebuilt or fetched file, write the manifest to the
//     nodes of WriteManifest, and agree on the outcome; on failure append
//     a Failure and call Decide again.
//  4. On None, fail the restart with Plan.Why.
//
// A tool that verifies a checkpoint from outside a job (VerifyCheckpoint in
// internal/inspect) is a driver too: it passes the checkpoint's own layout
// as the job (Input.Nodes = Checkpoint.Nodes), checks every rank's files in
// the cache of the node that wrote them and every shared object
// beforehand, and reads the answer from one Decide: UseCache, Rebuild or
// Fetch (with Plan.CacheWhy saying why not from the caches), or None with
// the reason in Skipped.
package recovery
