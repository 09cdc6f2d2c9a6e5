package manifest

import (
	"encoding/binary"
	"io"
	"sync"

	"github.com/zeebo/xxh3"
)

// ContentChunk is the chunk size of the content hash.
const ContentChunk = 1 << 20

// ContentHasher computes the hash the manifest records for a file's
// content: XXH3-128 of every ContentChunk-byte chunk (the last may be
// shorter), then XXH3-128 over those chunk hashes followed by the length as
// 8 little-endian bytes. Hashing whole chunks in one call runs at memory
// speed, where streaming XXH3 copies through a small internal buffer and
// runs at about half of it; restart verifies every byte, so this speed is
// what a restart costs. It implements io.Writer; it is not safe for
// concurrent use.
type ContentHasher struct {
	buf   []byte // the current partial chunk
	sums  []byte // chunk hashes so far
	total int64
}

// NewContentHasher returns an empty ContentHasher.
func NewContentHasher() *ContentHasher { return &ContentHasher{} }

// Write adds p to the content; it never fails.
func (h *ContentHasher) Write(p []byte) (int, error) {
	n := len(p)
	h.total += int64(n)
	if len(h.buf) > 0 {
		take := min(len(p), ContentChunk-len(h.buf))
		h.buf = append(h.buf, p[:take]...)
		p = p[take:]
		if len(h.buf) == ContentChunk {
			h.chunk(h.buf)
			h.buf = h.buf[:0]
		}
	}
	for len(p) >= ContentChunk { // whole chunks straight from the caller
		h.chunk(p[:ContentChunk])
		p = p[ContentChunk:]
	}
	if len(p) > 0 {
		h.buf = appendPartial(h.buf, p)
	}
	return n, nil
}

// appendPartial appends p to buf, a partial chunk that p does not
// complete. The buffer grows with the content, doubling up to one chunk,
// so a small file costs a buffer of about its size, not a chunk's.
func appendPartial(buf, p []byte) []byte {
	if need := len(buf) + len(p); need > cap(buf) {
		grown := make([]byte, len(buf), min(ContentChunk, max(need, 2*cap(buf), 512)))
		copy(grown, buf)
		buf = grown
	}
	return append(buf, p...)
}

func (h *ContentHasher) chunk(b []byte) {
	s := xxh3.Hash128(b).Bytes()
	h.sums = append(h.sums, s[:]...)
}

// Sum128 returns the hash of everything written so far; it does not change
// the state.
func (h *ContentHasher) Sum128() Hash {
	sums := h.sums
	if len(h.buf) > 0 {
		s := xxh3.Hash128(h.buf).Bytes()
		sums = append(sums[:len(sums):len(sums)], s[:]...)
	}
	sums = binary.LittleEndian.AppendUint64(sums[:len(sums):len(sums)], uint64(h.total))
	return fromUint128(xxh3.Hash128(sums))
}

// ContentHashBytes returns the content hash of b.
func ContentHashBytes(b []byte) Hash {
	h := NewContentHasher()
	h.Write(b)
	return h.Sum128()
}

// chunkBuffers holds HashContent's chunk-sized buffers between calls:
// hashing many small files (a verify, a commit of routed files) would
// otherwise allocate and zero a chunk per file and spend its time there.
var chunkBuffers = sync.Pool{New: func() any { b := make([]byte, ContentChunk); return &b }}

// HashContent reads r to EOF and returns its content hash and length: the
// one way to hash a stream whose hash a manifest records. On a read error
// it returns the error and the length read before it.
//
// It reads and hashes in two goroutines over a ring of up to four
// chunk-sized buffers, so that hashing a file costs about the slower of
// reading and hashing rather than their sum; each chunk is hashed in one
// call, straight from the buffer it was read into. The ring takes a buffer
// only when the reader is ahead of the hasher (a file of one chunk or
// less uses one), and its buffers come from and go back to chunkBuffers.
// When HashContent returns, it has finished reading r, so the caller may
// close r then.
func HashContent(r io.Reader) (Hash, int64, error) {
	const depth = 4
	type chunk struct {
		b   *[]byte
		n   int
		err error
	}
	free := make(chan *[]byte, depth)
	full := make(chan chunk, depth)
	go func() {
		defer close(full)
		taken := 0
		for {
			var b *[]byte
			select {
			case b = <-free:
			default:
				if taken < depth {
					b = chunkBuffers.Get().(*[]byte)
					taken++
				} else {
					b = <-free
				}
			}
			n, err := io.ReadFull(r, *b)
			if n > 0 {
				full <- chunk{b: b, n: n}
			} else {
				free <- b
			}
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				return
			}
			if err != nil {
				full <- chunk{err: err}
				return
			}
		}
	}()
	// Every chunk but the last is whole (ReadFull), so hashing each as it
	// comes is the definition's chunking; Sum128 then appends the length.
	h := NewContentHasher()
	var err error
	for c := range full {
		if c.err != nil {
			err = c.err
			continue // the reader has stopped: close(full) follows
		}
		h.chunk((*c.b)[:c.n])
		h.total += int64(c.n)
		free <- c.b
	}
	// The reader has returned (full is closed), so every buffer it took
	// is in free.
	for len(free) > 0 {
		chunkBuffers.Put(<-free)
	}
	if err != nil {
		return Hash{}, h.total, err
	}
	return h.Sum128(), h.total, nil
}

// NewContentVerifyingReader returns a VerifyingReader over r expecting size
// bytes whose content hash (the hash the manifest records for files) is
// want. name identifies the content in error messages.
func NewContentVerifyingReader(r io.Reader, name string, size int64, want Hash) *VerifyingReader {
	v := newVerifyingReader(r, name, size, want)
	v.h = NewContentHasher()
	return v
}

// ContentHashParallel is ContentHashBytes computed by up to workers
// goroutines, each hashing every workers-th chunk: for content already in
// memory (a mapped file), where one core's hashing is the limit.
func ContentHashParallel(b []byte, workers int) Hash {
	chunks := (len(b) + ContentChunk - 1) / ContentChunk
	if workers < 2 || chunks < 2 {
		return ContentHashBytes(b)
	}
	sums := make([]byte, chunks*16, chunks*16+8)
	var wg sync.WaitGroup
	for w := range min(workers, chunks) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := w; c < chunks; c += workers {
				s := xxh3.Hash128(b[c*ContentChunk : min((c+1)*ContentChunk, len(b))]).Bytes()
				copy(sums[c*16:], s[:])
			}
		}()
	}
	wg.Wait()
	sums = binary.LittleEndian.AppendUint64(sums, uint64(len(b)))
	return fromUint128(xxh3.Hash128(sums))
}

// ChunkSum is the hash of one whole chunk of content (ContentChunk bytes,
// the last chunk of a file shorter), as the content hash records it: with
// the chunks' sums in order and the length, CombineChunkSums gives the
// content hash. Together they let a reader that meets a file's chunks out
// of order (a rebuild streaming a member's blocks) hash each chunk as it
// passes and never read the file again.
func ChunkSum(b []byte) Hash { return fromUint128(xxh3.Hash128(b)) }

// CombineChunkSums is the content hash of a file of size bytes whose
// chunks, in order, have the sums given (ChunkSum); there must be
// ceil(size / ContentChunk) of them.
func CombineChunkSums(sums []Hash, size int64) Hash {
	b := make([]byte, 0, len(sums)*HashSize+8)
	for _, s := range sums {
		b = append(b, s[:]...)
	}
	b = binary.LittleEndian.AppendUint64(b, uint64(size))
	return fromUint128(xxh3.Hash128(b))
}
