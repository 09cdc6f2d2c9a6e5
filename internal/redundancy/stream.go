package redundancy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
)

// DefaultBlockSize is the bytes of one shard that travel in one message.
const DefaultBlockSize = 1 << 20

// ErrInconsistent: a rebuilt chunk holds non-zero bytes beyond the member's
// size, so the size given to Rebuild is wrong or a survivor's data or
// parity differs from what was encoded.
var ErrInconsistent = errors.New("redundancy: rebuilt data inconsistent with the member's size")

// Option tunes Encode and Rebuild. Every member of a set
// must pass the same options: the block size fixes the message schedule.
type Option func(*options)

type options struct {
	blockSize int
	codec     Codec
}

// WithBlockSize sets how many bytes of a shard one message carries (≥ 1;
// default DefaultBlockSize). Memory per member is about (k+2)·blockSize
// for Encode, (k+4)·blockSize for Rebuild, plus the transport's buffers.
func WithBlockSize(n int) Option { return func(o *options) { o.blockSize = n } }

// WithCodec replaces the codec NewCodec would choose (for tests and
// benchmarks); it must have the layout's k and m.
func WithCodec(c Codec) Option { return func(o *options) { o.codec = c } }

// run is the per-call state shared by Encode and Rebuild.
type run struct {
	op      string
	l       Layout
	k, n, m int
	me      int
	tr      Transport
	codec   Codec
	bs      int64 // block size
	chunk   int64 // C
	nblocks int64
	maxSize int64
}

func newRun(op string, l Layout, me int, tr Transport, maxSize int64, opts []Option) (*run, error) {
	o := options{blockSize: DefaultBlockSize}
	for _, opt := range opts {
		opt(&o)
	}
	r := &run{op: op, l: l, n: l.Members(), k: l.DataShards(), m: l.ParityShards(), me: me, tr: tr, maxSize: maxSize}
	switch {
	case r.n == 0:
		return nil, fmt.Errorf("redundancy: %s: zero Layout; use NewLayout", op)
	case me < 0 || me >= r.n:
		return nil, fmt.Errorf("redundancy: %s: member %d is not in a set of %d", op, me, r.n)
	case tr == nil && r.n > 1:
		return nil, fmt.Errorf("redundancy: %s: member %d has no transport", op, me)
	case maxSize < 0:
		return nil, fmt.Errorf("redundancy: %s: negative largest size %d", op, maxSize)
	case o.blockSize < 1:
		return nil, fmt.Errorf("redundancy: %s: block size must be ≥ 1 byte, got %d", op, o.blockSize)
	}
	r.bs = int64(o.blockSize)
	r.chunk = l.ChunkSize(maxSize)
	r.nblocks = (r.chunk + r.bs - 1) / r.bs
	if r.nblocks >= maxBlocks {
		return nil, fmt.Errorf("redundancy: %s: %d blocks of %d bytes per chunk exceed the %d a tag can name; use larger blocks", op, r.nblocks, r.bs, int64(maxBlocks))
	}
	r.codec = o.codec
	if r.codec == nil {
		c, err := NewCodec(r.k, r.m)
		if err != nil {
			return nil, fmt.Errorf("redundancy: %s: %w", op, err)
		}
		r.codec = c
	}
	if r.codec.DataShards() != r.k || r.codec.ParityShards() != r.m {
		return nil, fmt.Errorf("redundancy: %s: codec for %d+%d used with a layout of %d+%d", op, r.codec.DataShards(), r.codec.ParityShards(), r.k, r.m)
	}
	return r, nil
}

// block returns the offset within a chunk and the length of block b.
func (r *run) block(b int64) (off int64, n int) {
	off = b * r.bs
	return off, int(min(r.bs, r.chunk-off))
}

func (r *run) errf(format string, args ...any) error {
	return fmt.Errorf("redundancy: %s: member %d: "+format, append([]any{r.op, r.me}, args...)...)
}

func (r *run) send(ctx context.Context, to int, t uint64, msg []byte) error {
	if err := r.tr.Send(ctx, to, t, msg); err != nil {
		return r.errf("send %s to member %d: %w", TagString(t), to, err)
	}
	return nil
}

