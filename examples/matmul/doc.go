// Package matmul is a distributed dense matrix multiplication C = A·B of
// n×n float64 matrices, a second workload for the job runtime, written
// against the small Comm interface it provides.
//
// # The algorithm
//
// A and B are generated from a seed: each element is a function of the
// seed and its position (splitmix64, mapped to [-1, 1)), so every rank
// makes its own part without communication, and any rank count makes the
// same matrices.
//
// The ranks form a ring. Rank r owns a block of rows of A and of C (the
// rows split as evenly as possible, the first n mod size ranks taking one
// more), and starts with block r of the columns of B, the columns split the
// same way. The multiplication runs in size stages: in stage t rank r
// holds column block (r+t) mod size of B and computes that block of its
// rows of C completely, each element one dot product of a row of A and a
// column of B. Then every rank passes its block of B to rank r-1 and
// receives the next one from rank r+1 (rank 0 receives first and the
// others send first, which is free of deadlock even if Send waits for the
// Recv). After size stages every block of B has visited every rank and C is
// complete. Each stage is split into Config.Panels steps, each computing a
// panel of the block's columns, so the job can checkpoint inside a stage
// and a one-rank run has points to checkpoint at too.
//
// Every element of C is summed in k order from 0 to n-1 in float64, in one
// step, whichever rank computes it, so C is bit-identical for any number of
// ranks, panels and restarts. (A ring that circulates row blocks of B
// instead and accumulates partial products would sum each element's
// blocks in a rotated order that depends on the rank and the rank count.)
// Every product is converted to float64 explicitly, which forbids the
// compiler to fuse it into a multiply-add: results are the same on every
// platform. Checksum is collective and does not depend on the number of
// ranks: it hashes every row of C and hashes those hashes in row order.
//
// # What is checkpointed, and why
//
// A rank's state (WriteTo, MarshalBinary), taken between Steps, is the
// step count, the rank's rows of C and the block of B it holds. A is input:
// New regenerates it, as a real application would reread its input. The
// held block of B is kept although the generator could remake it, because
// it stands for data that arrived from another rank and that a real
// application could not rebuild locally. C is kept whole; the columns not
// yet computed are zero. A header names n, the seed, the panels, the rank,
// the number of ranks and the step, and a CRC-32C covers everything: a
// state of another configuration, rank or size is rejected with
// ErrMismatch, a damaged one with ErrCorrupt, and a rejected state leaves
// the solver unchanged. A state restores only into the same number of ranks.
//
// All ranks must save after the same number of Steps; no message is in
// flight then, because each Step receives every block sent in it.
package matmul
