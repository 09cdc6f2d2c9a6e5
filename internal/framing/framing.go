// Package framing is the length-prefixed framing that the coordinator's
// protocol (internal/wire) and the staging protocol (internal/stage)
// share: every frame is a 4-byte little-endian payload length, a 1-byte
// type and the payload.
//
// The protocols own their types, payloads and limits; this package owns
// the header, the order in which a frame is read (the length is checked
// against the limit of its type before any of the payload is read or
// allocated, and a long payload is allocated as it arrives, so a hostile
// peer costs at most a small multiple of what it sends) and the errors of a frame that breaks the framing. The peer
// transport (internal/peer) frames differently: its headers carry credit
// for its flow control.
package framing

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
)

// HeaderSize is the size of a frame header: length and type.
const HeaderSize = 5

// ErrTooLarge is wrapped by Read's error for a frame longer than the
// reader's limit for its type.
var ErrTooLarge = errors.New("frame too large")

// Begin appends the header of a frame of type t to buf, its length left
// for End to fill in once the payload is appended. start = len(buf) before
// the call is what End needs.
func Begin(buf []byte, t uint8) []byte { return append(buf, 0, 0, 0, 0, t) }

// End fills in the length of the frame that Begin started at buf[start:],
// whose payload is the rest of buf. It returns false for a payload the
// 4-byte length cannot express, whose length it sets to the largest one:
// every reader refuses that as over its limit rather than read out of
// step. (End is small enough to be inlined in the encoders.)
func End(buf []byte, start int) bool {
	n := uint64(len(buf) - start - HeaderSize)
	ok := n <= math.MaxUint32
	if !ok {
		n = math.MaxUint32
	}
	binary.LittleEndian.PutUint32(buf[start:], uint32(n))
	return ok
}

// Split splits one whole frame (header and payload) into its type and
// payload, which aliases frame. It fails if frame is shorter than a header
// or its length disagrees with the header's.
func Split[T ~uint8](frame []byte) (T, []byte, error) {
	if len(frame) < HeaderSize {
		return 0, nil, fmt.Errorf("frame of %d bytes is shorter than its header", len(frame))
	}
	n := binary.LittleEndian.Uint32(frame)
	if uint64(n) != uint64(len(frame)-HeaderSize) {
		return 0, nil, fmt.Errorf("header says %d payload bytes, frame has %d", n, len(frame)-HeaderSize)
	}
	return T(frame[4]), frame[HeaderSize:], nil
}

// Read reads one frame from r and returns its type and payload.
// limit(t) is the largest payload accepted for a frame of type t (a
// negative limit accepts none): a longer frame is refused with an error
// wrapping ErrTooLarge, naming the type (%v of T) and sizes, before any of
// its payload is read or allocated; the stream is then out of step and
// must be abandoned. At a clean end of stream between frames Read returns
// io.EOF; a stream ending inside a frame gives io.ErrUnexpectedEOF. The
// payload is a fresh allocation the caller owns.
//
// r should be buffered: Read makes two reads per frame.
func Read[T ~uint8](r io.Reader, limit func(T) int) (T, []byte, error) {
	var h [HeaderSize]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, err
	}
	n := binary.LittleEndian.Uint32(h[:])
	t := T(h[4])
	if lim := limit(t); uint64(n) > uint64(max(lim, 0)) {
		return t, nil, fmt.Errorf("%w: %v frame of %d bytes, limit %d", ErrTooLarge, t, n, lim)
	}
	p, err := readPayload(r, int(n))
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return t, nil, err
	}
	return t, p, nil
}

// growStep is the largest payload Read allocates whole from its header;
// a longer one grows, doubling, as its bytes arrive.
const growStep = 64 << 10

// readPayload reads n bytes from r. A payload up to growStep is allocated
// at once; a longer one grows with what arrives, so that a header
// promising a large frame, from a client that sends nothing after it
// (before it has even shown the job's token), costs growStep bytes, not
// the limit: memory stays within twice what the peer actually sent.
func readPayload(r io.Reader, n int) ([]byte, error) {
	if n <= growStep {
		p := make([]byte, n)
		_, err := io.ReadFull(r, p)
		return p, err
	}
	p := make([]byte, 0, growStep)
	for len(p) < n {
		if len(p) == cap(p) {
			p = slices.Grow(p, min(cap(p), n-len(p)))
		}
		m, err := io.ReadFull(r, p[len(p):min(cap(p), n)])
		p = p[:len(p)+m]
		if err != nil {
			return nil, err
		}
	}
	return p, nil
}
