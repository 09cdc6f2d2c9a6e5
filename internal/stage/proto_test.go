package stage

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/internal/fields"
)

// protoSamples holds one or more messages of every type, with fields at
// their limits where a limit exists.
func protoSamples() []Msg {
	long := strings.Repeat("x", maxString)
	return []Msg{
		&Hello{Version: Version, Token: "secret", Node: "node0"},
		&Hello{Version: 1<<32 - 1, Token: long, Node: ""},
		&Welcome{Server: "stage-1"},
		&Welcome{Server: "", Pending: []string{"ckpt.1", "", long}},
		&Refused{Reason: "wrong job token"},
		&Refused{},
		&Announce{Name: "ckpt.1", Manifest: []byte("{\"x\":1}\n\x00\xff"), Ranks: []int{0, 3, maxRanks - 1}},
		&Announce{Name: "ckpt.2", Manifest: bytes.Repeat([]byte{7}, MaxFrame+10)},
		&Pull{ID: 1<<64 - 1, Name: "ckpt.1", Rank: maxRanks - 1, File: "f0", Offset: 1<<63 - 1, Length: MaxChunk},
		&Pull{},
		&Data{ID: 42, Length: MaxChunk},
		&Data{},
		&PullError{ID: 7, Reason: "no such file"},
		&PullError{},
		&Status{Name: "ckpt.1", State: Pending},
		&Status{Name: "ckpt.1", State: Durable},
		&Status{Name: "ckpt.1", State: Committed},
		&Status{Name: "ckpt.1", State: Failed, Reason: long},
	}
}

// Every message survives Append then ReadMsg unchanged, one after the
// other on one stream; a Data frame's raw bytes follow it and are the
// caller's to read.
func TestProtoRoundTrip(t *testing.T) {
	var stream []byte
	msgs := protoSamples()
	for _, m := range msgs {
		stream = Append(stream, m)
		if d, ok := m.(*Data); ok {
			stream = append(stream, bytes.Repeat([]byte{0xAB}, min(d.Length, 100))...)
		}
	}
	br := bufio.NewReader(bytes.NewReader(stream))
	seen := map[Type]bool{}
	for _, want := range msgs {
		got, err := ReadMsg(br)
		if err != nil {
			t.Fatalf("%s: %v", want.Type(), err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("round trip of %s:\n got %+v\nwant %+v", want.Type(), got, want)
		}
		if d, ok := got.(*Data); ok {
			if _, err := io.CopyN(io.Discard, br, int64(min(d.Length, 100))); err != nil {
				t.Fatal(err)
			}
		}
		seen[got.Type()] = true
	}
	if _, err := ReadMsg(br); err != io.EOF {
		t.Fatalf("after the last frame: %v, want io.EOF", err)
	}
	for typ := THello; typ <= TStatus; typ++ {
		if !seen[typ] {
			t.Errorf("no sample of %s", typ)
		}
	}
}

// Decode refuses what is out of bounds or malformed, always with
// ErrProtocol.
func TestDecodeRefuses(t *testing.T) {
	uv := func(v uint64) []byte { return binary.AppendUvarint(nil, v) }
	cat := func(bs ...[]byte) []byte { return bytes.Join(bs, nil) }
	str := func(s string) []byte { return fields.AppendString(nil, s) }
	for _, tc := range []struct {
		name string
		typ  Type
		p    []byte
	}{
		{"unknown type", 0, nil},
		{"unknown type 99", 99, nil},
		{"empty Hello", THello, nil},
		{"Hello version too big", THello, cat(uv(1<<32), str("t"), str("n"))},
		{"Hello left over", THello, cat(uv(1), str("t"), str("n"), []byte{0})},
		{"Hello token too long", THello, cat(uv(1), str(strings.Repeat("t", maxString+1)), str("n"))},
		{"string runs past the end", TRefused, cat(uv(10), []byte("abc"))},
		{"truncated varint", TData, []byte{0x80}},
		{"varint overflow", TData, bytes.Repeat([]byte{0xff}, 11)},
		{"non-minimal varint", TData, cat([]byte{0x81, 0x00}, uv(1))},
		{"non-minimal zero", TPullError, cat([]byte{0x80, 0x80, 0x00}, str("r"))},
		{"Data too long", TData, cat(uv(1), uv(MaxChunk+1))},
		{"Pull too long", TPull, cat(uv(1), str("n"), uv(0), str("f"), uv(0), uv(MaxChunk+1))},
		{"Pull rank too big", TPull, cat(uv(1), str("n"), uv(maxRanks), str("f"), uv(0), uv(1))},
		{"Pull offset negative", TPull, cat(uv(1), str("n"), uv(0), str("f"), uv(1<<63), uv(1))},
		{"Welcome count lies", TWelcome, cat(str("s"), uv(1000), str("a"))},
		{"Announce ranks count lies", TAnnounce, cat(str("a"), str("m"), uv(50), uv(1))},
		{"Announce rank too big", TAnnounce, cat(str("a"), str("m"), uv(1), uv(maxRanks))},
		{"Announce manifest past the end", TAnnounce, cat(str("a"), uv(100), []byte("m"))},
		{"Status unknown state", TStatus, cat(str("c"), []byte{byte(Failed) + 1}, str(""))},
		{"Status truncated", TStatus, str("c")},
	} {
		m, err := Decode(tc.typ, tc.p)
		if err == nil || !errors.Is(err, ErrProtocol) {
			t.Errorf("%s: Decode = %+v, %v; want an ErrProtocol", tc.name, m, err)
		}
	}
}

// ReadMsg refuses a frame beyond its limit from the header alone: it does
// not allocate the frame nor read a byte of it.
func TestReadMsgRefusesOversized(t *testing.T) {
	for _, tc := range []struct {
		typ Type
		n   uint32
	}{
		{TPull, MaxFrame + 1},
		{THello, 1<<32 - 1},
		{TData, MaxFrame + 1},
		{TAnnounce, MaxManifest + MaxFrame + 1},
		{TAnnounce, 1<<32 - 1},
	} {
		var h [headerSize]byte
		binary.LittleEndian.PutUint32(h[:], tc.n)
		h[4] = byte(tc.typ)
		// The payload is there, as a liar's would be; ReadMsg must not
		// touch it.
		tail := []byte("the payload nobody should read")
		src := bytes.NewReader(append(h[:], tail...))
		br := bufio.NewReaderSize(src, 16)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		m, err := ReadMsg(br)
		runtime.ReadMemStats(&after)
		if !errors.Is(err, ErrProtocol) {
			t.Errorf("%s frame of %d bytes: ReadMsg = %v, %v; want ErrProtocol", tc.typ, tc.n, m, err)
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
			t.Errorf("%s frame of %d bytes: ReadMsg allocated %d bytes before refusing it", tc.typ, tc.n, grew)
		}
		rest, _ := io.ReadAll(br)
		if !bytes.Equal(rest, tail) {
			t.Errorf("%s frame of %d bytes: ReadMsg consumed payload bytes (left %q)", tc.typ, tc.n, rest)
		}
	}
	// The limits themselves: an Announce may exceed MaxFrame, up to its
	// manifest limit.
	a := &Announce{Name: "big", Manifest: bytes.Repeat([]byte{1}, 4*MaxFrame), Ranks: []int{0}}
	m, err := ReadMsg(bufio.NewReader(bytes.NewReader(Append(nil, a))))
	if err != nil || !reflect.DeepEqual(m, a) {
		t.Errorf("Announce of %d bytes: %v", len(a.Manifest), err)
	}
}

// A frame cut short is an unexpected EOF, header or payload.
func TestReadMsgTruncated(t *testing.T) {
	frame := Append(nil, &Pull{ID: 3, Name: "ckpt.1", File: "f0", Length: 10})
	for n := 1; n < len(frame); n++ {
		_, err := ReadMsg(bufio.NewReader(bytes.NewReader(frame[:n])))
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("frame cut at %d of %d bytes: %v, want io.ErrUnexpectedEOF", n, len(frame), err)
		}
	}
}

