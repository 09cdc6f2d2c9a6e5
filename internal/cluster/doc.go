// Package cluster is the in-process cluster harness of ckpt's tests, in
// the spirit of hashicorp/raft's testing.go: one type that makes the ranks
// of a job on simulated nodes, and helpers that do to it what happens to a
// real job (a node lost, an object corrupted, the network cut, the job
// relaunched). Tests of every package build their scenarios on it instead
// of wiring ranks by hand.
//
// # Terms
//
// A cluster has Config.Nodes node slots; rank r runs on slot r % Nodes.
// Each slot is held by a host, which has a cache (a temp directory, or
// memory) that the ranks on it share; node names are the hosts' names
// ("node0", ...; spares are "spare0", ...). The cluster also has one
// shared tier when Config.Shared is set.
//
// An incarnation is one launch of the job: a fresh localcomm.Network (the
// one in-process communicator) and, per rank, a Rank with its Comm, its
// node's cache and an engine.Engine over them. Relaunch starts the next
// incarnation over the caches that survived; a slot whose host was lost
// gets a spare host with an empty cache, as a launcher would allocate.
//
// # Faults
//
//   - LoseNode: the host crashes. Its ranks fail as a crash would (every
//     collective and every set transport of the incarnation fails instead
//     of waiting for them), its cache refuses every call from then on, and
//     its contents are gone.
//   - Corrupt, CorruptShared, Remove: bytes of a stored object change, or
//     objects disappear, between incarnations.
//   - Partition, Heal: the nodes on the two sides of a cut cannot reach
//     each other; the cut lasts across relaunches until Heal.
//
// Every wait is bounded by internal/testwait, so a scenario that would
// hang fails instead; everything the cluster opens is closed by
// t.Cleanup.
package cluster
