package engine

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/ckpt/ckpt/internal/manifest"
	"github.com/ckpt/ckpt/storage"
)

// streamVerifier checks objects laid end to end as one stream (a rank's
// data files, or its parity) against the manifest, from blocks of the
// stream given at any offsets in any order: the blocks a survivor reads
// for a rebuild, in the rebuild's order (issue 17: one read serves the
// rebuild and the verification). The content hash is defined per chunk of
// manifest.ContentChunk bytes of each file, so a chunk that a block holds
// whole is hashed in place, and one that blocks hold in pieces (a block
// boundary or a file boundary within it) is put together in a buffer and
// hashed when complete; finish reads what no block held and compares each
// object's hash. Memory: one buffer per chunk begun and not complete,
// which for the rebuild's reads (each data chunk of the set read in
// order) is a few per chunk of the set, not per byte.
type streamVerifier struct {
	names  []string
	sizes  []int64
	hashes []manifest.Hash
	starts []int64 // stream offset of each object
	sums   [][]manifest.Hash
	done   [][]bool
	parts  map[[2]int]*pieced // (object, chunk) begun, not complete
	spare  [][]byte
}

// pieced is a chunk being put together from pieces.
type pieced struct {
	buf   []byte
	spans [][2]int // covered [from, to), sorted, disjoint
}

func newStreamVerifier(names []string, sizes []int64, hashes []manifest.Hash) *streamVerifier {
	v := &streamVerifier{names: names, sizes: sizes, hashes: hashes, parts: map[[2]int]*pieced{}}
	var at int64
	for _, size := range sizes {
		v.starts = append(v.starts, at)
		at += size
		n := (size + manifest.ContentChunk - 1) / manifest.ContentChunk
		v.sums = append(v.sums, make([]manifest.Hash, n))
		v.done = append(v.done, make([]bool, n))
	}
	return v
}

// add takes the stream's bytes b at offset off. A chunk already complete
// is not hashed again (a block read twice, for two lost members).
func (v *streamVerifier) add(off int64, b []byte) {
	end := off + int64(len(b))
	i := sort.Search(len(v.starts), func(i int) bool { return v.starts[i]+v.sizes[i] > off })
	for ; i < len(v.names) && v.starts[i] < end; i++ {
		lo := max(off, v.starts[i]) - v.starts[i] // within object i
		hi := min(end, v.starts[i]+v.sizes[i]) - v.starts[i]
		piece := b[v.starts[i]+lo-off : v.starts[i]+hi-off]
		for c := lo / manifest.ContentChunk; c*manifest.ContentChunk < hi; c++ {
			cs := c * manifest.ContentChunk
			ce := min(cs+manifest.ContentChunk, v.sizes[i])
			if v.done[i][c] {
				continue
			}
			a, z := max(lo, cs), min(hi, ce)
			if a == cs && z == ce {
				v.sums[i][c] = manifest.ChunkSum(piece[cs-lo : ce-lo])
				v.done[i][c] = true
				// Pieces of it given before (a block cut otherwise, then
				// this one) are no longer needed: their buffer is free.
				if pc := v.parts[[2]int{i, int(c)}]; pc != nil {
					v.spare = append(v.spare, pc.buf[:cap(pc.buf)])
					delete(v.parts, [2]int{i, int(c)})
				}
				continue
			}
			v.addPiece(i, int(c), int(ce-cs), int(a-cs), piece[a-lo:z-lo])
		}
	}
}

// addPiece copies bytes p of chunk c of object i, of length n, at from.
func (v *streamVerifier) addPiece(i, c, n, from int, p []byte) {
	key := [2]int{i, c}
	pc := v.parts[key]
	if pc == nil {
		pc = &pieced{}
		if k := len(v.spare); k > 0 {
			pc.buf, v.spare = v.spare[k-1], v.spare[:k-1]
		} else {
			pc.buf = make([]byte, manifest.ContentChunk)
		}
		pc.buf = pc.buf[:n]
		v.parts[key] = pc
	}
	copy(pc.buf[from:], p)
	pc.spans = append(pc.spans, [2]int{from, from + len(p)})
	slices.SortFunc(pc.spans, func(x, y [2]int) int { return x[0] - y[0] })
	merged := pc.spans[:1]
	for _, s := range pc.spans[1:] {
		last := &merged[len(merged)-1]
		if s[0] <= last[1] {
			last[1] = max(last[1], s[1])
		} else {
			merged = append(merged, s)
		}
	}
	pc.spans = merged
	if len(merged) == 1 && merged[0] == [2]int{0, n} {
		v.sums[i][c] = manifest.ChunkSum(pc.buf)
		v.done[i][c] = true
		v.spare = append(v.spare, pc.buf[:cap(pc.buf)])
		delete(v.parts, key)
	}
}

// finish reads the chunks no block completed from r (the same stream),
// checks each object's size in b and its hash, and on success notes in
// seen the stamps of the objects r read from a file that held still
// (verification began at at). The error wraps manifest.ErrCorrupt for a
// wrong size or hash.
func (v *streamVerifier) finish(ctx context.Context, r *objectsReaderAt, b storage.Backend, seen *verifiedFiles, at time.Time) error {
	buf := make([]byte, manifest.ContentChunk)
	for i, name := range v.names {
		for c, ok := range v.done[i] {
			if ok {
				continue
			}
			cs := int64(c) * manifest.ContentChunk
			n := min(manifest.ContentChunk, v.sizes[i]-cs)
			// A chunk begun keeps the bytes the blocks gave (those the
			// rebuild used); only what none gave is read.
			chunk, spans := buf[:n], [][2]int(nil)
			if pc := v.parts[[2]int{i, c}]; pc != nil {
				chunk, spans = pc.buf, pc.spans
			}
			from := 0
			for _, s := range append(spans, [2]int{int(n), int(n)}) {
				if s[0] > from {
					if err := readFull(r, v.starts[i]+cs+int64(from), chunk[from:s[0]]); err != nil {
						return fmt.Errorf("%s: %w", name, err)
					}
				}
				from = s[1]
			}
			v.sums[i][c] = manifest.ChunkSum(chunk)
		}
		info, err := b.Stat(ctx, name)
		switch {
		case err != nil:
			return fmt.Errorf("%s: %w", name, err)
		case info.Size != v.sizes[i]:
			return fmt.Errorf("%s: %w: %d bytes, the manifest says %d", name, manifest.ErrCorrupt, info.Size, v.sizes[i])
		}
		if got := manifest.CombineChunkSums(v.sums[i], v.sizes[i]); got != v.hashes[i] {
			return fmt.Errorf("%s: %w: content hash %s, the manifest says %s", name, manifest.ErrCorrupt, got, v.hashes[i])
		}
	}
	for i, name := range v.names {
		if st, ok := r.unchanged(i); ok {
			seen.note(name, st, v.hashes[i], at)
		}
	}
	return nil
}

// readFull reads len(p) bytes at off.
func readFull(r *objectsReaderAt, off int64, p []byte) error {
	n, err := r.ReadAt(p, off)
	if n == len(p) {
		return nil
	}
	return fmt.Errorf("read %d bytes at %d: %d read: %w", len(p), off, n, err)
}