// FuzzDecode: Decode never panics, and whatever it accepts is the
// canonical encoding of what it returns: encoding the message again gives
// back the payload, byte for byte, and the type.
func FuzzDecode(f *testing.F) {
	for _, m := range protoSamples() {
		frame := Append(nil, m)
		if len(frame) < 1<<12 {
			f.Add(byte(m.Type()), frame[headerSize:])
		}
	}
	f.Add(byte(TData), []byte{0x80, 0x00, 0x01})
	f.Fuzz(func(t *testing.T, typ byte, p []byte) {
		m, err := Decode(Type(typ), p)
		if err != nil {
			if !errors.Is(err, ErrProtocol) {
				t.Fatalf("Decode error %v does not wrap ErrProtocol", err)
			}
			return
		}
		if m.Type() != Type(typ) {
			t.Fatalf("Decode(%s) returned a %s", Type(typ), m.Type())
		}
		frame := Append(nil, m)
		if got := frame[headerSize:]; !bytes.Equal(got, p) {
			t.Fatalf("%s %+v re-encodes to\n%x\nnot the payload\n%x", m.Type(), m, got, p)
		}
		if n := binary.LittleEndian.Uint32(frame); int(n) != len(p) || frame[4] != typ {
			t.Fatalf("header %x for a payload of %d bytes", frame[:headerSize], len(p))
		}
	})
}

// A Status carries its State as one byte, the flush.State value: the
// bytes of every state are pinned here, since the state type is the
// flush's and the protocol must not change with it.
func TestStatusBytes(t *testing.T) {
	for st, b := range map[State]byte{Pending: 0, Durable: 1, Committed: 2, Failed: 3} {
		got := Append(nil, &Status{Name: "c", State: st, Reason: "r"})
		want := []byte{5, 0, 0, 0, byte(TStatus), 1, 'c', b, 1, 'r'}
		if !bytes.Equal(got, want) {
			t.Errorf("Status %s: % x, want % x", st, got, want)
		}
	}
	if _, err := Decode(TStatus, []byte{1, 'c', byte(Failed) + 1, 0}); !errors.Is(err, ErrProtocol) {
		t.Errorf("a state beyond Failed decoded: %v", err)
	}
}
