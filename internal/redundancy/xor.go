package redundancy

import "crypto/subtle"

// xorCodec is the m = 1 codec: the parity shard is the XOR of the k data
// shards, so any one missing shard is the XOR of the other k.
type xorCodec struct{ k int }

var _ Codec = xorCodec{}

func (c xorCodec) DataShards() int   { return c.k }
func (c xorCodec) ParityShards() int { return 1 }

func (c xorCodec) Encode(data, parity [][]byte) error {
	size, err := checkEncode(c.k, 1, data, parity)
	if err != nil || size < 0 {
		return err
	}
	xorInto(parity[0], data)
	return nil
}

func (c xorCodec) Reconstruct(shards [][]byte, present []bool) error {
	_, wanted, err := checkReconstruct(c.k, 1, shards, present)
	if err != nil || wanted == 0 {
		return err
	}
	// k of k+1 are present (checkReconstruct), so exactly one is missing
	// and it is the wanted one.
	var dst []byte
	src := make([][]byte, 0, c.k)
	for i, s := range shards {
		if present[i] {
			src = append(src, s)
		} else {
			dst = s
		}
	}
	xorInto(dst, src)
	return nil
}

// xorSpan is how many bytes of every source xorInto combines before moving
// on: small enough that the destination span stays in L1/L2 cache while all
// sources stream through it once.
const xorSpan = 16 << 10

// xorInto sets dst to the XOR of srcs (all of len(dst); at least one).
func xorInto(dst []byte, srcs [][]byte) {
	if len(srcs) == 1 {
		copy(dst, srcs[0])
		return
	}
	for off := 0; off < len(dst); off += xorSpan {
		end := min(off+xorSpan, len(dst))
		d := dst[off:end]
		subtle.XORBytes(d, srcs[0][off:end], srcs[1][off:end])
		for _, s := range srcs[2:] {
			subtle.XORBytes(d, d, s[off:end])
		}
	}
}
