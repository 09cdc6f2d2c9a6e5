package matmul

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
)

// Errors of ReadFrom and UnmarshalBinary; returned errors wrap one of them.
var (
	// ErrCorrupt: the bytes are not a matmul state (wrong magic or
	// version, truncated, trailing bytes, or a CRC mismatch).
	ErrCorrupt = errors.New("matmul: corrupt state")
	// ErrMismatch: a well-formed state of another configuration, rank or
	// number of ranks.
	ErrMismatch = errors.New("matmul: state does not match the solver")
)

// magic starts every state; its last byte is the format version.
var magic = [8]byte{'m', 'a', 't', 'm', 'u', 'l', 0, 1}

// headerLen is the magic, N and Seed (uint64), Panels, rank and size
// (uint32) and the step (uint64).
const headerLen = 8 + 8 + 8 + 3*4 + 8

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// StateSize returns the length of the state WriteTo writes.
func (s *Solver) StateSize() int64 {
	return headerLen + 8*int64(len(s.c)+len(s.bt)) + 4
}

func (s *Solver) header() []byte {
	h := make([]byte, 0, headerLen)
	h = append(h, magic[:]...)
	h = binary.LittleEndian.AppendUint64(h, uint64(s.n))
	h = binary.LittleEndian.AppendUint64(h, s.cfg.Seed)
	for _, v := range []int{s.panels, s.rank, s.size} {
		h = binary.LittleEndian.AppendUint32(h, uint32(v))
	}
	return binary.LittleEndian.AppendUint64(h, uint64(s.step))
}

// WriteTo writes the state a fresh solver of the same configuration, rank
// and size needs to continue bit-identically: a header (N, the seed, the
// number of panels, rank, size, the step), this rank's rows of C, the block of B it
// holds (transposed), as little-endian float64s, and a CRC-32C of all of
// it. A is not written: New regenerates it from the seed.
func (s *Solver) WriteTo(w io.Writer) (int64, error) {
	crc := crc32.New(castagnoli)
	var n int64
	write := func(b []byte) error {
		m, err := w.Write(b)
		n += int64(m)
		crc.Write(b[:m])
		return err
	}
	if err := write(s.header()); err != nil {
		return n, err
	}
	buf := s.send[:0]
	for _, part := range [][]float64{s.c, s.bt} {
		for len(part) > 0 {
			chunk := part[:min(len(part), cap(buf)/8)]
			part = part[len(chunk):]
			buf = buf[:8*len(chunk)]
			for i, v := range chunk {
				binary.LittleEndian.PutUint64(buf[8*i:], math.Float64bits(v))
			}
			if err := write(buf); err != nil {
				return n, err
			}
		}
	}
	m, err := w.Write(binary.LittleEndian.AppendUint32(nil, crc.Sum32()))
	return n + int64(m), err
}

// pending is a state read but not yet made current.
type pending struct {
	step  int
	c, bt []float64
}

// ReadFrom reads one state written by WriteTo, and no further, and
// continues from it. The state must be of this solver's configuration,
// rank and number of ranks. On error the solver is unchanged.
func (s *Solver) ReadFrom(r io.Reader) (int64, error) {
	p, n, err := s.read(r)
	if err == nil {
		s.commit(p)
	}
	return n, err
}

func (s *Solver) read(r io.Reader) (*pending, int64, error) {
	crc := crc32.New(castagnoli)
	var n int64
	read := func(b []byte, what string) error {
		m, err := io.ReadFull(r, b)
		n += int64(m)
		crc.Write(b[:m])
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("%w: truncated in the %s", ErrCorrupt, what)
		}
		return err
	}
	h := make([]byte, headerLen)
	if err := read(h, "header"); err != nil {
		return nil, n, err
	}
	if !bytes.Equal(h[:7], magic[:7]) {
		return nil, n, fmt.Errorf("%w: not a matmul state", ErrCorrupt)
	}
	if h[7] != magic[7] {
		return nil, n, fmt.Errorf("%w: format version %d, want %d", ErrCorrupt, h[7], magic[7])
	}
	le := binary.LittleEndian
	got := Config{N: int(min(le.Uint64(h[8:]), maxN+1)), Seed: le.Uint64(h[16:]), Panels: int(le.Uint32(h[24:]))}
	rank, size := int(le.Uint32(h[28:])), int(le.Uint32(h[32:]))
	step := le.Uint64(h[36:])
	switch {
	case got != (Config{N: s.n, Seed: s.cfg.Seed, Panels: s.panels}):
		return nil, n, fmt.Errorf("%w: state of n=%d seed=%d panels=%d, solver of n=%d seed=%d panels=%d",
			ErrMismatch, got.N, got.Seed, got.Panels, s.n, s.cfg.Seed, s.panels)
	case size != s.size:
		return nil, n, fmt.Errorf("%w: state of a %d-rank run, solver of a %d-rank run", ErrMismatch, size, s.size)
	case rank != s.rank:
		return nil, n, fmt.Errorf("%w: state of rank %d, solver of rank %d", ErrMismatch, rank, s.rank)
	case step > uint64(s.Steps()):
		return nil, n, fmt.Errorf("%w: step %d of %d", ErrCorrupt, step, s.Steps())
	}
	p := &pending{step: int(step), c: make([]float64, len(s.c))}
	blo, bhi := s.block(s.held(p.step))
	p.bt = make([]float64, (bhi-blo)*s.n, cap(s.bt))
	buf := s.recv
	for _, part := range [][]float64{p.c, p.bt} {
		for len(part) > 0 {
			chunk := part[:min(len(part), len(buf)/8)]
			part = part[len(chunk):]
			b := buf[:8*len(chunk)]
			if err := read(b, "matrices"); err != nil {
				return nil, n, err
			}
			for i := range chunk {
				chunk[i] = math.Float64frombits(le.Uint64(b[8*i:]))
			}
		}
	}
	want := crc.Sum32()
	var t [4]byte
	if err := read(t[:], "checksum"); err != nil {
		return nil, n, err
	}
	if got := le.Uint32(t[:]); got != want {
		return nil, n, fmt.Errorf("%w: CRC-32C %08x, computed %08x", ErrCorrupt, got, want)
	}
	return p, n, nil
}

func (s *Solver) commit(p *pending) {
	s.step, s.c, s.bt = p.step, p.c, p.bt
}

// MarshalBinary returns what WriteTo writes.
func (s *Solver) MarshalBinary() ([]byte, error) {
	var b bytes.Buffer
	b.Grow(int(s.StateSize()))
	_, err := s.WriteTo(&b)
	return b.Bytes(), err
}

// UnmarshalBinary continues from data, a state of exactly the form
// WriteTo writes. On error the solver is unchanged.
func (s *Solver) UnmarshalBinary(data []byte) error {
	r := bytes.NewReader(data)
	p, _, err := s.read(r)
	if err != nil {
		return err
	}
	if r.Len() != 0 {
		return fmt.Errorf("%w: %d trailing bytes", ErrCorrupt, r.Len())
	}
	s.commit(p)
	return nil
}
