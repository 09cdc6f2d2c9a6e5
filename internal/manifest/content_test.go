package manifest

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
	"testing/iotest"

	"github.com/zeebo/xxh3"
)

// The content hash depends on the bytes only, never on how they were
// written; it is defined chunk by chunk (checked here by hand).
func TestContentHasherDefinition(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, size := range []int{0, 1, 1000, ContentChunk - 1, ContentChunk, ContentChunk + 1, 3*ContentChunk + 17, 9*ContentChunk + 5} {
		data := make([]byte, size)
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		// By hand: chunk hashes, then the length.
		var sums []byte
		for off := 0; off < size; off += ContentChunk {
			s := xxh3.Hash128(data[off:min(off+ContentChunk, size)]).Bytes()
			sums = append(sums, s[:]...)
		}
		sums = append(sums, byte(size), byte(size>>8), byte(size>>16), byte(size>>24), 0, 0, 0, 0)
		want := fromUint128(xxh3.Hash128(sums))
		if got := ContentHashBytes(data); got != want {
			t.Errorf("size %d: %s, by hand %s", size, got, want)
		}
		// Any split into writes gives the same.
		h := NewContentHasher()
		for rest := data; len(rest) > 0; {
			n := min(len(rest), 1+rng.IntN(3*ContentChunk/2))
			h.Write(rest[:n])
			rest = rest[n:]
		}
		if h.Sum128() != want {
			t.Errorf("size %d: split writes give another hash", size)
		}
		for _, w := range []int{1, 2, 3, 8} {
			if got := ContentHashParallel(data, w); got != want {
				t.Errorf("size %d: ContentHashParallel(%d workers) = %s, want %s", size, w, got, want)
			}
		}
		if got, n, err := HashContent(bytes.NewReader(data)); err != nil || n != int64(size) || got != want {
			t.Errorf("size %d: HashContent = %s, %d, %v", size, got, n, err)
		}
	}
	// A zero chunk appended changes the hash (the length is part of it).
	if ContentHashBytes(make([]byte, ContentChunk)) == ContentHashBytes(make([]byte, 2*ContentChunk)) {
		t.Error("zero chunks of different counts hash alike")
	}
}

// HashContent reads through any reader, and on a read error returns the
// error and the length read before it.
func TestHashContentReaders(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789"), 700_000) // over six chunks
	want := ContentHashBytes(data)
	for name, r := range map[string]io.Reader{
		"half":    iotest.HalfReader(bytes.NewReader(data)),
		"dataerr": iotest.DataErrReader(bytes.NewReader(data)),
		"onebyte": iotest.OneByteReader(bytes.NewReader(data[:3*ContentChunk/2])),
	} {
		size := int64(len(data))
		wantHash := want
		if name == "onebyte" {
			size, wantHash = 3*ContentChunk/2, ContentHashBytes(data[:3*ContentChunk/2])
		}
		if h, n, err := HashContent(r); err != nil || n != size || h != wantHash {
			t.Errorf("%s: HashContent = %s, %d, %v; want %s, %d", name, h, n, err, wantHash, size)
		}
	}
	boom := errors.New("boom")
	for _, at := range []int{0, 10, ContentChunk, 5*ContentChunk + 3} {
		r := io.MultiReader(bytes.NewReader(data[:at]), iotest.ErrReader(boom))
		if _, n, err := HashContent(r); !errors.Is(err, boom) || n != int64(at) {
			t.Errorf("failing after %d bytes: HashContent = %d, %v", at, n, err)
		}
	}
}

func TestContentVerifyingReader(t *testing.T) {
	data := bytes.Repeat([]byte("checkpoint"), 300000)
	want := ContentHashBytes(data)
	if _, err := io.Copy(io.Discard, NewContentVerifyingReader(bytes.NewReader(data), "f", int64(len(data)), want)); err != nil {
		t.Fatalf("intact content: %v", err)
	}
	bad := bytes.Clone(data)
	bad[len(bad)/3] ^= 1
	_, err := io.Copy(io.Discard, NewContentVerifyingReader(bytes.NewReader(bad), "f", int64(len(bad)), want))
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("flipped byte: %v", err)
	}
}

// ChunkSum and CombineChunkSums give the content hash from the chunks in
// any order of hashing, and a changed byte changes it.
func TestCombineChunkSums(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, size := range []int{0, 1, ContentChunk, ContentChunk + 1, 3*ContentChunk + 17} {
		data := make([]byte, size)
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		n := (size + ContentChunk - 1) / ContentChunk
		sums := make([]Hash, n)
		for _, c := range rng.Perm(n) { // out of order
			sums[c] = ChunkSum(data[c*ContentChunk : min((c+1)*ContentChunk, size)])
		}
		want := ContentHashBytes(data)
		if got := CombineChunkSums(sums, int64(size)); got != want {
			t.Errorf("size %d: %s, want %s", size, got, want)
		}
		if size > 0 {
			data[size/2] ^= 1
			sums[size/2/ContentChunk] = ChunkSum(data[size/2/ContentChunk*ContentChunk : min((size/2/ContentChunk+1)*ContentChunk, size)])
			if CombineChunkSums(sums, int64(size)) == want {
				t.Errorf("size %d: a flipped byte kept the hash", size)
			}
		}
	}
}
