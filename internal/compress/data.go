package compress

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
)

// The kinds of state compression is measured and tested on (ckpt bench
// compress, the tests of this package and of the engine): each seeded,
// so that a failure or a figure repeats.

// RandomBytes is n bytes that do not compress.
func RandomBytes(n int, seed byte) []byte {
	b := make([]byte, n)
	rand.NewChaCha8([32]byte{seed}).Read(b)
	return b
}

// ZeroHeavy is n bytes of what a program's state often is: mostly zero
// pages, with some repeated structures between them.
func ZeroHeavy(n int) []byte {
	b := make([]byte, n)
	for i := 0; i+4096 <= n; i += 4096 * 4 {
		copy(b[i:], bytes.Repeat([]byte("heap object 0123456789 "), 100))
	}
	return b
}

// Floats32 is n bytes (whole float32s, little-endian) of a smooth field
// in [0, 1] with uniform noise of amplitude noise added, like a solver's
// array: with noise 1e-7 only the low mantissa bits vary (a shuffle makes
// it compress by more than half, which plain codecs cannot), with 1e-4
// a shuffle saves about a fifth.
func Floats32(n int, noise float64) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, 0, n)
	for i := 0; len(b)+4 <= n; i++ {
		v := float32(i%129*i%129)/float32(128*128) + float32(r.Float64()*noise)
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b
}

// Floats64 is Floats32's kind of field as float64s.
func Floats64(n int) []byte {
	r := rand.New(rand.NewPCG(3, 4))
	b := make([]byte, 0, n)
	for i := 0; len(b)+8 <= n; i++ {
		v := float64(i%257) / 256 * (1 + r.Float64()*1e-12)
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
	}
	return b
}
