package manifest

import (
	"bytes"
	"errors"
	"io"
	"math/rand"
	"strings"
	"testing"
	"testing/iotest"
	"testing/quick"
)

func TestHashKnownValue(t *testing.T) {
	// XXH3_128bits("") from xxHash's sanity table is
	// {low64 0x6001C324468D497F, high64 0x99AA06D3014798D8}; the canonical
	// form (and xxhsum -H2) prints the high half first.
	if got := HashBytes(nil).String(); got != "99aa06d3014798d86001c324468d497f" {
		t.Errorf("HashBytes(nil) = %s", got)
	}
}

// TestHasherChunking: any split of the input into writes gives HashBytes.
func TestHasherChunking(t *testing.T) {
	check := func(data []byte, cuts []uint16) bool {
		h := NewHasher()
		rest := data
		for _, c := range cuts {
			n := int(c) % (len(rest) + 1)
			h.Write(rest[:n])
			rest = rest[n:]
		}
		h.WriteString(string(rest))
		want := HashBytes(data)
		return h.Sum128() == want && bytes.Equal(h.Sum([]byte("x")), append([]byte("x"), want[:]...))
	}
	if err := quick.Check(check, nil); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewSource(1))
	for range 300 {
		data := make([]byte, r.Intn(5000))
		r.Read(data)
		cuts := make([]uint16, r.Intn(8))
		for i := range cuts {
			cuts[i] = uint16(r.Intn(1500))
		}
		if !check(data, cuts) {
			t.Fatalf("chunked hash of %d bytes with cuts %v differs", len(data), cuts)
		}
	}
	h := NewHasher()
	h.Write([]byte("junk"))
	h.Reset()
	if h.Sum128() != HashBytes(nil) || h.Size() != HashSize || h.BlockSize() <= 0 {
		t.Error("Reset/Size/BlockSize")
	}
}

func TestHashText(t *testing.T) {
	h := HashBytes([]byte("ckpt"))
	text, _ := h.MarshalText()
	var back Hash
	if err := back.UnmarshalText(text); err != nil || back != h || string(text) != h.String() {
		t.Errorf("text round trip: %s → %v, %v", text, back, err)
	}
	for _, bad := range []string{"", "abc", strings.ToUpper(h.String()), h.String() + "0", "g" + h.String()[1:]} {
		if _, err := ParseHash(bad); err == nil {
			t.Errorf("ParseHash(%q) accepted", bad)
		}
	}
}

// readers wraps a source in ways that stress the VerifyingReader's
// bookkeeping: one byte at a time, half reads, data together with EOF.
var readers = map[string]func(io.Reader) io.Reader{
	"plain":   func(r io.Reader) io.Reader { return r },
	"onebyte": iotest.OneByteReader,
	"half":    iotest.HalfReader,
	"dataerr": iotest.DataErrReader,
}

// TestVerifyingReaderQuick compares the VerifyingReader with the obvious
// rule: reading to EOF succeeds iff the content is exactly the expected one;
// otherwise the error wraps ErrCorrupt. The bytes delivered are always a
// prefix of the source.
func TestVerifyingReaderQuick(t *testing.T) {
	f := func(data []byte, mutation uint8, seed int64) bool {
		r := rand.New(rand.NewSource(seed))
		content := bytes.Clone(data)
		switch mutation % 5 {
		case 1: // flip a byte
			if len(content) > 0 {
				content[r.Intn(len(content))] ^= byte(1 + r.Intn(255))
			}
		case 2: // truncate
			if len(content) > 0 {
				content = content[:r.Intn(len(content))]
			}
		case 3: // extend
			content = append(content, byte(r.Intn(256)))
		case 4: // extend by a lot
			content = append(content, make([]byte, 1+r.Intn(100))...)
		}
		match := bytes.Equal(content, data)
		for name, wrap := range readers {
			v := newVerifyingReader(wrap(bytes.NewReader(content)), "f", int64(len(data)), HashBytes(data))
			got, err := io.ReadAll(v)
			if match != (err == nil) || !match && !errors.Is(err, ErrCorrupt) || !bytes.HasPrefix(content, got) || match != v.Verified() {
				t.Logf("%s: data %d bytes, content %d bytes (mutation %d): err %v, got %d bytes, verified %v",
					name, len(data), len(content), mutation%5, err, len(got), v.Verified())
				return false
			}
			if _, again := v.Read(make([]byte, 1)); (again == io.EOF) != match {
				t.Logf("%s: error not sticky: %v", name, again)
				return false
			}
		}
		return true
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 2000}); err != nil {
		t.Fatal(err)
	}
}

func TestVerifyingReaderCases(t *testing.T) {
	data := []byte("checkpoint data")
	good := HashBytes(data)

	// A conforming io.Reader when the content is right.
	if err := iotest.TestReader(newVerifyingReader(bytes.NewReader(data), "f", int64(len(data)), good), data); err != nil {
		t.Error(err)
	}
	// io.ReadFull of exactly the expected size still checks the hash.
	bad := bytes.Clone(data)
	bad[3] ^= 1
	buf := make([]byte, len(data))
	_, err := io.ReadFull(newVerifyingReader(bytes.NewReader(bad), "rank3/state", int64(len(data)), good), buf)
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "rank3/state: corrupt: content hash") {
		t.Errorf("ReadFull of corrupt content: %v", err)
	}
	for _, tc := range []struct {
		content []byte
		size    int64
		want    string
	}{
		{data[:5], int64(len(data)), "corrupt: 5 bytes, want 15"},
		{append(bytes.Clone(data), 'x'), int64(len(data)), "corrupt: longer than the expected 15 bytes"},
		{nil, -1, "negative expected size -1"},
	} {
		_, err := io.ReadAll(newVerifyingReader(bytes.NewReader(tc.content), "f", tc.size, good))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("content %q size %d: %v, want %q", tc.content, tc.size, err, tc.want)
		}
	}
	// Empty content, right and wrong hash.
	if b, err := io.ReadAll(newVerifyingReader(strings.NewReader(""), "e", 0, HashBytes(nil))); err != nil || len(b) != 0 {
		t.Errorf("empty: %q %v", b, err)
	}
	if _, err := io.ReadAll(newVerifyingReader(strings.NewReader(""), "e", 0, good)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("empty with wrong hash: %v", err)
	}
	// Other errors of the source pass through unchanged.
	boom := errors.New("boom")
	if _, err := io.ReadAll(newVerifyingReader(iotest.ErrReader(boom), "f", 3, good)); err != boom {
		t.Errorf("source error: %v", err)
	}
}
