// Package engine is the data path of a rank's checkpoints: commit (files
// into the node's cache, parity across a redundancy set, the manifest
// last), restart (which checkpoint, then rebuild or fetch, then verify),
// the blocking flush to the shared tier, and cache retention.
//
// The engine is handed resolved configuration (Config): it never reads the
// environment and knows nothing of launchers, coordinators or the public
// API, which the module root layers on top of it. Its collective calls
// (Commit, Restart, Flush) talk to the other ranks only through Comm; every
// rank calls them in the same order, and each comment of the form
// "Round N" in commit.go, retain.go (Commit's round 4), restart.go,
// fetch.go and flush.go names one collective exchange: who sends what,
// and why. Restart's rounds 2 to 4
// repeat for each step of the planner it carries out (a candidate's
// check, a rebuild, a fetch).
//
// Terms:
//
//   - part: one rank's share of a checkpoint, its files (concatenated in
//     manifest order they are the rank's data) and its parity.
//   - set: the ranks, on distinct nodes (failure domains), whose data one
//     parity encoding protects; placement.FormSets chooses them.
//   - candidate: a checkpoint some node's cache or the shared tier holds a
//     manifest of, which restart may recover.
//   - epoch: counts a store's collective operations that open set
//     transports, so that two uses of the same set are told apart.
//
// Where objects live in a node's cache is package cachetier; on the
// shared tier, package sharedtier. Which candidate a restart uses and how
// is decided by the pure planner of internal/recovery (recovery.Decide),
// from an input every rank builds alike from what all ranks reported
// (select.go); Restart in restart.go is its driver.
package engine
