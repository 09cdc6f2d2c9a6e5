package wire

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"reflect"
	"strings"
	"testing"
)

// samples holds one message of every type, with edge values.
func samples() []Msg {
	return []Msg{
		&Hello{Token: "s3cret", Incarnation: 7, Node: "n1", Ranks: []int32{0, 1, 2, 1 << 30}},
		&Hello{},
		&Welcome{Size: 16384, Incarnation: 1 << 40, Nodes: 64},
		&Refused{Reason: "wrong token"},
		&Collective{Seq: 1, Kind: Barrier, Contribs: []Contrib{{Rank: 3, Data: []byte{}}}},
		&Collective{Seq: 1<<64 - 1, Kind: AllGather, Contribs: []Contrib{{Rank: 0, Data: []byte("a")}, {Rank: 1, Data: []byte("bc")}}},
		&Collective{Seq: 2, Kind: Decide},
		&Result{Seq: 9, Kind: Barrier},
		&Result{Seq: 9, Kind: Commit, Data: [][]byte{AppendVote(nil, "ck1", true), {}, []byte("z")}},
		&Publish{Req: 1, Key: "addr/3", Value: []byte("10.0.0.1:4000")},
		&Publish{Req: 2, Key: strings.Repeat("k", MaxKey), Value: bytes.Repeat([]byte{1}, MaxValue)},
		&Lookup{Req: 3, Key: "addr/4", Wait: true},
		&Lookup{Req: 4, Key: ""},
		&Value{Req: 3, Key: "addr/4", Value: []byte("x"), Found: true},
		&Value{Req: 4, Key: "nope"},
		&Ack{Req: 1},
		&Heartbeat{},
		&Leave{Ranks: []int32{5}},
		&Fail{Ranks: []int32{5, 6}, Reason: "heartbeat timeout"},
		&Abort{Reason: "rank 5 failed"},
		&Error{Req: 2, Reason: "key too long"},
	}
}

func TestRoundTrip(t *testing.T) {
	for _, m := range samples() {
		frame, err := Encode(m)
		if err != nil {
			t.Fatalf("Encode(%v): %v", m, err)
		}
		got, err := Decode(frame)
		if err != nil {
			t.Fatalf("Decode(Encode(%v)): %v", m, err)
		}
		again, err := Encode(got)
		if err != nil || !bytes.Equal(again, frame) {
			t.Fatalf("%v: re-encoding differs (%v)", m, err)
		}
		if !sameMsg(got, m) {
			t.Fatalf("Decode(Encode(m)) = %v, want %v", got, m)
		}
	}
}

// sameMsg compares messages treating nil and empty slices alike: the
// encoding does not distinguish them.
func sameMsg(a, b Msg) bool {
	fa, err1 := Encode(a)
	fb, err2 := Encode(b)
	return err1 == nil && err2 == nil && bytes.Equal(fa, fb) && reflect.TypeOf(a) == reflect.TypeOf(b)
}

func TestStream(t *testing.T) {
	var buf bytes.Buffer
	for _, m := range samples() {
		if err := WriteFrame(&buf, m); err != nil {
			t.Fatal(err)
		}
	}
	r := bufio.NewReader(&buf)
	for _, want := range samples() {
		got, err := ReadFrame(r, DefaultLimit)
		if err != nil {
			t.Fatalf("ReadFrame for %v: %v", want, err)
		}
		if !sameMsg(got, want) {
			t.Fatalf("ReadFrame = %v, want %v", got, want)
		}
	}
	if _, err := ReadFrame(r, DefaultLimit); err != io.EOF {
		t.Fatalf("ReadFrame at end = %v, want io.EOF", err)
	}
}

func TestReadFrameErrors(t *testing.T) {
	ok, _ := Encode(&Publish{Req: 1, Key: "k", Value: []byte("0123456789")})
	for _, tc := range []struct {
		name  string
		in    []byte
		limit int
		want  error
	}{
		{"over limit", ok, 5, ErrTooLarge},
		{"header cut", ok[:3], DefaultLimit, io.ErrUnexpectedEOF},
		{"payload cut", ok[:len(ok)-1], DefaultLimit, io.ErrUnexpectedEOF},
		{"huge length", []byte{0xff, 0xff, 0xff, 0xff, 1}, DefaultLimit, ErrTooLarge},
		{"negative limit", ok, -1, ErrTooLarge},
		{"bad payload", []byte{1, 0, 0, 0, byte(TypeAck), 0x80}, DefaultLimit, ErrMalformed},
	} {
		_, err := ReadFrame(bytes.NewReader(tc.in), tc.limit)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: ReadFrame = %v, want %v", tc.name, err, tc.want)
		}
	}
}

