// Package redundancy protects node-local checkpoints across the nodes of a
// redundancy set (SCR's redset/ER): every member computes parity over the
// set, streaming, and the survivors of a failure rebuild the lost members'
// files bit for bit.
//
// # Terms
//
//   - Set: n members on distinct nodes (failure domains) that protect each
//     other. Members are numbered 0..n−1 within the set.
//   - Member: one rank's (or node's) share of the set: its data, a byte
//     string of size B_i (its checkpoint files, concatenated by the caller),
//     and its parity file.
//   - Scheme: (k data, m parity) shards per row, n = k+m: single 1+0,
//     partner 1+1, xor:S (S−1)+1, rs:K+M. One description, one code path:
//     the kind is a name, only k and m matter.
//   - Chunk: member i's data is cut into k chunks of C = ceil(B/k) bytes,
//     B = max B_i over the set; chunk c covers bytes [c·C, (c+1)·C), and
//     what lies beyond B_i is virtual zero padding, never stored or sent.
//   - Row: the unit of coding. There are n rows; each holds k data shards
//     (chunks of k different members) and m parity shards, and every member
//     holds exactly one shard of every row.
//   - Shard: one of the n pieces of a row, numbered 0..n−1: shards 0..k−1
//     are data (chunk number = shard number), shards k..n−1 parity.
//   - Block: the part of a shard (at most the block size, 1 MiB by default)
//     that moves in one message; everything streams block by block.
//   - Parity file: a member's m parity shards, concatenated in order of p,
//     m·C bytes. Storage overhead is m/k.
//
// # Layout
//
// Rotated, like RAID-5/6: in row r the member holding shard s is
// (r+s) mod n. So the data members are (r+j) mod n, each giving its chunk
// j = (member−r) mod n, and the parity holders (r+k+p) mod n for parity
// shard p. Each member is a data member in k rows and a parity holder in
// m rows, and no two shards of a row are on one member, so losing any m
// members loses at most m shards of every row. xor:4 (k=3, m=1) and rs:2+2;
// Dc is the member's chunk c, Pp parity shard p of the row:
//
//	xor:4  row   m0   m1   m2   m3        rs:2+2  row   m0   m1   m2   m3
//	         0   D0   D1   D2   P0                  0   D0   D1   P0   P1
//	         1   P0   D0   D1   D2                  1   P1   D0   D1   P0
//	         2   D2   P0   D0   D1                  2   P0   P1   D0   D1
//	         3   D1   D2   P0   D0                  3   D1   P0   P1   D0
//
// Member 0 of xor:4 holds as parity the XOR of chunk 0 of member 1, chunk 1
// of member 2 and chunk 2 of member 3 (row 1). PARTNER (n=2, k=1, m=1)
// degenerates as it should: C = B, row 0 is member 0's data with its
// parity (a copy) on member 1, row 1 the other way round.
//
// # Codecs
//
// NewCodec(k, m) is the only place where arithmetic is chosen: no parity
// for m = 0, XOR (crypto/subtle.XORBytes; a copy when k = 1) for m = 1, and
// Reed–Solomon over GF(2^8) (klauspost/reedsolomon) for m ≥ 2. XOR is
// bit-identical to Reed–Solomon with a one-row XOR matrix, so rs:K+1 shares
// it.
//
// # Streaming
//
// Encode and Rebuild are run by every member of the set at once, each
// through its own Transport endpoint. They walk one global order of steps
// that every member computes from the Layout; each step sends blocks from
// some members to one member. Because messages between two members are
// FIFO and every member takes the steps in the same order, the exchange
// cannot deadlock with any buffering of at least one message per pair.
// Messages are tagged (operation, shard, row, block) and a mismatch is an
// error, so a disagreement between members surfaces as an error, not as
// wrong parity. Memory per member is about (k+2) blocks for Encode and
// k+4 for Rebuild (whose stages keep 4 blocks in flight: a survivor reads
// ahead of its sends, a replacement decodes ahead of its writes), plus the
// transport's bounded queues, never a chunk.
//
// Encode makes m passes over the data, one per parity shard p (so each
// parity file is written in order to a plain io.Writer): for each block and
// row, the k data members send their block to the holder of parity p,
// which computes only that shard. Rebuild: each lost member x needs its
// shard t of every row, t = 0..n−1 (its data chunks, then its parity
// shards, in file order), found in row (x−t) mod n; the k survivors with
// the smallest shard numbers in that row send it their shard, block by
// block, and x reconstructs and writes. Losing more than m members is
// refused up front with ErrTooManyLost.
//
// # Obligations of the driver
//
// The caller that runs a member (the checkpoint runtime, or inproc.Run in
// tests) must:
//
//  1. Form the set and its Layout identically on every member, with the
//     same options (block size) everywhere.
//  2. Give every member the same maxSize, the largest data size in the set
//     (from the members' manifests), since chunk size and padding derive
//     from it.
//  3. Call Encode (or Rebuild) on every member of the set concurrently, each
//     with its own endpoint; a member that does not take part stalls the
//     others until their context ends.
//  4. Close the member's endpoint when Encode or Rebuild returns, at least
//     when it fails: peers then fail with ErrPeerClosed instead of waiting
//     for messages that will not come. Graceful close lets peers still
//     receive what was sent.
//  5. Treat the encode as done only when every member returned nil (agree
//     on it, e.g. with a barrier that carries the outcome); a member's
//     parity file is meaningless if any member failed.
//  6. For Rebuild, agree on the lost members and give each replacement its
//     member's original size (from the manifest), then verify the rebuilt
//     files against the manifest's checksums: Rebuild checks only that
//     padding rebuilt as zeros (ErrInconsistent).
package redundancy
