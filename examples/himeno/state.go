package himeno

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
	// ErrCorrupt: the bytes are not a himeno state (wrong magic or
	// version, truncated, trailing bytes, or a CRC mismatch).
	ErrCorrupt = errors.New("himeno: corrupt state")
	// ErrMismatch: a well-formed state of another grid size, rank, number
	// of ranks or decomposition.
	ErrMismatch = errors.New("himeno: state does not match the solver")
)

// magic starts every state; its last byte is the format version.
var magic = [8]byte{'h', 'i', 'm', 'e', 'n', 'o', 0, 1}

// headerLen is the magic, I, J, K, rank, size, lo, hi (uint32 each) and the
// iteration (uint64).
const headerLen = 8 + 7*4 + 8

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// StateSize returns the length of the state WriteTo writes.
func (s *Solver) StateSize() int64 {
	return headerLen + int64(s.n)*int64(len(s.msg)) + 4
}

func (s *Solver) header() []byte {
	h := make([]byte, 0, headerLen)
	h = append(h, magic[:]...)
	for _, v := range []int{s.cfg.I, s.cfg.J, s.cfg.K, s.rank, s.size, s.lo, s.hi} {
		h = binary.LittleEndian.AppendUint32(h, uint32(v))
	}
	return binary.LittleEndian.AppendUint64(h, uint64(s.iter))
}

// WriteTo writes the state a fresh solver of the same grid, rank and size
// needs to continue bit-identically: a header (the grid size, rank, size,
// the slab, the iteration), the inner points of the planes this rank
// updates as little-endian float32s, and a CRC-32C of all of it. The
// coefficient arrays, the faces and the halos are not written: New
// recreates the first two, and Step receives the halos before it reads
// them.
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
	for li := 1; li <= s.n; li++ {
		s.packInner(s.p, li, s.msg)
		if err := write(s.msg); err != nil {
			return n, err
		}
	}
	m, err := w.Write(binary.LittleEndian.AppendUint32(nil, crc.Sum32()))
	return n + int64(m), err
}

// ReadFrom reads one state written by WriteTo, and no further, and
// continues from it. The state must be of this solver's grid size, rank and
// number of ranks. On error the solver is unchanged.
func (s *Solver) ReadFrom(r io.Reader) (int64, error) {
	n, err := s.read(r)
	if err == nil {
		s.commit()
	}
	return n, err
}

// read reads a state into the inner points of wrk2 (scratch between
// iterations) and s.pending; commit makes it current.
func (s *Solver) read(r io.Reader) (int64, error) {
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
		return n, err
	}
	if !bytes.Equal(h[:7], magic[:7]) {
		return n, fmt.Errorf("%w: not a himeno state", ErrCorrupt)
	}
	if h[7] != magic[7] {
		return n, fmt.Errorf("%w: format version %d, want %d", ErrCorrupt, h[7], magic[7])
	}
	var f [7]int
	for i := range f {
		f[i] = int(binary.LittleEndian.Uint32(h[8+4*i:]))
	}
	iter := binary.LittleEndian.Uint64(h[8+7*4:])
	got := Config{f[0], f[1], f[2]}
	switch {
	case got != s.cfg:
		return n, fmt.Errorf("%w: state of size %v, solver of size %v", ErrMismatch, got, s.cfg)
	case f[4] != s.size:
		return n, fmt.Errorf("%w: state of a %d-rank run, solver of a %d-rank run", ErrMismatch, f[4], s.size)
	case f[3] != s.rank:
		return n, fmt.Errorf("%w: state of rank %d, solver of rank %d", ErrMismatch, f[3], s.rank)
	case f[5] != s.lo || f[6] != s.hi:
		return n, fmt.Errorf("%w: state of planes [%d, %d), solver of planes [%d, %d)", ErrMismatch, f[5], f[6], s.lo, s.hi)
	case iter > math.MaxInt32:
		return n, fmt.Errorf("%w: iteration %d", ErrCorrupt, iter)
	}
	// wrk2's inner points are scratch; read into them and swap on success.
	for li := 1; li <= s.n; li++ {
		if err := read(s.msg, "planes"); err != nil {
			return n, err
		}
		s.unpackInner(s.wrk2, li, s.msg)
	}
	want := crc.Sum32()
	var t [4]byte
	if err := read(t[:], "checksum"); err != nil {
		return n, err
	}
	if got := binary.LittleEndian.Uint32(t[:]); got != want {
		return n, fmt.Errorf("%w: CRC-32C %08x, computed %08x", ErrCorrupt, got, want)
	}
	s.pending = int(iter)
	return n, nil
}

func (s *Solver) commit() {
	s.p, s.wrk2 = s.wrk2, s.p
	s.iter = s.pending
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
	if _, err := s.read(r); err != nil {
		return err
	}
	if r.Len() != 0 {
		return fmt.Errorf("%w: %d trailing bytes", ErrCorrupt, r.Len())
	}
	s.commit()
	return nil
}
