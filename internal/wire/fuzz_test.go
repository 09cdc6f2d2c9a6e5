package wire

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

func addSeeds(f *testing.F) {
	for _, m := range samples() {
		b, err := Encode(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)-1])
	}
	f.Add([]byte{})
	f.Add(frame(TypeLeave, 0xff, 0xff, 0xff, 0xff, 0x0f))
}

// FuzzDecode: Decode never panics; it either fails with a one-line error
// wrapping ErrMalformed, or returns a message whose encoding is exactly the
// input (the encoding is canonical) and which decodes back to itself.
func FuzzDecode(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		m, err := Decode(in)
		if err != nil {
			if !errors.Is(err, ErrMalformed) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("bad error %q", err)
			}
			return
		}
		enc, err := Encode(m)
		if err != nil {
			t.Fatalf("Encode of decoded %v: %v", m, err)
		}
		if !bytes.Equal(enc, in) {
			t.Fatalf("Encode(Decode(x)) != x\n%x\n%x", enc, in)
		}
		back, err := Decode(enc)
		if err != nil || !sameMsg(back, m) {
			t.Fatalf("Decode(Encode(m)) = %v, %v; want %v", back, err, m)
		}
	})
}

// FuzzReadFrame reads frames from an arbitrary stream with a small limit:
// every frame read re-encodes to exactly the bytes consumed, and the first
// error ends the stream with io.EOF (only at a frame boundary),
// io.ErrUnexpectedEOF, ErrTooLarge or ErrMalformed.
func FuzzReadFrame(f *testing.F) {
	addSeeds(f)
	var all []byte
	for _, m := range samples()[:6] {
		all, _ = Append(all, m)
	}
	f.Add(all)
	f.Fuzz(func(t *testing.T, in []byte) {
		const limit = 4096
		src := bytes.NewReader(in)
		r := bufio.NewReader(src)
		consumed := 0
		for {
			m, err := ReadFrame(r, limit)
			if err != nil {
				switch {
				case err == io.EOF:
					if consumed != len(in) {
						t.Fatalf("io.EOF after %d of %d bytes", consumed, len(in))
					}
				case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, ErrTooLarge), errors.Is(err, ErrMalformed):
				default:
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			enc, err := Encode(m)
			if err != nil {
				t.Fatalf("Encode(%v): %v", m, err)
			}
			if len(enc)-HeaderSize > limit {
				t.Fatalf("frame of %d bytes passed limit %d", len(enc), limit)
			}
			if !bytes.Equal(enc, in[consumed:consumed+len(enc)]) {
				t.Fatalf("frame at %d re-encodes differently", consumed)
			}
			consumed += len(enc)
		}
	})
}
