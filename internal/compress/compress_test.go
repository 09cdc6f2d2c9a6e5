package compress

import (
	"bytes"
	"io"
	"testing"
)

func roundTrip(t *testing.T, f Form, data []byte, chunk int) []byte {
	t.Helper()
	var stored bytes.Buffer
	w, err := NewWriter(&stored, f)
	if err != nil {
		t.Fatal(err)
	}
	for p := data; len(p) > 0; {
		n := min(chunk, len(p))
		if _, err := w.Write(p[:n]); err != nil {
			t.Fatal(err)
		}
		p = p[n:]
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(bytes.NewReader(stored.Bytes()), f)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("%s: read back: %v", f, err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("%s: %d bytes read back differ from the %d written", f, len(got), len(data))
	}
	return stored.Bytes()
}

func TestRoundTripEveryForm(t *testing.T) {
	forms := []Form{{}, {Codec: Zstd}, {Codec: S2}, {Codec: Zstd, Filter: Shuffle4}, {Codec: Zstd, Filter: Shuffle8},
		{Codec: S2, Filter: Shuffle4}, {Codec: S2, Filter: Shuffle8}}
	inputs := map[string][]byte{
		"empty":  nil,
		"one":    {7},
		"random": RandomBytes(3*filterBlock+13, 1), // blocks and a tail that is no whole lane
		"zeros":  ZeroHeavy(300 << 10),
		"f32":    Floats32(200<<10+6, 1e-7),
		"f64":    Floats64(200 << 10),
	}
	for _, f := range forms {
		for name, data := range inputs {
			for _, chunk := range []int{1000, 1 << 20} {
				stored := roundTrip(t, f, data, chunk)
				if !f.Compressed() && !bytes.Equal(stored, data) {
					t.Errorf("%s %s: the stored form of no codec is not the bytes themselves", f, name)
				}
			}
		}
	}
}

func TestShuffleGroupsLanes(t *testing.T) {
	src := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}
	dst := make([]byte, len(src))
	shuffle(dst, src, 4)
	if want := []byte{1, 5, 2, 6, 3, 7, 4, 8, 9, 10, 11}; !bytes.Equal(dst, want) {
		t.Fatalf("shuffle = %v, want %v", dst, want)
	}
	back := make([]byte, len(src))
	unshuffle(back, dst, 4)
	if !bytes.Equal(back, src) {
		t.Fatalf("unshuffle = %v, want %v", back, src)
	}
}

func TestDecide(t *testing.T) {
	for _, c := range []struct {
		name     string
		data     []byte
		size     int64
		compress bool
		filter   string
	}{
		{"random", RandomBytes(SampleSize, 2), -1, false, ""},
		{"zeros", ZeroHeavy(SampleSize), -1, true, ""},
		{"f32", Floats32(SampleSize, 1e-7), -1, true, "shuffle"},
		{"f64", Floats64(SampleSize), -1, true, Shuffle8},
		{"small", ZeroHeavy(8 << 10), 8 << 10, false, ""},
		{"small sample of a large file", ZeroHeavy(8 << 10), 1 << 30, true, ""},
		{"empty", nil, 0, false, ""},
	} {
		f := Decide(c.data, c.size)
		if err := f.Valid(); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
		filterOK := f.Filter == c.filter || c.filter == "shuffle" && lanes(f.Filter) > 0 // either width groups a float32's exponent bytes
		if f.Compressed() != c.compress || c.compress && !filterOK {
			t.Errorf("%s: Decide = %s; want compressed %v with filter %q", c.name, f, c.compress, c.filter)
		}
	}
}

func TestFormValid(t *testing.T) {
	for _, f := range []Form{{Codec: "lz77"}, {Filter: Shuffle4}, {Codec: Zstd, Filter: "shuffle3"}} {
		if f.Valid() == nil {
			t.Errorf("%+v: valid, want an error", f)
		}
		if _, err := NewWriter(io.Discard, f); err == nil {
			t.Errorf("%+v: NewWriter accepted it", f)
		}
		if _, err := NewReader(bytes.NewReader(nil), f); err == nil {
			t.Errorf("%+v: NewReader accepted it", f)
		}
	}
}

// TestDamagedInput: a stored form cut short or with a flipped byte either
// fails to read or reads other bytes; it never passes for the original
// silently (the caller's content hash then catches the other bytes).
func TestDamagedInput(t *testing.T) {
	data := Floats32(256<<10, 1e-7)
	for _, f := range []Form{{Codec: Zstd}, {Codec: S2, Filter: Shuffle4}} {
		var stored bytes.Buffer
		w, _ := NewWriter(&stored, f)
		w.Write(data)
		w.Close()
		for name, bad := range map[string][]byte{
			"truncated": stored.Bytes()[:stored.Len()/2],
			"flipped":   flip(stored.Bytes(), stored.Len()/3),
		} {
			r, err := NewReader(bytes.NewReader(bad), f)
			if err != nil {
				continue
			}
			got, err := io.ReadAll(r)
			if err == nil && bytes.Equal(got, data) {
				t.Errorf("%s %s: read back the original bytes without an error", f, name)
			}
		}
	}
}

// TestTruncatedZstdFails: a zstd frame cut short is an error of the
// reader itself, with or without the shuffle filter, not a clean end with
// fewer bytes (the filter's reader once took the decoder's
// io.ErrUnexpectedEOF for the end of the stream).
func TestTruncatedZstdFails(t *testing.T) {
	data := Floats32(3*filterBlock+100, 1e-7)
	for _, f := range []Form{{Codec: Zstd}, {Codec: Zstd, Filter: Shuffle4}, {Codec: Zstd, Filter: Shuffle8}} {
		var stored bytes.Buffer
		w, _ := NewWriter(&stored, f)
		w.Write(data)
		w.Close()
		for _, cut := range []int{stored.Len() / 2, stored.Len() - 1} {
			r, err := NewReader(bytes.NewReader(stored.Bytes()[:cut]), f)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			got, err := io.ReadAll(r)
			if err == nil {
				t.Errorf("%s cut at %d of %d: read %d of %d bytes and a clean end, want an error", f, cut, stored.Len(), len(got), len(data))
			}
		}
	}
}

func flip(b []byte, i int) []byte {
	b = bytes.Clone(b)
	b[i] ^= 0x40
	return b
}

func TestWorth(t *testing.T) {
	s := make([]byte, 100<<10)
	if !Worth(s, 10, -1, 0.9) || Worth(s, 95<<10, -1, 0.9) || Worth(s[:1000], 10, 1000, 0.9) || Worth(s, 60<<10, -1, PaysBelow) {
		t.Fatal("Worth: what the threshold saves, of a file past MinSize, pays, nothing else")
	}
}

func BenchmarkDecide(b *testing.B) {
	for _, k := range []struct {
		name string
		data []byte
	}{{"random", RandomBytes(SampleSize, 1)}, {"zeros", ZeroHeavy(SampleSize)}, {"floats", Floats32(SampleSize, 1e-7)}} {
		b.Run(k.name, func(b *testing.B) {
			b.SetBytes(SampleSize)
			for range b.N {
				Decide(k.data, -1)
			}
		})
	}
}