// recv receives into buf[:want], zero-filling what the message leaves
// short (the virtual padding of a short member).
func (r *run) recv(ctx context.Context, from int, t uint64, buf []byte) error {
	msg, err := r.tr.Recv(ctx, from, t, buf[:0])
	if err != nil {
		return r.errf("receive %s from member %d: %w", TagString(t), from, err)
	}
	if len(msg) > len(buf) {
		return r.errf("receive %s from member %d: %d bytes, at most %d expected", TagString(t), from, len(msg), len(buf))
	}
	if len(msg) > 0 && &msg[0] != &buf[0] {
		copy(buf, msg)
	}
	clear(buf[len(msg):])
	return nil
}

// readPadded reads bytes [off, off+len(buf)) of a member's data of the
// given size and returns how many of them lie within the size (the rest are
// virtual zero padding and are neither read nor sent).
func readPadded(data io.ReaderAt, size, off int64, buf []byte) (int, error) {
	want := int(max(0, min(size-off, int64(len(buf)))))
	if want == 0 {
		return 0, nil
	}
	return want, readFull(data, off, buf[:want])
}

func readFull(r io.ReaderAt, off int64, buf []byte) error {
	n, err := r.ReadAt(buf, off)
	if n == len(buf) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("read %d bytes at offset %d: got %d: %w", len(buf), off, n, err)
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func write(w io.Writer, b []byte) error {
	n, err := w.Write(b)
	if err == nil && n != len(b) {
		err = io.ErrShortWrite
	}
	return err
}

// Encode computes this member's parity file. Every member of the set runs
// it at the same time, each with its own transport endpoint.
//
// data holds the member's size bytes; maxSize is the largest size in the
// set and must be the same on every member: the caller learns all sizes
// first, from the members' manifests. parity receives
// exactly ParitySize(maxSize) bytes, its m parity shards in order.
//
// The work runs in m passes, one per parity shard p, each block by block
// and row by row: in row r the k data members send their block to the
// holder of parity shard p, which computes that shard's block and appends
// it to its parity file. A member therefore reads its data m times, and
// holds about (k+2) blocks at once. Blocks of a member's chunk beyond its
// size are zero padding and travel as short (often empty) messages.
//
// On error the caller must close this member's endpoint so that its peers
// fail instead of waiting (see the package documentation).
func Encode(ctx context.Context, l Layout, me int, tr Transport, data io.ReaderAt, size, maxSize int64, parity io.Writer, opts ...Option) error {
	r, err := newRun("encode", l, me, tr, maxSize, opts)
	if err != nil {
		return err
	}
	switch {
	case size < 0 || size > maxSize:
		return r.errf("size %d outside [0, %d], the largest size of the set", size, maxSize)
	case data == nil && size > 0:
		return r.errf("no data to read")
	case parity == nil && r.m > 0:
		return r.errf("no parity writer")
	}
	if r.m == 0 || r.chunk == 0 {
		return nil
	}
	k, m, n := r.k, r.m, r.n
	send := make([]byte, r.bs)
	bufs := make([][]byte, k)
	for c := range bufs {
		bufs[c] = make([]byte, r.bs)
	}
	out := make([]byte, r.bs)
	dataShards := make([][]byte, k)
	parShards := make([][]byte, m)
	for p := 0; p < m; p++ {
		for b := int64(0); b < r.nblocks; b++ {
			if err := ctx.Err(); err != nil {
				return r.errf("%w", err)
			}
			off, blen := r.block(b)
			for row := 0; row < n; row++ {
				s := l.Shard(row, me)
				t := tag(opEncode, p, row, b)
				switch {
				case s < k: // a data member of the row: send its block
					got, err := readPadded(data, size, int64(s)*r.chunk+off, send[:blen])
					if err != nil {
						return r.errf("data chunk %d: %w", s, err)
					}
					if err := r.send(ctx, l.ParityHolder(row, p), t, send[:got]); err != nil {
						return err
					}
				case s == k+p: // the holder of parity shard p
					for c := 0; c < k; c++ {
						if err := r.recv(ctx, l.DataMember(row, c), t, bufs[c][:blen]); err != nil {
							return err
						}
						dataShards[c] = bufs[c][:blen]
					}
					clear(parShards)
					parShards[p] = out[:blen]
					if err := r.codec.Encode(dataShards, parShards); err != nil {
						return r.errf("row %d: %w", row, err)
					}
					if err := write(parity, out[:blen]); err != nil {
						return r.errf("write parity shard %d: %w", p, err)
					}
				}
			}
		}
	}
	return nil
}

// Local is what one member brings to Rebuild: a survivor, its files to
// read; a replacement for a lost member, the writers to fill.
type Local struct {
	// Size is the member's data size. A replacement learns its lost
	// member's original size from the manifest; it writes exactly Size
	// bytes to DataOut.
	Size int64

	Data   io.ReaderAt // survivor: its data (Size bytes)
	Parity io.ReaderAt // survivor: its parity file (ParitySize bytes)

	DataOut   io.Writer // replacement: the rebuilt data, in order
	ParityOut io.Writer // replacement: the rebuilt parity file, in order

	// Seen, if set, is given every block a survivor read for the rebuild,
	// once it is sent: off is its offset in the Data (parity false) or
	// the Parity, b its bytes, valid during the call only. The calls come
	// from one goroutine of their own, in the order of the reads, a
	// pipeline stage after the sends, and all have returned when Rebuild
	// does. A survivor uses it to verify its files in the pass that feeds
	// the rebuild (issue 17), so that it reads each byte once; a block
	// sent to two lost members is read, and seen, twice.
	Seen func(parity bool, off int64, b []byte)
}

// Rebuild restores the lost members of a set. Every member runs it at the
// same time: the survivors with their files, and one replacement per lost
// member, running as that member with empty storage, with writers for the
// rebuilt files. lost, maxSize and the options must be the same on every
// member.
//
// Who sends what to whom: each lost member x needs its shard t of every
// row, for t = 0..n−1 in that order (data chunks 0..k−1, then parity shards
// 0..m−1, the order of its two files); shard t lies in row r = (x−t) mod n.
// In that row the sources are the k surviving members with the smallest
// shard numbers (so the data members, when they survived). Block by block,
// each source sends x its own shard of row r (data blocks beyond its size
// are short), and x rebuilds shard t with the codec and writes it out.
// Losing more than m members fails at once, on every member, with an error
// wrapping ErrTooManyLost, before anything is sent or written.
//
// A replacement checks that the rebuilt bytes of its chunks beyond Size
// are zero (ErrInconsistent otherwise); checksums in the manifest remain
// the real check of the rebuilt files.
func Rebuild(ctx context.Context, l Layout, lost []int, me int, tr Transport, local Local, maxSize int64, opts ...Option) error {
	r, err := newRun("rebuild", l, me, tr, maxSize, opts)
	if err != nil {
		return err
	}
	isLost := make([]bool, r.n)
	for _, x := range lost {
		if x < 0 || x >= r.n {
			return r.errf("lost member %d is not in a set of %d", x, r.n)
		}
		if isLost[x] {
			return r.errf("lost member %d listed twice", x)
		}
		isLost[x] = true
	}
	if len(lost) > r.m {
		return r.errf("%w: %d members lost %v, a set of %d data + %d parity survives at most %d", ErrTooManyLost, len(lost), lost, r.k, r.m, r.m)
	}
	if len(lost) == 0 {
		return nil
	}
	lost = slices.Sorted(slices.Values(lost))
	switch {
	case local.Size < 0 || local.Size > maxSize:
		return r.errf("size %d outside [0, %d], the largest size of the set", local.Size, maxSize)
	case isLost[me] && (local.DataOut == nil || local.ParityOut == nil):
		return r.errf("a replacement needs DataOut and ParityOut")
	case !isLost[me] && (local.Parity == nil || local.Data == nil && local.Size > 0):
		return r.errf("a survivor needs its Data and Parity")
	}
	if r.chunk == 0 {
		return nil
	}
	if isLost[me] {
		return r.rebuildLost(ctx, isLost, local)
	}
	return r.serveLost(ctx, lost, isLost, local)
}

// pipelineDepth is how many blocks a member of Rebuild keeps in flight
// between its stages: a survivor reads ahead of its sends, a replacement
// decodes ahead of its writes. A few blocks hide the latency of one stage
// behind the other without holding more than a few MiB.
const pipelineDepth = 4

// staged is one block between two stages of a Rebuild pipeline.
type staged struct {
	buf    []byte // from the pool; the block is buf[:n]
	n      int
	to     int    // survivor: the lost member it goes to
	tag    uint64 // survivor: its message tag
	off    int64  // survivor: its offset in the data or parity
	parity bool   // a parity shard's block, else data
	err    error  // survivor: the read failed; nothing follows
}

// serveLost is a survivor's part of Rebuild: a reader goroutine reads the
// blocks this member sources, in the order they are sent, up to
// pipelineDepth blocks ahead of the sends, so that the disk (or page cache)
// and the transport work at once. Each byte it sends is read once. With
// local.Seen, a third stage gives each sent block to it before its buffer
// is read into again, so Seen's work (hashing) overlaps the reads and
// the sends too.
func (r *run) serveLost(ctx context.Context, lost []int, isLost []bool, local Local) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	depth := pipelineDepth
	if local.Seen != nil {
		depth *= 2 // blocks being seen are in flight too
	}
	free := make(chan []byte, depth)
	for range depth {
		free <- make([]byte, r.bs)
	}
	ready := make(chan staged, depth)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(ready)
		r.readSources(ctx, lost, local, free, ready)
	}()
	release := func(it staged) { free <- it.buf }
	var sent chan staged
	seen := make(chan struct{})
	if local.Seen != nil {
		sent = make(chan staged, depth)
		go func() {
			defer close(seen)
			for it := range sent {
				if it.n > 0 { // a block all padding was not read
					local.Seen(it.parity, it.off, it.buf[:it.n])
				}
				free <- it.buf
			}
		}()
		release = func(it staged) { sent <- it }
	} else {
		close(seen)
	}
	// The reader stops on cancel; wait for it, and for Seen, so that
	// nothing reads the member's files or calls Seen once Rebuild has
	// returned.
	defer func() {
		cancel()
		<-done
		if sent != nil {
			close(sent)
		}
		<-seen
	}()
	for it := range ready {
		if it.err != nil {
			return it.err
		}
		if err := r.send(ctx, it.to, it.tag, it.buf[:it.n]); err != nil {
			return err
		}
		release(it)
	}
	// The reader stops early, without an error of its own, only when ctx
	// is done.
	if err := ctx.Err(); err != nil {
		return r.errf("%w", err)
	}
	return nil
}

