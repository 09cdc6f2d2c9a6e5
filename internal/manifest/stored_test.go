package manifest

import (
	"errors"
	"strings"
	"testing"
)

// TestStoredForm: a compressed file's stored form survives Encode and
// Decode, Stored gives the object's size and hash, and a file without a
// codec is its own object.
func TestStoredForm(t *testing.T) {
	m := sample()
	f := &m.Parts[0].Files[0]
	f.Codec, f.Filter, f.StoredSize, f.StoredHash = "zstd", "shuffle4", 12, HashBytes([]byte("stored"))
	data, err := Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"codec":"zstd","filter":"shuffle4","stored_size":12,"stored_hash":"`) {
		t.Fatalf("the stored form is not in the text:\n%s", data)
	}
	back, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	g := back.Parts[0].Files[0]
	if size, h := g.Stored(); size != 12 || h != f.StoredHash || g.Size != f.Size || g.Hash != f.Hash {
		t.Errorf("decoded %+v, want %+v", g, *f)
	}
	if size, h := back.Parts[1].Files[0].Stored(); size != back.Parts[1].Files[0].Size || h != back.Parts[1].Files[0].Hash {
		t.Errorf("an uncompressed file's Stored is not its own size and hash")
	}
}

// TestOldManifestHasNoCodec: a manifest written before compression (no
// codec field) reads as before: every file stored as written.
func TestOldManifestHasNoCodec(t *testing.T) {
	data, err := Encode(sample())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "codec") || strings.Contains(string(data), "stored") {
		t.Fatalf("a manifest without compression mentions it:\n%s", data)
	}
	m, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range m.Parts {
		for _, f := range p.Files {
			if f.Codec != "" || f.StoredSize != 0 {
				t.Errorf("%s: decoded with a stored form %+v", f.Name, f)
			}
		}
	}
}

func TestStoredFormInvalid(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(m *Manifest)
		want string
	}{
		{"filter without codec", func(m *Manifest) { m.Parts[0].Files[0].Filter = "shuffle4" }, "without a codec"},
		{"stored size without codec", func(m *Manifest) { m.Parts[0].Files[0].StoredSize = 3 }, "without a codec"},
		{"negative stored size", func(m *Manifest) {
			f := &m.Parts[0].Files[0]
			f.Codec, f.StoredSize = "s2", -1
		}, "negative stored size"},
		{"compressed parity", func(m *Manifest) {
			m.Parts[0].Parity = []File{{Rank: 0, Name: "parity", Codec: "zstd"}}
		}, "parity is never compressed"},
		{"control character", func(m *Manifest) { m.Parts[0].Files[0].Codec = "z\x01" }, "control character"},
	} {
		m := sample()
		c.edit(m)
		err := m.Validate()
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Validate = %v, want %q", c.name, err, c.want)
		}
	}
}
