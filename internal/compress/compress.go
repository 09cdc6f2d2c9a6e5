// Package compress decides how a checkpoint file is stored, compressed or
// not, and does it: the one place that chooses from a sample of a file's
// first bytes whether compression pays, for the engine's data path (issue
// 17, "Fewer bytes") and for the transparent supervisor's CRIU images
// (issue 19, item 4).
//
// A file is stored in a Form: a codec (none, zstd at its fastest level, or
// s2) after an optional filter (a byte shuffle that transposes 4- or
// 8-byte lanes, so that the exponent bytes of a float array sit together
// and the codec finds their runs). The form is chosen from a sample: the
// sample is compressed each way, and the smallest result wins if it saves
// at least half of the sample (PaysBelow); random bytes save nothing, and
// are then stored as they are, having cost only the sample's compressions.
//
// The decision (Decide, Worth) is pure; NewWriter and NewReader stream a
// file through a form and back.
package compress

import (
	"fmt"
	"sync"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
)

// Codecs, as a manifest records them ("" for none).
const (
	Zstd = "zstd" // zstd at its fastest level
	S2   = "s2"   // s2 (Snappy's successor): faster, compresses less
)

// Filters, as a manifest records them ("" for none).
const (
	Shuffle4 = "shuffle4" // byte shuffle of 4-byte lanes (float32 arrays)
	Shuffle8 = "shuffle8" // byte shuffle of 8-byte lanes (float64 arrays)
)

// Form is how a file is stored: Codec after Filter. The zero Form is the
// file's bytes as they are.
type Form struct {
	Codec  string `json:"codec,omitempty"`
	Filter string `json:"filter,omitempty"`
}

// Compressed reports whether f changes the bytes.
func (f Form) Compressed() bool { return f.Codec != "" }

func (f Form) String() string {
	switch {
	case f.Codec == "":
		return "stored"
	case f.Filter == "":
		return f.Codec
	}
	return f.Filter + "+" + f.Codec
}

// Valid checks that f is a form this package reads: a known codec, and a
// filter only with a codec.
func (f Form) Valid() error {
	switch f.Codec {
	case "", Zstd, S2:
	default:
		return fmt.Errorf("unknown codec %q", clip(f.Codec))
	}
	switch f.Filter {
	case "":
	case Shuffle4, Shuffle8:
		if f.Codec == "" {
			return fmt.Errorf("filter %q without a codec", f.Filter)
		}
	default:
		return fmt.Errorf("unknown filter %q", clip(f.Filter))
	}
	return nil
}

func clip(s string) string {
	if len(s) > 32 {
		return s[:32] + "…"
	}
	return s
}

const (
	// SampleSize is how much of a file's beginning Decide looks at: enough
	// for a codec to find a float array's structure, little enough that
	// trying every form on random bytes costs well under the 5% of a
	// file's write time that issue 17 allows (a file ends its sample in
	// the time its first 128 KiB take to write, at most).
	SampleSize = 128 << 10
	// MinSize is the smallest file worth compressing: a few hundred bytes
	// of registers, or a small header, gain nothing that matters.
	MinSize = 64 << 10
	// PaysBelow is the compressed sample's size, as a fraction of the
	// sample, below which Decide compresses a file: half saved at least.
	// Measured (docs/PERFORMANCE.md, ckpt bench compress): floats a
	// shuffle shrinks by a fifth took 1.4 to 1.9 times as long to
	// checkpoint compressed on 2 cores, as the codec emits mostly
	// literals, slowly; state that halves is written faster compressed.
	PaysBelow = 0.5
	// ImagePaysBelow is ZstdPays's threshold for the images of a
	// transparent checkpoint, a tenth saved: it was chosen and measured
	// with them (issue 19), whose pages are mostly zero or random.
	ImagePaysBelow = 0.9
)

