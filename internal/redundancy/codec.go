package redundancy

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/klauspost/reedsolomon"
)

// Codec computes the parity of one row and rebuilds its lost shards. It
// works on one block of a row at a time: every shard passed in one call has
// the same length. Shards are numbered as in Layout: 0..k−1 data, k..n−1
// parity.
//
// Implementations are stateless after construction and safe for concurrent
// use; they never retain the slices passed in. NewCodec chooses the one for
// a (k, m) pair.
type Codec interface {
	DataShards() int   // k
	ParityShards() int // m

	// Encode computes parity from k data shards into the m parity slices.
	// A nil parity[p] is not wanted and is skipped, so that each parity
	// holder computes only its own shard; the others are overwritten.
	// len(data) must be k and len(parity) m.
	Encode(data [][]byte, parity [][]byte) error

	// Reconstruct fills missing shards of a row of n shards. present[i]
	// says shards[i] holds valid content. A missing shard is rebuilt if
	// shards[i] is non-nil (the caller's buffer, of the common length) and
	// left alone if it is nil. Returns an error wrapping ErrTooManyLost if
	// fewer than k shards are present; the wanted buffers are then not
	// touched.
	Reconstruct(shards [][]byte, present []bool) error
}

// Errors of the codecs and of Rebuild.
var (
	// ErrTooManyLost: more than m shards of a row, or more than m members
	// of a set, are missing; nothing can be rebuilt.
	ErrTooManyLost = errors.New("redundancy: too many shards lost to rebuild")
	// ErrShardSize: the shards of one call differ in length or count.
	ErrShardSize = errors.New("redundancy: shards of a row differ in length or count")
)

// NewCodec returns the codec for rows of k data and m parity shards; it is
// the one place where the kind of arithmetic is chosen:
//
//   - m = 0 (single): no parity; Reconstruct fails if anything is missing.
//   - m = 1 (partner, xor:S, rs:K+1): parity is the XOR of the data shards.
//     For k = 1 (partner) it is a copy (xorCodec); otherwise it is computed
//     by klauspost/reedsolomon's fast one-parity path
//     (WithFastOneParityMatrix), bit-identical to crypto/subtle.XORBytes and
//     about twice as fast where GFNI/AVX-512 exist.
//   - m ≥ 2 (rs:K+M): Reed–Solomon over GF(2^8) by klauspost/reedsolomon,
//     with its default (Vandermonde-derived) matrix; k+m ≤ MaxRSShard.
//
// Codecs are cached: every call with the same (k, m) returns the same value.
func NewCodec(k, m int) (Codec, error) {
	switch {
	case k < 1 || m < 0:
		return nil, fmt.Errorf("redundancy: a codec needs k ≥ 1 data and m ≥ 0 parity shards, got %d+%d", k, m)
	case m == 0:
		return noParity{k: k}, nil
	case m == 1 && k == 1:
		return xorCodec{k: k}, nil // partner: the parity is a copy
	case k+m > MaxRSShard:
		return nil, fmt.Errorf("redundancy: Reed–Solomon needs k+m ≤ %d shards, got %d+%d", MaxRSShard, k, m)
	}
	key := [2]int{k, m}
	if c, ok := rsCache.Load(key); ok {
		return c.(Codec), nil
	}
	opts := rsOptions
	if m == 1 {
		// XOR parity, computed by the library's fast one-parity path: the
		// same bytes as crypto/subtle.XORBytes (xorCodec; tests check it),
		// about twice as fast on machines with GFNI/AVX-512, since it
		// reads the k shards once instead of pairwise.
		opts = append(slices.Clone(rsOptions), reedsolomon.WithFastOneParityMatrix())
	}
	c, err := newRSCodec(k, m, opts...)
	if err != nil {
		return nil, err
	}
	got, _ := rsCache.LoadOrStore(key, c)
	return got.(Codec), nil
}

var rsCache sync.Map // [2]int{k, m} → *rsCodec

// checkEncode validates the arguments of Encode and returns the common
// length, or -1 if no parity is wanted.
func checkEncode(k, m int, data, parity [][]byte) (int, error) {
	if len(data) != k || len(parity) != m {
		return 0, fmt.Errorf("%w: encode needs %d data and %d parity shards, got %d and %d", ErrShardSize, k, m, len(data), len(parity))
	}
	size := len(data[0])
	for i, d := range data {
		if len(d) != size {
			return 0, fmt.Errorf("%w: data shard %d has %d bytes, shard 0 has %d", ErrShardSize, i, len(d), size)
		}
	}
	wanted := false
	for p, q := range parity {
		if q == nil {
			continue
		}
		wanted = true
		if len(q) != size {
			return 0, fmt.Errorf("%w: parity shard %d has %d bytes, data shards %d", ErrShardSize, p, len(q), size)
		}
	}
	if !wanted {
		return -1, nil
	}
	return size, nil
}

// checkReconstruct validates the arguments of Reconstruct and returns the
// common length and the number of wanted shards.
func checkReconstruct(k, m int, shards [][]byte, present []bool) (size, wanted int, err error) {
	n := k + m
	if len(shards) != n || len(present) != n {
		return 0, 0, fmt.Errorf("%w: reconstruct needs %d shards and flags, got %d and %d", ErrShardSize, n, len(shards), len(present))
	}
	size, have := -1, 0
	for i, s := range shards {
		if !present[i] && s == nil {
			continue
		}
		if present[i] {
			have++
		} else {
			wanted++
		}
		if size < 0 {
			size = len(s)
		} else if len(s) != size {
			return 0, 0, fmt.Errorf("%w: shard %d has %d bytes, others %d", ErrShardSize, i, len(s), size)
		}
	}
	if have < k {
		return 0, 0, fmt.Errorf("%w: %d of %d shards present, %d needed", ErrTooManyLost, have, n, k)
	}
	return size, wanted, nil
}

// noParity is the codec of single: nothing to compute, nothing to rebuild.
type noParity struct{ k int }

func (c noParity) DataShards() int   { return c.k }
func (c noParity) ParityShards() int { return 0 }

func (c noParity) Encode(data, parity [][]byte) error {
	_, err := checkEncode(c.k, 0, data, parity)
	return err
}

func (c noParity) Reconstruct(shards [][]byte, present []bool) error {
	_, _, err := checkReconstruct(c.k, 0, shards, present)
	return err
}

var _ Codec = noParity{}
