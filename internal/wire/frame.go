package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/ckpt/ckpt/internal/framing"
)

// WriteFrame encodes m and writes its frame to w in one Write call.
func WriteFrame(w io.Writer, m Msg) error {
	b, err := Append(nil, m)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// ReadFrame reads one frame from r and decodes it. A frame whose payload
// exceeds limit bytes is refused with an error wrapping ErrTooLarge before
// any of it is read or allocated; the stream is then out of step and must be
// abandoned. At a clean end of stream between frames ReadFrame returns
// io.EOF; a stream ending inside a frame gives io.ErrUnexpectedEOF. The
// message owns its memory: every call allocates a fresh buffer.
//
// r should be buffered (a *bufio.Reader): ReadFrame makes two reads per
// frame.
func ReadFrame(r io.Reader, limit int) (Msg, error) {
	t, p, err := framing.Read(r, func(Type) int { return limit })
	if err != nil {
		if errors.Is(err, ErrTooLarge) {
			err = fmt.Errorf("wire: %w", err)
		}
		return nil, err
	}
	return decodePayload(t, p)
}

// ResultLimit is the largest payload of a Result with n entries of at most
// maxData bytes each: the frame limit a client needs to read all-gathers of
// a job of n ranks whose contributions are bounded by maxData.
func ResultLimit(n, maxData int) int {
	return binary.MaxVarintLen64 + 1 + binary.MaxVarintLen64 +
		n*(binary.MaxVarintLen64+maxData)
}