// Worth reports whether a file of size bytes whose sample compressed to
// compressed bytes should be stored compressed, compressed below the
// fraction below of the sample (size < 0: not known yet, at least the
// sample's length).
func Worth(sample []byte, compressed int, size int64, below float64) bool {
	if size < 0 {
		size = int64(len(sample))
	}
	return size >= MinSize && len(sample) > 0 && float64(compressed) < below*float64(len(sample))
}

// Decide chooses how to store a file from sample, its first bytes (all of
// them when size, the file's length, is at most len(sample); size < 0 when
// unknown). It tries each filter with s2, the cheapest codec, keeps the
// filter that shrinks the sample most (none unless a shuffle does
// clearly better), then compares zstd with s2 under that filter: zstd is taken
// when it stores at most zstdBelow of what s2 does, since it writes about
// half as fast. The zero Form unless compression is Worth it.
func Decide(sample []byte, size int64) Form {
	if size >= 0 && size < MinSize || len(sample) < 64 {
		return Form{}
	}
	buf := make([]byte, len(sample))
	dst := make([]byte, s2.MaxEncodedLen(len(sample)))
	if !promising(sample, buf, dst) {
		return Form{}
	}
	best, bestN := "", len(s2.Encode(dst, sample))
	for _, filter := range []string{Shuffle4, Shuffle8} {
		shuffle(buf, sample, lanes(filter))
		if n := len(s2.Encode(dst, buf)); n < bestN*15/16 { // a shuffle must clearly help
			best, bestN = filter, n
		}
	}
	in := sample
	if best != "" {
		shuffle(buf, sample, lanes(best))
		in = buf
	}
	form, n := Form{Codec: S2, Filter: best}, bestN
	if z := len(zstdEncoder().EncodeAll(in, dst[:0])); float64(z) <= zstdBelow*float64(bestN) {
		form, n = Form{Codec: Zstd, Filter: best}, z
	}
	if !Worth(sample, n, size, PaysBelow) {
		return Form{}
	}
	return form
}

// screenSize is the sample's prefix that screens it: random bytes, which
// no form shrinks, are told from the rest by s2 on this much alone, so
// that they cost a quarter of a full decision.
const screenSize = 32 << 10

// promising reports whether some filter lets s2 shrink sample's first
// screenSize bytes at all (by 1/32); buf and dst are scratch space.
func promising(sample, buf, dst []byte) bool {
	p := sample[:min(len(sample), screenSize)]
	limit := len(p) - len(p)/32
	if len(s2.Encode(dst, p)) < limit {
		return true
	}
	for _, filter := range []string{Shuffle4, Shuffle8} {
		shuffle(buf[:len(p)], p, lanes(filter))
		if len(s2.Encode(dst, buf[:len(p)])) < limit {
			return true
		}
	}
	return false
}

// zstdBelow is how much smaller than s2's zstd's output must be for
// Decide to choose zstd: on 2 cores shared by several ranks, s2's speed
// wins unless zstd stores about a third less.
const zstdBelow = 0.7

var (
	sampleEnc     *zstd.Encoder
	sampleEncOnce sync.Once
)

// zstdEncoder is the encoder of samples; EncodeAll may run concurrently.
func zstdEncoder() *zstd.Encoder {
	sampleEncOnce.Do(func() {
		var err error
		sampleEnc, err = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
		if err != nil {
			panic(err) // only for invalid options
		}
	})
	return sampleEnc
}

// ZstdPays reports whether zstd alone (the form of a transparent
// checkpoint's images) is Worth it on sample, for a file of size bytes.
func ZstdPays(sample []byte, size int64) bool {
	if size >= 0 && size < MinSize || len(sample) == 0 {
		return false
	}
	return Worth(sample, len(zstdEncoder().EncodeAll(sample, make([]byte, 0, len(sample)))), size, ImagePaysBelow)
}

// lanes is a shuffle filter's lane width, 0 for none.
func lanes(filter string) int {
	switch filter {
	case Shuffle4:
		return 4
	case Shuffle8:
		return 8
	}
	return 0
}