// frame builds a frame of type t around payload p.
func frame(t Type, p ...byte) []byte {
	b := binary.LittleEndian.AppendUint32(nil, uint32(len(p)))
	return append(append(b, byte(t)), p...)
}

func TestDecodeMalformed(t *testing.T) {
	long := func(n int) []byte {
		return append(binary.AppendUvarint(nil, uint64(n)), bytes.Repeat([]byte{'a'}, n)...)
	}
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	for _, tc := range []struct {
		name  string
		frame []byte
		want  string // in the error message
	}{
		{"empty", nil, "shorter than its header"},
		{"length too big", append(frame(TypeAck, 1), 0), "header says 1 payload bytes, frame has 2"},
		{"length too small", []byte{2, 0, 0, 0, byte(TypeAck), 1}, "header says 2 payload bytes, frame has 1"},
		{"type zero", frame(0), "unknown message type 0"},
		{"type unknown", frame(99), "unknown message type 99"},
		{"trailing", frame(TypeHeartbeat, 0), "1 trailing bytes"},
		{"ack truncated", frame(TypeAck), "req: truncated"},
		{"varint not minimal", frame(TypeAck, 0x81, 0x00), "non-minimal varint"},
		{"varint overflow", frame(TypeAck, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f), "overflows"},
		{"token too long", frame(TypeHello, long(MaxToken+1)...), "token: length 257 exceeds limit 256"},
		{"key too long", frame(TypePublish, cat([]byte{1}, long(MaxKey+1))...), "key: length 257 exceeds limit 256"},
		{"value too long", frame(TypePublish, cat([]byte{1, 1, 'k'}, long(MaxValue+1))...), "value: length 65537 exceeds limit 65536"},
		{"string past end", frame(TypeRefused, 5, 'a'), "reason: length 5 exceeds 1 remaining bytes"},
		{"too many ranks", frame(TypeLeave, 4, 1, 2, 3), "ranks: count 4 exceeds what 3 remaining bytes can hold"},
		{"huge rank count", frame(TypeLeave, 0xff, 0xff, 0xff, 0xff, 0x0f), "count 4294967295 exceeds"},
		{"rank over int32", frame(TypeLeave, 1, 0x80, 0x80, 0x80, 0x80, 0x08), "ranks: 2147483648 exceeds 2147483647"},
		{"too many contribs", frame(TypeCollective, 1, byte(Barrier), 2, 0, 0, 1), "count 2 exceeds what 3 remaining bytes"},
		{"bad kind", frame(TypeCollective, 1, 9, 0), "unknown collective kind 9"},
		{"kind zero", frame(TypeResult, 1, 0, 0), "unknown collective kind 0"},
		{"contrib data past end", frame(TypeCollective, 1, byte(AllGather), 1, 0, 9), "contribution data: length 9 exceeds 0 remaining"},
		{"bad bool", frame(TypeLookup, 1, 1, 'k', 2), "wait: boolean byte 2"},
		{"value not found with bytes", frame(TypeValue, 1, 1, 'k', 0, 1, 'x'), "2 trailing bytes"},
		{"welcome size too big", frame(TypeWelcome, 0x80, 0x80, 0x80, 0x80, 0x08, 0, 0), "size: 2147483648 exceeds"},
	} {
		_, err := Decode(tc.frame)
		if err == nil {
			t.Errorf("%s: Decode accepted %x", tc.name, tc.frame)
			continue
		}
		if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Decode error %q, want ErrMalformed containing %q", tc.name, err, tc.want)
		}
	}
}

func TestEncodeInvalid(t *testing.T) {
	for _, m := range []Msg{
		&Hello{Token: strings.Repeat("t", MaxToken+1)},
		&Hello{Ranks: []int32{-1}},
		&Hello{Ranks: make([]int32, MaxHelloRanks+1)},
		&Welcome{Size: -1},
		&Collective{Seq: 1, Kind: 0},
		&Collective{Seq: 1, Kind: Barrier, Contribs: []Contrib{{Rank: -2}}},
		&Result{Kind: 7},
		&Publish{Key: strings.Repeat("k", MaxKey+1)},
		&Publish{Key: "k", Value: make([]byte, MaxValue+1)},
		&Value{Key: "k", Value: []byte("x")},
		&Abort{Reason: strings.Repeat("r", MaxReason+1)},
	} {
		buf := []byte("keep")
		out, err := Append(buf, m)
		if !errors.Is(err, ErrMalformed) {
			t.Errorf("Append(%v) = %v, want ErrMalformed", m, err)
		}
		if string(out) != "keep" {
			t.Errorf("Append(%v) changed buf on error: %q", m, out)
		}
	}
}

