package manifest

import (
	"bytes"
	"errors"
	"math/rand"
	"strings"
	"testing"
)

// FuzzDecode feeds arbitrary bytes to Decode, both as they are and sealed
// with a correct checksum line (so that mutations reach the JSON parser and
// the validator). Decode must never panic; it returns a one-line error
// wrapping one of the package's sentinels, or a valid manifest whose
// encoding is exactly the input and which decodes back to itself.
func FuzzDecode(f *testing.F) {
	good, _ := Encode(sample())
	f.Add(good)
	f.Add(good[:len(good)-trailerLen])
	r := rand.New(rand.NewSource(1))
	for range 8 {
		data, err := Encode(randomManifest(r))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
		f.Add(data[:len(data)-trailerLen])
	}
	f.Add([]byte("{}\n"))
	f.Add([]byte(`{"version": 1}` + "\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, in := range [][]byte{data, seal(data)} {
			m, err := Decode(in)
			if err != nil {
				if strings.Contains(err.Error(), "\n") {
					t.Fatalf("multi-line error %q", err)
				}
				if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrVersion) {
					t.Fatalf("error %v wraps no sentinel", err)
				}
				continue
			}
			if err := m.Validate(); err != nil {
				t.Fatalf("Decode accepted an invalid manifest: %v", err)
			}
			enc, err := Encode(m)
			if err != nil {
				t.Fatalf("Encode of a decoded manifest: %v", err)
			}
			if !bytes.Equal(enc, in) {
				t.Fatalf("Encode(Decode(x)) != x:\n%q\n%q", enc, in)
			}
			back, err := Decode(enc)
			if err != nil || !sameManifest(back, m) {
				t.Fatalf("Decode(Encode(m)) != m: %v", err)
			}
		}
	})
}
