package redundancy

import (
	"strings"
	"testing"
)

// The cases of internal/plan's TestParseSchemeRoundTrip: both parsers must
// agree on every spelling.
func TestParseSchemeRoundTrip(t *testing.T) {
	cases := []struct {
		in           string
		kind         string
		data, parity int
		str          string
	}{
		{"single", "single", 1, 0, "single"},
		{"partner", "partner", 1, 1, "partner"},
		{"xor:2", "xor", 1, 1, "xor:2"},
		{"xor:8", "xor", 7, 1, "xor:8"},
		{"xor:4096", "xor", 4095, 1, "xor:4096"},
		{"rs:1+1", "rs", 1, 1, "rs:1+1"},
		{"rs:4+2", "rs", 4, 2, "rs:4+2"},
		{"rs:255+1", "rs", 255, 1, "rs:255+1"},
		{" XOR:16 ", "xor", 15, 1, "xor:16"},
		{"Partner", "partner", 1, 1, "partner"},
		{"RS:10+4", "rs", 10, 4, "rs:10+4"},
	}
	for _, c := range cases {
		sc, err := ParseScheme(c.in)
		if err != nil {
			t.Errorf("ParseScheme(%q): %v", c.in, err)
			continue
		}
		if sc.Kind != c.kind || sc.Data != c.data || sc.Parity != c.parity {
			t.Errorf("ParseScheme(%q) = %+v", c.in, sc)
		}
		if sc.String() != c.str {
			t.Errorf("ParseScheme(%q).String() = %q, want %q", c.in, sc.String(), c.str)
		}
		again, err := ParseScheme(sc.String())
		if err != nil || again != sc {
			t.Errorf("round trip of %q: %+v, %v; want %+v", sc.String(), again, err, sc)
		}
		if err := sc.Validate(); err != nil {
			t.Errorf("%s: Validate: %v", c.in, err)
		}
		if sc.SetSize() != c.data+c.parity {
			t.Errorf("%s: SetSize = %d", c.in, sc.SetSize())
		}
		if got, want := sc.Overhead(), float64(c.data+c.parity)/float64(c.data); got != want {
			t.Errorf("%s: Overhead = %g, want %g", c.in, got, want)
		}
		l, err := sc.Layout()
		if err != nil || l.Members() != sc.SetSize() || l.DataShards() != sc.Data || l.ParityShards() != sc.Parity {
			t.Errorf("%s: Layout = %v, %v", c.in, l, err)
		}
	}
	for _, bad := range []string{"", "foo", "xor", "xor:", "xor:1", "xor:0", "xor:-4", "xor:4097", "xor:x",
		"rs:", "rs:4", "rs:+", "rs:0+2", "rs:2+0", "rs:4+-1", "rs:200+57", "rs:a+b", "rs:4+2+1", "partner:2", "single:1", "mirror"} {
		if sc, err := ParseScheme(bad); err == nil {
			t.Errorf("ParseScheme(%q) = %+v, want an error", bad, sc)
		} else if !strings.Contains(err.Error(), "redundancy") {
			t.Errorf("ParseScheme(%q): error %q does not say what it expected", bad, err)
		}
	}
}

func TestSchemeConstructors(t *testing.T) {
	if s := Single(); s != (Scheme{"single", 1, 0}) {
		t.Errorf("Single() = %+v", s)
	}
	if s := Partner(); s != (Scheme{"partner", 1, 1}) {
		t.Errorf("Partner() = %+v", s)
	}
	if s, err := XOR(4); err != nil || s != (Scheme{"xor", 3, 1}) {
		t.Errorf("XOR(4) = %+v, %v", s, err)
	}
	if s, err := RS(8, 2); err != nil || s != (Scheme{"rs", 8, 2}) {
		t.Errorf("RS(8, 2) = %+v, %v", s, err)
	}
	for _, n := range []int{-1, 0, 1, MaxXORSet + 1} {
		if _, err := XOR(n); err == nil || !strings.Contains(err.Error(), "xor:") {
			t.Errorf("XOR(%d): %v, want an error", n, err)
		}
	}
	for _, km := range [][2]int{{0, 1}, {1, 0}, {-1, 2}, {200, 57}} {
		if _, err := RS(km[0], km[1]); err == nil {
			t.Errorf("RS(%d, %d) accepted", km[0], km[1])
		}
	}
	for _, s := range []Scheme{{}, {"xor", 3, 2}, {"single", 2, 0}, {"rs", 0, 2}, {"raid", 3, 1}, {"partner", 2, 1}} {
		if err := s.Validate(); err == nil {
			t.Errorf("Validate(%+v) accepted", s)
		}
		if _, err := s.Layout(); err == nil {
			t.Errorf("Layout(%+v) accepted", s)
		}
	}
}
