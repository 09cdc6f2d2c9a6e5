package redundancy

import (
	"errors"
	"fmt"

	"github.com/klauspost/reedsolomon"
)

// rsCodec is the m ≥ 2 codec over klauspost/reedsolomon. One encoder per
// (k, m) is built once and shared (the library's encoders are safe for
// concurrent use and cache their inverted matrices).
type rsCodec struct {
	k, m int
	enc  reedsolomon.Encoder
}

var _ Codec = (*rsCodec)(nil)

// rsOptions are the options NewCodec uses; see BenchmarkRSOptions8x2x1MiB
// for the measurements behind them. Goroutines are limited to one: the members of a
// set already run in parallel, and one core per member is what the
// benchmarks measure. The matrix is the default one, so parity is the
// standard output of the library.
var rsOptions = []reedsolomon.Option{reedsolomon.WithMaxGoroutines(1)}

func newRSCodec(k, m int, opts ...reedsolomon.Option) (*rsCodec, error) {
	if len(opts) == 0 {
		opts = rsOptions
	}
	enc, err := reedsolomon.New(k, m, opts...)
	if err != nil {
		return nil, fmt.Errorf("redundancy: Reed–Solomon %d+%d: %w", k, m, err)
	}
	return &rsCodec{k: k, m: m, enc: enc}, nil
}

func (c *rsCodec) DataShards() int   { return c.k }
func (c *rsCodec) ParityShards() int { return c.m }

func (c *rsCodec) Encode(data, parity [][]byte) error {
	size, err := checkEncode(c.k, c.m, data, parity)
	if err != nil || size <= 0 {
		return err
	}
	shards := make([][]byte, c.k+c.m)
	copy(shards, data)
	all := true
	for p, q := range parity {
		all = all && q != nil
		shards[c.k+p] = q
	}
	if all {
		return c.wrap(c.enc.Encode(shards))
	}
	// Only some parity shards are wanted: compute just those rows of the
	// matrix. The library fills zero-length slices with capacity in place.
	required := make([]bool, c.k+c.m)
	for p, q := range parity {
		if q != nil {
			shards[c.k+p] = q[:0]
			required[c.k+p] = true
		}
	}
	return c.wrap(c.enc.ReconstructSome(shards, required))
}

func (c *rsCodec) Reconstruct(shards [][]byte, present []bool) error {
	size, wanted, err := checkReconstruct(c.k, c.m, shards, present)
	if err != nil || wanted == 0 || size == 0 {
		return err
	}
	in := make([][]byte, len(shards))
	required := make([]bool, len(shards))
	for i, s := range shards {
		switch {
		case present[i]:
			in[i] = s
		case s != nil:
			in[i] = s[:0]
			required[i] = true
		}
	}
	if err := c.wrap(c.enc.ReconstructSome(in, required)); err != nil {
		return err
	}
	for i, s := range shards {
		if required[i] && &in[i][0] != &s[0] {
			// The library allocated instead of using our buffer; it must
			// not, since the capacity was enough, but stay correct.
			copy(s, in[i])
		}
	}
	return nil
}

func (c *rsCodec) wrap(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, reedsolomon.ErrTooFewShards):
		return fmt.Errorf("%w: %w", ErrTooManyLost, err)
	case errors.Is(err, reedsolomon.ErrShardSize), errors.Is(err, reedsolomon.ErrShardNoData):
		return fmt.Errorf("%w: %w", ErrShardSize, err)
	}
	return fmt.Errorf("redundancy: Reed–Solomon %d+%d: %w", c.k, c.m, err)
}