func TestVote(t *testing.T) {
	for _, ok := range []bool{true, false} {
		name, got, err := ParseVote(AppendVote(nil, "ckpt-0042", ok))
		if err != nil || name != "ckpt-0042" || got != ok {
			t.Fatalf("ParseVote = %q %v %v", name, got, err)
		}
	}
	for _, bad := range [][]byte{nil, {2, 'a'}, {1, 0xff}} {
		if _, _, err := ParseVote(bad); !errors.Is(err, ErrMalformed) {
			t.Errorf("ParseVote(%x) = %v", bad, err)
		}
	}
}

func TestFormatRanks(t *testing.T) {
	many := make([]int32, 40)
	for i := range many {
		many[i] = int32(2 * i)
	}
	for _, tc := range []struct {
		in   []int32
		want string
	}{
		{nil, "[]"},
		{[]int32{4}, "[4]"},
		{[]int32{0, 1, 2, 3, 7, 9, 10}, "[0-3 7 9-10]"},
		{[]int32{3, 2, 1}, "[3 2 1]"},
		{many, "[0 2 4 6 8 10 12 14 16 18 20 22 24 26 28 30 …24 more]"},
	} {
		if got := FormatRanks(tc.in); got != tc.want {
			t.Errorf("FormatRanks(%v) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestString(t *testing.T) {
	// The token must never reach a log.
	if s := (&Hello{Token: "s3cret", Node: "n1", Ranks: []int32{0, 1}}).String(); strings.Contains(s, "s3cret") {
		t.Fatalf("Hello.String leaks the token: %s", s)
	}
	for _, m := range samples() {
		if !strings.HasPrefix(m.String(), m.Type().String()+"{") {
			t.Errorf("%T.String() = %q", m, m.String())
		}
	}
}

// The largest Hello there can be, every field at its limit and every rank
// at its longest, fits HelloLimit: a server that reads a connection's
// first frames within it refuses no client of the job.
func TestHelloLimit(t *testing.T) {
	h := &Hello{Token: strings.Repeat("t", MaxToken), Incarnation: 1<<64 - 1,
		Node: strings.Repeat("n", MaxNode), Ranks: make([]int32, MaxHelloRanks)}
	for i := range h.Ranks {
		h.Ranks[i] = math.MaxInt32
	}
	b, err := Encode(h)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(b) - HeaderSize; got > HelloLimit {
		t.Fatalf("largest Hello has %d payload bytes, HelloLimit %d", got, HelloLimit)
	}
	if HelloLimit >= DefaultLimit {
		t.Fatalf("HelloLimit %d is not below the post-Hello limit %d", HelloLimit, DefaultLimit)
	}
}

func TestResultLimit(t *testing.T) {
	const n, max = 300, 200
	r := &Result{Seq: 1<<64 - 1, Kind: AllGather, Data: make([][]byte, n)}
	for i := range r.Data {
		r.Data[i] = make([]byte, max)
	}
	b, err := Encode(r)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(b) - HeaderSize; got > ResultLimit(n, max) {
		t.Fatalf("payload %d exceeds ResultLimit %d", got, ResultLimit(n, max))
	}
}

// A Collective or Result prints its round and its first eight entries.
func TestStringLong(t *testing.T) {
	c := &Collective{Seq: 3, Kind: AllGather}
	r := &Result{Seq: 3, Kind: AllGather}
	for i := range 10 {
		d := []byte(strings.Repeat(string(rune('a'+i)), i+12))
		c.Contribs = append(c.Contribs, Contrib{Rank: int32(i), Data: d})
		r.Data = append(r.Data, d)
	}
	if got, want := c.String(), `Collective{seq=3 allgather 0:"aaaaaaaaaaaa" 1:"bbbbbbbbbbbbb" 2:"cccccccccccccc" 3:"ddddddddddddddd" 4:"eeeeeeeeeeeeeeee" 5:"ffffffffffffffff"… 6:"gggggggggggggggg"… 7:"hhhhhhhhhhhhhhhh"… …2 more}`; got != want {
		t.Errorf("Collective.String() = %s\nwant %s", got, want)
	}
	if got, want := r.String(), `Result{seq=3 allgather "aaaaaaaaaaaa" "bbbbbbbbbbbbb" "cccccccccccccc" "ddddddddddddddd" "eeeeeeeeeeeeeeee" "ffffffffffffffff"… "gggggggggggggggg"… "hhhhhhhhhhhhhhhh"… …2 more}`; got != want {
		t.Errorf("Result.String() = %s\nwant %s", got, want)
	}
}
