package framing

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// typ stands for a protocol's message type: Read names it with its String.
type typ uint8

func (t typ) String() string { return "T" + strconv.Itoa(int(t)) }

func frameOf(t uint8, payload string) []byte {
	b := Begin(nil, t)
	b = append(b, payload...)
	if !End(b, 0) {
		panic("End refused a small frame")
	}
	return b
}

// The header is the length of the payload, little endian, then the type;
// Split and Read give back what Begin and End framed.
func TestRoundTrip(t *testing.T) {
	b := []byte("prefix")
	start := len(b)
	b = Begin(b, 7)
	b = append(b, "hello"...)
	if !End(b, start) {
		t.Fatal("End refused a small frame")
	}
	if want := "prefix\x05\x00\x00\x00\x07hello"; string(b) != want {
		t.Fatalf("framed %q, want %q", b, want)
	}
	ty, p, err := Split[typ](b[start:])
	if err != nil || ty != 7 || string(p) != "hello" {
		t.Fatalf("Split = %v, %q, %v", ty, p, err)
	}
	stream := append(frameOf(1, ""), frameOf(2, strings.Repeat("x", 300))...)
	r := bufio.NewReader(bytes.NewReader(stream))
	for _, want := range []struct {
		t typ
		n int
	}{{1, 0}, {2, 300}} {
		ty, p, err := Read(r, func(typ) int { return 300 })
		if err != nil || ty != want.t || len(p) != want.n {
			t.Fatalf("Read = %v, %d bytes, %v; want %v, %d bytes", ty, len(p), err, want.t, want.n)
		}
	}
	if _, _, err := Read(r, func(typ) int { return 300 }); err != io.EOF {
		t.Fatalf("Read at the end = %v, want io.EOF", err)
	}
}

// A frame over the limit of its type is refused from its header alone:
// nothing of the payload is read or allocated, and the error names the
// type and sizes.
func TestReadRefusesOversized(t *testing.T) {
	limit := func(t typ) int {
		switch t {
		case 1:
			return 10
		case 2:
			return -1
		}
		return 1 << 30
	}
	for _, tc := range []struct {
		t    uint8
		n    uint32
		want string
	}{
		{1, 11, "frame too large: T1 frame of 11 bytes, limit 10"},
		{2, 1, "frame too large: T2 frame of 1 bytes, limit -1"},
		{3, 1<<32 - 1, "frame too large: T3 frame of 4294967295 bytes, limit 1073741824"},
	} {
		h := Begin(nil, tc.t)
		h[0], h[1], h[2], h[3] = byte(tc.n), byte(tc.n>>8), byte(tc.n>>16), byte(tc.n>>24)
		tail := []byte("the payload nobody should read")
		r := bufio.NewReaderSize(bytes.NewReader(append(h, tail...)), 16)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, _, err := Read(r, limit)
		runtime.ReadMemStats(&after)
		if !errors.Is(err, ErrTooLarge) || err.Error() != tc.want {
			t.Errorf("Read = %v, want %q", err, tc.want)
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
			t.Errorf("Read allocated %d bytes before refusing a frame of %d", grew, tc.n)
		}
		if rest, _ := io.ReadAll(r); !bytes.Equal(rest, tail) {
			t.Errorf("Read consumed payload bytes (left %q)", rest)
		}
	}
}

// A stream that ends inside a frame, header or payload, is cut short.
func TestReadTruncated(t *testing.T) {
	f := frameOf(1, "abc")
	for _, n := range []int{1, HeaderSize - 1, HeaderSize, len(f) - 1} {
		_, _, err := Read(bytes.NewReader(f[:n]), func(typ) int { return 100 })
		if err != io.ErrUnexpectedEOF {
			t.Errorf("%d of %d bytes: Read = %v, want io.ErrUnexpectedEOF", n, len(f), err)
		}
	}
}

func TestSplitMalformed(t *testing.T) {
	for _, tc := range []struct {
		in   []byte
		want string
	}{
		{nil, "frame of 0 bytes is shorter than its header"},
		{[]byte{1, 0, 0, 0}, "frame of 4 bytes is shorter than its header"},
		{append(frameOf(1, "a"), 0), "header says 1 payload bytes, frame has 2"},
		{frameOf(1, "ab")[:6], "header says 2 payload bytes, frame has 1"},
	} {
		if _, _, err := Split[typ](tc.in); err == nil || err.Error() != tc.want {
			t.Errorf("Split(%x) = %v, want %q", tc.in, err, tc.want)
		}
	}
}

// A header that promises a long payload the peer never sends costs what
// was sent, not what was promised: a client that has not shown the job's
// token cannot make a server hold its frame limit per connection.
func TestReadAllocatesAsPayloadArrives(t *testing.T) {
	const promised = 256 << 20
	h := Begin(nil, 1)
	binary.LittleEndian.PutUint32(h, promised)
	sent := append(h, bytes.Repeat([]byte{'x'}, 100<<10)...)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, _, err := Read(bytes.NewReader(sent), func(typ) int { return promised })
	runtime.ReadMemStats(&after)
	if err != io.ErrUnexpectedEOF {
		t.Fatalf("Read = %v, want io.ErrUnexpectedEOF", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 4<<20 {
		t.Errorf("Read allocated %d bytes for a frame of which %d were sent", grew, len(sent))
	}
}

// Payloads longer than the step Read allocates at once come back whole
// and exact, whatever their length against the doubling.
func TestReadLongPayloads(t *testing.T) {
	for _, n := range []int{growStep, growStep + 1, 2 * growStep, 3*growStep + 7, 1 << 20} {
		payload := make([]byte, n)
		for i := range payload {
			payload[i] = byte(i * 7)
		}
		f := frameOf(3, string(payload))
		ty, p, err := Read(bufio.NewReader(bytes.NewReader(f)), func(typ) int { return n })
		if err != nil || ty != 3 || !bytes.Equal(p, payload) {
			t.Fatalf("%d bytes: Read = %v, %d bytes, %v", n, ty, len(p), err)
		}
	}
}