// readSources walks the steps of Rebuild and reads, for each message this
// member sends, its block into a buffer from free, and passes it on ready;
// it stops at the first error (passed on) or when ctx is done.
func (r *run) readSources(ctx context.Context, lost []int, local Local, free chan []byte, ready chan<- staged) {
	l, k := r.l, r.k
	for t := 0; t < r.n; t++ {
		for b := int64(0); b < r.nblocks; b++ {
			if ctx.Err() != nil {
				return
			}
			off, blen := r.block(b)
			for _, x := range lost {
				row := l.DataRow(x, t)
				s := l.Shard(row, r.me)
				// Source iff fewer than k survivors come before it in the row.
				before := s
				for _, y := range lost {
					if l.Shard(row, y) < s {
						before--
					}
				}
				if before >= k {
					continue
				}
				var buf []byte
				select {
				case buf = <-free:
				case <-ctx.Done():
					return
				}
				it := staged{buf: buf, n: blen, to: x, tag: tag(opRebuild, t, row, b)}
				if s < k {
					it.off = int64(s)*r.chunk + off
					got, err := readPadded(local.Data, local.Size, it.off, buf[:blen])
					if err != nil {
						it.err = r.errf("data chunk %d: %w", s, err)
					}
					it.n = got
				} else {
					it.off, it.parity = int64(s-k)*r.chunk+off, true
					if err := readFull(local.Parity, it.off, buf[:blen]); err != nil {
						it.err = r.errf("parity shard %d: %w", s-k, err)
					}
				}
				select {
				case ready <- it:
				case <-ctx.Done():
					return
				}
				if it.err != nil {
					return
				}
			}
		}
	}
}

