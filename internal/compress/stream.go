package compress

import (
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
)

// filterBlock is the unit of the shuffle filter: a stream is shuffled in
// blocks of this many bytes at fixed offsets (the last one shorter), so a
// reader unshuffles exactly the blocks the writer shuffled. A multiple of
// every lane width.
const filterBlock = 64 << 10

// shuffle transposes src's lanes of width l into dst (len(dst) ==
// len(src)): byte j of element i goes to j*k + i, k = len(src)/l. Bytes
// past the last whole element stay where they are.
func shuffle(dst, src []byte, l int) {
	k := len(src) / l
	switch l {
	case 4:
		d0, d1, d2, d3 := dst[:k], dst[k:2*k], dst[2*k:3*k], dst[3*k:4*k]
		for i := range k {
			e := src[4*i : 4*i+4 : 4*i+4]
			d0[i], d1[i], d2[i], d3[i] = e[0], e[1], e[2], e[3]
		}
	default:
		for i := range k {
			e := src[i*l : i*l+l]
			for j, b := range e {
				dst[j*k+i] = b
			}
		}
	}
	copy(dst[k*l:], src[k*l:])
}

// unshuffle undoes shuffle.
func unshuffle(dst, src []byte, l int) {
	k := len(src) / l
	switch l {
	case 4:
		s0, s1, s2, s3 := src[:k], src[k:2*k], src[2*k:3*k], src[3*k:4*k]
		for i := range k {
			e := dst[4*i : 4*i+4 : 4*i+4]
			e[0], e[1], e[2], e[3] = s0[i], s1[i], s2[i], s3[i]
		}
	default:
		for i := range k {
			e := dst[i*l : i*l+l]
			for j := range e {
				e[j] = src[j*k+i]
			}
		}
	}
	copy(dst[k*l:], src[k*l:])
}

// zstdWindow is the window of the frames ckpt writes, and the most its
// readers accept (zstd's default for every level, made explicit so that
// the two cannot drift apart).
const zstdWindow = 8 << 20

// NewZstd is the Zstd codec's encoder writing into w: zstd's fastest
// level, which keeps up with a disk on one core for compressible data.
// zstd's own checksum is off: the content hash checks every byte (a
// reader takes frames with or without it).
func NewZstd(w io.Writer) (*zstd.Encoder, error) {
	return zstd.NewWriter(w, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderCRC(false), zstd.WithWindowSize(zstdWindow))
}

// NewWriter returns a writer that stores what is written to it into w in
// form f. Close flushes the last bytes into w; it does not close w.
func NewWriter(w io.Writer, f Form) (io.WriteCloser, error) {
	if err := f.Valid(); err != nil {
		return nil, err
	}
	var cw io.WriteCloser
	switch f.Codec {
	case "":
		return nopCloser{w}, nil
	case Zstd:
		enc, err := NewZstd(w)
		if err != nil {
			return nil, err
		}
		cw = enc
	case S2:
		cw = s2.NewWriter(w)
	}
	if l := lanes(f.Filter); l > 0 {
		return &shuffleWriter{w: cw, l: l, buf: make([]byte, 0, filterBlock), out: make([]byte, filterBlock)}, nil
	}
	return cw, nil
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// shuffleWriter shuffles each filterBlock bytes on their way into w.
type shuffleWriter struct {
	w        io.WriteCloser
	l        int
	buf, out []byte
}

func (s *shuffleWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		m := copy(s.buf[len(s.buf):cap(s.buf)], p)
		s.buf = s.buf[:len(s.buf)+m]
		p, n = p[m:], n+m
		if len(s.buf) == cap(s.buf) {
			if err := s.flush(); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

func (s *shuffleWriter) flush() error {
	out := s.out[:len(s.buf)]
	shuffle(out, s.buf, s.l)
	s.buf = s.buf[:0]
	_, err := s.w.Write(out)
	return err
}

func (s *shuffleWriter) Close() error {
	var err error
	if len(s.buf) > 0 {
		err = s.flush()
	}
	return errors.Join(err, s.w.Close())
}

// NewReader returns the bytes stored in form f that r holds, as they were
// written. Damaged input makes a read fail (or, for what a codec cannot
// tell, return other bytes: the caller checks the content hash).
func NewReader(r io.Reader, f Form) (io.ReadCloser, error) {
	if err := f.Valid(); err != nil {
		return nil, err
	}
	var cr io.ReadCloser
	switch f.Codec {
	case "":
		return io.NopCloser(r), nil
	case Zstd:
		// The window bound keeps a damaged frame header from asking for
		// gigabytes before the stored hash, known at the object's end,
		// can say it is damaged: every frame ckpt writes fits it.
		dec, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(zstdWindow))
		if err != nil {
			return nil, err
		}
		cr = dec.IOReadCloser()
	case S2:
		cr = io.NopCloser(s2.NewReader(r))
	}
	if l := lanes(f.Filter); l > 0 {
		return &unshuffleReader{r: cr, l: l, in: make([]byte, filterBlock), out: make([]byte, filterBlock)}, nil
	}
	return cr, nil
}

// unshuffleReader unshuffles each filterBlock bytes read from r.
type unshuffleReader struct {
	r       io.ReadCloser
	l       int
	in, out []byte
	pending []byte // unshuffled bytes not yet returned
	err     error
}

func (u *unshuffleReader) Read(p []byte) (int, error) {
	for len(u.pending) == 0 {
		if u.err != nil {
			return 0, u.err
		}
		// Fill the block; only the decoder's own io.EOF ends the stream
		// (a short last block is fine). io.ReadFull would turn a
		// truncated frame's io.ErrUnexpectedEOF into a clean end.
		n := 0
		var err error
		for n < len(u.in) && err == nil {
			var m int
			m, err = u.r.Read(u.in[n:])
			n += m
		}
		switch {
		case err == io.EOF:
			u.err = io.EOF
		case err != nil:
			// What came with a failed read is not to be trusted.
			u.err, n = fmt.Errorf("decompress: %w", err), 0
		}
		unshuffle(u.out[:n], u.in[:n], u.l)
		u.pending = u.out[:n]
	}
	n := copy(p, u.pending)
	u.pending = u.pending[n:]
	return n, nil
}

func (u *unshuffleReader) Close() error { return u.r.Close() }
