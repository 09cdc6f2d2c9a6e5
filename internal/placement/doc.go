// Package placement decides which ranks protect each other and, after a
// failure, where every rank's cached files are. It is pure: no I/O, no
// clocks, no randomness, and every result depends only on the arguments,
// never on their order.
//
// # Terms
//
// A Member is one rank of the job together with the node it runs on and an
// optional failure-domain label (rack, switch, power feed). The failure
// domain of a member is its Domain if set, else its Node: two members in the
// same failure domain may fail together. All members on one node must carry
// the same Domain label.
//
// A redundancy set is a group of ranks that compute parity across each
// other. A scheme with tolerance m (XOR m=1, RS m parity, PARTNER m=1,
// SINGLE m=0) survives the loss of up to m members of every set. Because
// members of a set are in distinct failure domains, the loss of one whole
// domain costs every set at most one member.
//
// # Set formation (FormSets)
//
// With a nominal set size s > 1 and N ranks, FormSets makes k = ⌊N/s⌋ sets
// whose sizes differ by at most one, so every set has at least s members and
// fewer than 2s (like SCR, the remainder is merged into the sets instead of
// forming a short set). With s = 1 every rank is its own set (SINGLE).
//
// Such sets exist exactly when at least s distinct failure domains exist and
// no failure domain holds more than k ranks: a set holds at most one rank of
// each domain, so a domain with more than k ranks cannot be spread over k
// sets, and more sets cannot be made without one smaller than s. Conversely,
// the construction below succeeds whenever the condition holds. When it does
// not, FormSets returns an *InfeasibleError naming the problem.
//
// Construction: sort members by rank, group them by failure domain (groups
// ordered by their smallest rank), lay the groups out one after another and
// deal the sequence round-robin into the k sets. A domain of c ≤ k ranks
// occupies c consecutive positions, which land in c different sets; the
// round-robin deal makes the sizes ⌈N/k⌉ or ⌊N/k⌋. Each set is returned in
// ascending rank order and the sets are ordered by their smallest rank. On a
// regular layout (p consecutive ranks per node) this yields SCR-like sets of
// ranks with the same local index on different nodes. The feasibility rule is
// checked in the tests against an exhaustive search of all partitions of
// small jobs.
//
// # After a failure (Replacement)
//
// A Failure names lost nodes and lost failure domains. Replacement takes the
// layout at checkpoint time and the layout of the restarted job (ranks keep
// their numbers but may run on other nodes) and says, per rank, whether its
// files are already in place, could be fetched from the surviving cache of
// its old node, or must be rebuilt. A node of the old layout that runs no
// rank of the new layout is unreachable and counts as lost; Unreachable
// computes that widened Failure. Whether a set with lost members can be
// rebuilt, and where a restart takes its checkpoint from, is decided by
// internal/recovery from what the caches actually hold.
//
// Sets formed for the old layout may place two members on one node of the new
// layout; form new sets with FormSets for the next checkpoint.
package placement
