package manifest

import (
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"

	"github.com/zeebo/xxh3"
)

// Hash is the XXH3-128 digest of a file's content in canonical (big-endian)
// byte order, the order xxhsum -H2 prints. Its text form is 32 lowercase hex
// digits.
type Hash [16]byte

// HashSize is the length of a Hash in bytes.
const HashSize = 16

// ErrCorrupt is wrapped by every error that reports content not matching its
// recorded checksum or size: a manifest whose trailer does not match its body,
// or a file read through a VerifyingReader.
var ErrCorrupt = errors.New("corrupt")

// String returns the hash as 32 lowercase hex digits.
func (h Hash) String() string { return hex.EncodeToString(h[:]) }

// MarshalText implements encoding.TextMarshaler.
func (h Hash) MarshalText() ([]byte, error) {
	out := make([]byte, 2*HashSize)
	hex.Encode(out, h[:])
	return out, nil
}

// UnmarshalText implements encoding.TextUnmarshaler; it accepts exactly 32
// lowercase hex digits.
func (h *Hash) UnmarshalText(text []byte) error {
	v, err := ParseHash(string(text))
	if err != nil {
		return err
	}
	*h = v
	return nil
}

// ParseHash parses 32 lowercase hex digits.
func ParseHash(s string) (Hash, error) {
	var h Hash
	if len(s) != 2*HashSize {
		return h, fmt.Errorf("hash %q: want %d hex digits, got %d characters", clip(s), 2*HashSize, len(s))
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return h, fmt.Errorf("hash %q: character %d is not a lowercase hex digit", s, i+1)
		}
	}
	hex.Decode(h[:], []byte(s))
	return h, nil
}

func fromUint128(u xxh3.Uint128) Hash { return Hash(u.Bytes()) }

// HashBytes returns the hash of b.
func HashBytes(b []byte) Hash { return fromUint128(xxh3.Hash128(b)) }

// Hasher computes a Hash over a stream. It implements hash.Hash; Sum appends
// the canonical 16 bytes. The zero value is not ready: use NewHasher. A
// Hasher is not safe for concurrent use.
type Hasher struct{ h *xxh3.Hasher128 }

var _ hash.Hash = (*Hasher)(nil)

// NewHasher returns a Hasher for XXH3-128 with the default seed.
func NewHasher() *Hasher { return &Hasher{h: xxh3.New128()} }

// Write adds p to the running hash; it never fails.
func (h *Hasher) Write(p []byte) (int, error) { return h.h.Write(p) }

// WriteString adds s to the running hash; it never fails.
func (h *Hasher) WriteString(s string) (int, error) { return h.h.WriteString(s) }

// Sum appends the current hash to b; it does not change the state.
func (h *Hasher) Sum(b []byte) []byte {
	s := h.Sum128()
	return append(b, s[:]...)
}

// Sum128 returns the hash of everything written so far.
func (h *Hasher) Sum128() Hash { return fromUint128(h.h.Sum128()) }

// Reset clears the state.
func (h *Hasher) Reset() { h.h.Reset() }

// Size returns HashSize.
func (h *Hasher) Size() int { return HashSize }

// BlockSize returns the hash's preferred write granularity.
func (h *Hasher) BlockSize() int { return h.h.BlockSize() }

// VerifyingReader passes an io.Reader through unchanged while hashing it,
// and checks the content against an expected size and Hash:
//
//   - when exactly the expected size has been read, the hash is checked;
//   - if the source holds more than the expected size, or ends early, or the
//     hash does not match, Read returns an error wrapping ErrCorrupt;
//   - io.EOF is returned only after the full, matching content and the end
//     of the source.
//
// The Read call that detects corruption returns no bytes, so the last chunk
// of corrupt content is never delivered and io.ReadFull of the expected size
// reports the error too (io.ReadFull drops errors that come with the final
// bytes). Errors are sticky; other errors of the source are returned as they
// are. A caller that stops at the expected size has had the hash checked but
// has not learnt whether the source holds extra bytes; read to io.EOF (io.Copy
// does) to check that too. Everything read before an ErrCorrupt error belongs
// to corrupt content and must be discarded.
type VerifyingReader struct {
	r    io.Reader
	h    summer
	name string
	size int64
	want Hash
	n    int64
	err  error
	// checked is set once the hash of exactly size bytes has been compared.
	checked bool
}

// newVerifyingReader returns a VerifyingReader over r expecting size bytes
// whose plain XXH3-128 is want; NewContentVerifyingReader makes it check the
// content hash instead. (Files are verified against their content hash
// only; the plain hash is the manifest trailer's.)
func newVerifyingReader(r io.Reader, name string, size int64, want Hash) *VerifyingReader {
	v := &VerifyingReader{r: r, h: NewHasher(), name: name, size: size, want: want}
	if size < 0 {
		v.err = fmt.Errorf("%s: negative expected size %d", name, size)
	}
	return v
}

// Read implements io.Reader with the checks described on VerifyingReader.
func (v *VerifyingReader) Read(p []byte) (int, error) {
	if v.err != nil {
		return 0, v.err
	}
	n, err := v.r.Read(p)
	if n < 0 || n > len(p) {
		v.err = fmt.Errorf("%s: invalid read count %d from underlying reader", v.name, n)
		return 0, v.err
	}
	if int64(n) > v.size-v.n {
		v.err = fmt.Errorf("%s: %w: longer than the expected %d bytes", v.name, ErrCorrupt, v.size)
		return 0, v.err
	}
	v.h.Write(p[:n])
	v.n += int64(n)
	if v.n == v.size && !v.checked {
		v.checked = true
		if got := v.h.Sum128(); got != v.want {
			v.err = fmt.Errorf("%s: %w: content hash %s, want %s", v.name, ErrCorrupt, got, v.want)
			return 0, v.err
		}
	}
	switch {
	case err == io.EOF && v.n < v.size:
		v.err = fmt.Errorf("%s: %w: %d bytes, want %d", v.name, ErrCorrupt, v.n, v.size)
		return 0, v.err
	case err != nil:
		v.err = err
	}
	return n, err
}

// Verified reports whether exactly the expected bytes have been read and
// matched the hash; it does not know whether the source holds more.
func (v *VerifyingReader) Verified() bool {
	return v.checked && (v.err == nil || v.err == io.EOF)
}

// summer is what VerifyingReader hashes with: a Hasher or a ContentHasher.
type summer interface {
	io.Writer
	Sum128() Hash
}

// clip shortens long strings quoted in error messages.
func clip(s string) string {
	const max = 64
	if len(s) <= max {
		return s
	}
	return s[:max] + "…"
}