// rebuildLost is a replacement's part of Rebuild: it receives and decodes
// block by block while a writer goroutine writes the decoded blocks, up to
// pipelineDepth behind, so that decoding and the disk work at once.
func (r *run) rebuildLost(ctx context.Context, isLost []bool, local Local) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	free := make(chan []byte, pipelineDepth)
	for range pipelineDepth {
		free <- make([]byte, r.bs)
	}
	decoded := make(chan staged, pipelineDepth)
	werr := make(chan error, 1)
	go func() { werr <- r.writeRebuilt(decoded, free, local) }()
	err := r.decodeLost(ctx, isLost, local, free, decoded)
	close(decoded)
	// The writer's error comes first: the decoder's is then only the
	// cancellation it caused.
	if e := <-werr; e != nil {
		return e
	}
	return err
}

// writeRebuilt writes the decoded blocks in order and returns each buffer
// to free. After a failed write it drains the rest without writing: the
// decoding goes on to the end of the set, so that the survivors finish
// their sends and every member reports the one true cause (the write's
// error), not a broken connection. The cost is decoding a set whose
// result is thrown away, on a path that is failing anyway.
func (r *run) writeRebuilt(decoded <-chan staged, free chan<- []byte, local Local) error {
	var err error
	for it := range decoded {
		if err == nil {
			if it.parity {
				if e := write(local.ParityOut, it.buf[:it.n]); e != nil {
					err = r.errf("write parity: %w", e)
				}
			} else if e := write(local.DataOut, it.buf[:it.n]); e != nil {
				err = r.errf("write data: %w", e)
			}
		}
		free <- it.buf
	}
	return err
}

