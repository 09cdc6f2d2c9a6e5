package manifest

import (
	"bytes"
	"errors"
	"math/rand"
	"reflect"
	"strings"
	"testing"
	"testing/quick"
)

type randomM struct{ M *Manifest }

func (randomM) Generate(r *rand.Rand, _ int) reflect.Value {
	return reflect.ValueOf(randomM{randomManifest(r)})
}

func TestRoundTripQuick(t *testing.T) {
	f := func(x randomM) bool {
		data, err := Encode(x.M)
		if err != nil {
			t.Log(err)
			return false
		}
		back, err := Decode(data)
		if err != nil {
			t.Logf("Decode(Encode(m)): %v\n%s", err, data)
			return false
		}
		again, err := Encode(back)
		return err == nil && sameManifest(back, x.M) && bytes.Equal(again, data)
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 2000}); err != nil {
		t.Fatal(err)
	}
}

// TestEveryFlipDetected flips every byte of an encoded manifest in several
// ways and truncates it at every length: Decode must report ErrCorrupt.
func TestEveryFlipDetected(t *testing.T) {
	data, err := Encode(sample())
	if err != nil {
		t.Fatal(err)
	}
	for i := range data {
		for _, mask := range []byte{0x01, 0x20, 0x80, 0xff} {
			bad := bytes.Clone(data)
			bad[i] ^= mask
			if _, err := Decode(bad); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("byte %d ^ %#x: Decode error %v, want ErrCorrupt", i, mask, err)
			}
		}
	}
	for n := range len(data) {
		if _, err := Decode(data[:n]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("truncated to %d bytes: %v", n, err)
		}
	}
	if _, err := Decode(append(bytes.Clone(data), '\n')); !errors.Is(err, ErrCorrupt) {
		t.Errorf("extra newline: %v", err)
	}
}

// reseal replaces the trailer of a body so that Decode gets past the
// checksum and exercises the strict parser.
func reseal(body string) []byte { return seal([]byte(body)) }

func TestDecodeStrict(t *testing.T) {
	data, _ := Encode(sample())
	body := string(data[:len(data)-trailerLen])
	hash := HashBytes([]byte("x")).String()
	for _, tc := range []struct {
		name string
		body string
		want string
		is   error
	}{
		{"version", strings.Replace(body, `"version": 1`, `"version": 2`, 1), "unsupported manifest version 2, this build reads version 1", ErrVersion},
		{"no version", strings.Replace(body, `"version": 1,`, ``, 1), "no version field", ErrInvalid},
		{"unknown field", strings.Replace(body, `"id": 7,`, `"id": 7, "owner": "me",`, 1), `unknown field "owner"`, ErrInvalid},
		{"unknown file field", strings.Replace(body, `"name":"aux",`, `"name":"aux","mode":6,`, 1), `unknown field "mode"`, ErrInvalid},
		{"wrong type", strings.Replace(body, `"ranks": 4`, `"ranks": "4"`, 1), "cannot unmarshal string", ErrInvalid},
		{"not json", "hello\n", "invalid character", ErrInvalid},
		{"trailing data", body + "{}\n", "data after the JSON object", ErrInvalid},
		{"negative size", strings.Replace(body, `"size":0`, `"size":-1`, 1), `file "aux" has negative size -1`, ErrInvalid},
		{"bad hash", strings.Replace(body, hash, strings.ToUpper(hash), 1), "not a lowercase hex digit", ErrInvalid},
		{"short hash", strings.Replace(body, hash, hash[:30], 1), "want 32 hex digits, got 30 characters", ErrInvalid},
		{"duplicate file", strings.Replace(body, `"name":"aux"`, `"name":"state"`, 1), `file "state" repeats the name of a file`, ErrInvalid},
		{"rank out of range", strings.Replace(body, `"sets": [`+"\n"+`    [0,1,2,3]`, `"sets": [`+"\n"+`    [0,1,2,7]`, 1), "set 0: rank 7 out of range [0, 4)", ErrInvalid},
		{"part rank out of range", strings.Replace(body, `{"rank":3,`, `{"rank":-3,`, 1), "part 3: rank -3 out of range [0, 4)", ErrInvalid},
		{"bad file name", strings.Replace(body, `"name":"aux"`, `"name":"../aux"`, 1), `invalid name "../aux": starts with '.'`, ErrBadName},
		{"indentation", strings.Replace(body, `  "id": 7`, ` "id": 7`, 1), "not in canonical form (line 4 differs", ErrInvalid},
		{"key case", strings.Replace(body, `"id": 7`, `"ID": 7`, 1), "not in canonical form", ErrInvalid},
		{"duplicate key", strings.Replace(body, `"id": 7,`, `"id": 8, "id": 7,`, 1), "not in canonical form", ErrInvalid},
		{"escaped letter", strings.Replace(body, `"step-100"`, `"\u0073tep-100"`, 1), "not in canonical form", ErrInvalid},
		{"local time", strings.Replace(body, `"2025-03-01T12:00:00.000000005Z"`, `"2025-03-01T13:00:00.000000005+01:00"`, 1), "not in canonical form", ErrInvalid},
		{"empty list", strings.Replace(body, `"hash":"`+hash+`"}]}`, `"hash":"`+hash+`"}],"parity":[]}`, 1), "not in canonical form", ErrInvalid},
	} {
		if tc.body == body {
			t.Errorf("%s: edit did not apply", tc.name)
			continue
		}
		_, err := Decode(reseal(tc.body))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, tc.is) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: Decode error %v, want %q (%v)", tc.name, err, tc.want, tc.is)
		}
	}
	// Whatever is accepted re-encodes to the same bytes.
	m, err := Decode(data)
	if err != nil || !sameManifest(m, sample()) {
		t.Fatalf("Decode(sample) = %v", err)
	}
}

func TestDecodeTrailer(t *testing.T) {
	data, _ := Encode(sample())
	body := data[:len(data)-trailerLen]
	for _, tc := range []struct {
		data []byte
		want string
	}{
		{nil, "manifest of 0 bytes has no checksum line"},
		{body, `last line is not "xxh3-128 <hex>"`},
		{append(bytes.Clone(body), "sha256 "+strings.Repeat("0", 32)+"\n"...), `last line is not "xxh3-128 <hex>"`},
		{append(bytes.Clone(body), trailerPrefix+strings.Repeat("G", 32)+"\n"...), "checksum line: hash"},
		{append(bytes.Clone(body), trailerPrefix+strings.Repeat("0", 32)+"\n"...), "manifest checksum 00000000000000000000000000000000 does not match its content"},
	} {
		_, err := Decode(tc.data)
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Decode error %v, want %q", err, tc.want)
		}
	}
}
