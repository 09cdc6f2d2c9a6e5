// Package himeno is the Himeno benchmark distributed over the ranks of a
// job: the application of paper 001, written against the small Comm
// interface the job runtime provides.
//
// # The algorithm
//
// Himeno solves Poisson's equation on a 3-D grid with Jacobi iteration and
// the 19-point stencil of the original benchmark (himenoBMTxps.c). It keeps
// the original's arrays (p, the coefficients a[4], b[3], c[3], bnd, wrk1,
// and wrk2 for the new values), its initialisation (a = 1, 1, 1, 1/6; b =
// 0; c = 1; bnd = 1; wrk1 = 0; p[i][j][k] = k²/(kmax-1)²), omega = 0.8, and
// its float32 arithmetic; after the same number of iterations p is
// bit-identical to the C program's. Config gives the grid as the original's
// array extents (S is 65×65×129; imax is one less); the inner (I-3)×(J-3)×
// (K-3) points are updated, each for 34 floating-point operations, which is
// how Config.MFLOPS counts.
//
// gosa, the residual the original prints, is the sum of ss² over the inner
// points. Each rank sums each of its i-planes in float64 (ss² of a float32
// is exact in float64) and the per-plane sums are added in global plane
// order, so gosa is the same bits for any number of ranks. Every product in
// the sweep is converted to float32 explicitly, which forbids the compiler
// to fuse it into a multiply-add: results are the same on every platform.
//
// # Decomposition
//
// The inner i-planes 1 … imax-2 are split into contiguous slabs, one per
// rank, the first (imax-2) mod size ranks taking one plane more. A rank
// keeps its slab plus one halo plane on each side (on the first and last
// rank the halo is the grid's fixed face). Each Step:
//
//  1. exchanges halos with both neighbours through Send and Recv: ranks pair
//     up (0,1), (2,3), … and then (1,2), (3,4), …, the left rank of a pair
//     sending first, so the exchange is free of deadlock even if Send waits
//     for the Recv; only a plane's inner rows travel, tagged with the
//     iteration number, so a neighbour at another iteration is an error;
//  2. sweeps its slab into wrk2;
//  3. all-gathers the per-plane gosa sums and adds them in plane order;
//  4. swaps p and wrk2 (the original copies wrk2 back; the points the sweep
//     never writes are equal in both).
//
// Checksum is collective and does not depend on the number of ranks either:
// it hashes every i-plane of p separately and hashes those hashes in global
// plane order.
//
// # What is checkpointed, and why
//
// A rank's state (WriteTo, MarshalBinary) is what a fresh solver needs to
// continue bit-identically, and no more: the iteration count and the inner
// points of the planes the rank updates. The coefficient arrays, the faces
// and bnd never change and New rebuilds them; the halo planes are received
// at the start of the next Step before anything reads them; wrk2 is scratch
// between steps. So a rank saves one array of its fourteen. A header names
// the grid size, the rank, the number of ranks, the slab and the iteration,
// and a CRC-32C covers everything: a state of another rank, size or grid is
// rejected with ErrMismatch, a damaged one with ErrCorrupt, and a rejected
// state leaves the solver unchanged. A state restores only into the same
// decomposition: restarting on a different number of ranks would need a
// redistribution of the planes, which this package does not do.
//
// All ranks must save at the same iteration, between Steps; no message is in
// flight then, because every halo sent in a Step is received in it.
package himeno