// decodeLost receives and reconstructs the replacement's shards block by
// block and hands them to the writer on decoded.
func (r *run) decodeLost(ctx context.Context, isLost []bool, local Local, free chan []byte, decoded chan<- staged) error {
	l, k, me := r.l, r.k, r.me
	bufs := make([][]byte, k)
	for i := range bufs {
		bufs[i] = make([]byte, r.bs)
	}
	shards := make([][]byte, r.n)
	present := make([]bool, r.n)
	for t := 0; t < r.n; t++ {
		for b := int64(0); b < r.nblocks; b++ {
			if err := ctx.Err(); err != nil {
				return r.errf("%w", err)
			}
			off, blen := r.block(b)
			row := l.DataRow(me, t)
			tg := tag(opRebuild, t, row, b)
			clear(shards)
			clear(present)
			got := 0
			for s := 0; got < k; s++ {
				src := l.Member(row, s)
				if isLost[src] {
					continue
				}
				if err := r.recv(ctx, src, tg, bufs[got][:blen]); err != nil {
					return err
				}
				shards[s], present[s] = bufs[got][:blen], true
				got++
			}
			var out []byte
			select {
			case out = <-free:
			case <-ctx.Done():
				return r.errf("%w", ctx.Err())
			}
			shards[t] = out[:blen]
			if err := r.codec.Reconstruct(shards, present); err != nil {
				return r.errf("row %d: %w", row, err)
			}
			it := staged{buf: out, n: blen, parity: t >= k}
			if t < k {
				keep := int(max(0, min(local.Size-(int64(t)*r.chunk+off), int64(blen))))
				if !allZero(out[keep:blen]) {
					return r.errf("%w: chunk %d holds data beyond the size %d", ErrInconsistent, t, local.Size)
				}
				it.n = keep
			}
			select {
			case decoded <- it:
			case <-ctx.Done():
				return r.errf("%w", ctx.Err())
			}
		}
	}
	return nil
}
