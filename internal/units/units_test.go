package units

import (
	"errors"
	"math"
	"strings"
	"testing"
)

type parseCase struct {
	in   string
	want float64
}

// approx compares with a relative tolerance because unit conversions such as
// 1TB/h are not exact in binary floating point.
func approx(a, b float64) bool {
	if a == b {
		return true
	}
	return math.Abs(a-b) <= 1e-12*math.Max(math.Abs(a), math.Abs(b))
}

func runParse(t *testing.T, name string, parse func(string) (float64, error), cases []parseCase) {
	t.Helper()
	for _, c := range cases {
		got, err := parse(c.in)
		if err != nil {
			t.Errorf("%s(%q): unexpected error: %v", name, c.in, err)
			continue
		}
		if !approx(got, c.want) {
			t.Errorf("%s(%q) = %v, want %v", name, c.in, got, c.want)
		}
	}
}

type badCase struct {
	in     string
	reason string // substring expected in SyntaxError.Reason
}

func runBad(t *testing.T, kind string, parse func(string) (float64, error), cases []badCase) {
	t.Helper()
	for _, c := range cases {
		v, err := parse(c.in)
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("%s %q: got (%v, %v), want *SyntaxError", kind, c.in, v, err)
			continue
		}
		if se.Kind != kind || se.Input != c.in || !strings.Contains(se.Reason, c.reason) {
			t.Errorf("%s %q: got %+v, want kind %q, reason containing %q", kind, c.in, *se, kind, c.reason)
		}
		if v != 0 {
			t.Errorf("%s %q: value %v returned with error", kind, c.in, v)
		}
	}
}

func TestParseDuration(t *testing.T) {
	runParse(t, "ParseDuration", ParseDuration, []parseCase{
		{"300", 300},
		{"1.5e3", 1500},
		{"0", 0},
		{".5", 0.5},
		{"5.", 5},
		{"-30", -30},
		{"+30", 30},
		{"2ns", 2e-9},
		{"3us", 3e-6},
		{"3µs", 3e-6}, // U+00B5 micro sign
		{"3μs", 3e-6}, // U+03BC Greek mu
		{"250ms", 0.25},
		{"45s", 45},
		{"5m", 300},
		{"5min", 300},
		{"2h", 7200},
		{"1d", 86400},
		{"1w", 604800},
		{"5y", 157680000},
		{"1y", 365 * 86400},
		{"1.5h", 5400},
		{"1e-3s", 1e-3},
		{"1e2m", 6000},
		{"5 m", 300},
		{"  5m  ", 300},
		{"5\tm", 300},
		{"1h30m", 5400},
		{"2d12h", 216000},
		{"1h 30m", 5400},
		{"1h30m15s", 5415},
		{"1m30ms", 60.03},
		{"1h1.5m", 3690},
		{"-1h30m", -5400},
		{"1e-400s", 0}, // underflow rounds to zero, it is not an error
	})
}

func TestParseDurationErrors(t *testing.T) {
	runBad(t, "duration", ParseDuration, []badCase{
		{"", "empty"},
		{"   ", "empty"},
		{"s", "missing number"},
		{"-", "missing number"},
		{"--5s", "missing number"},
		{"abc", "missing number"},
		{"NaN", "NaN and Inf"},
		{"inf", "NaN and Inf"},
		{"-Infinity", "NaN and Inf"},
		{"5x", `unknown unit "x" (use ns`},
		{"5M", `unknown unit "M"`}, // duration units are lowercase only
		{"5H", `unknown unit "H"`},
		{"5sec", `unknown unit "sec"`},
		{"1e", `unknown unit "e"`},
		{"0x10", `unknown unit "x"`},
		{"1_000", `unknown unit "_"`},
		{"1h30", "missing unit after 30"},
		{"30 5m", "missing unit after 30"},
		{"1h-30m", "sign inside compound"},
		{"1h+30m", "sign inside compound"},
		{"1h30m.", `missing number before "."`},
		{"1e400", "out of range"},
		{"1e308y", "out of range"},
		{"1e308s1e308s", "out of range"},
	})
	_, err := ParseDuration("5x")
	const want = `invalid duration "5x": unknown unit "x" (use ns, us, ms, s, m, h, d, w, y)`
	if err == nil || err.Error() != want {
		t.Errorf("error text = %v, want %s", err, want)
	}
}

func TestParseSize(t *testing.T) {
	runParse(t, "ParseSize", ParseSize, []parseCase{
		{"4096", 4096},
		{"0", 0},
		{"1e3", 1000},
		{"10B", 10},
		{"1kB", 1e3},
		{"1KB", 1e3},
		{"1MB", 1e6},
		{"29GB", 29e9},
		{"29 GB", 29e9},
		{"40.8TB", 40.8e12},
		{"2PB", 2e15},
		{"1EB", 1e18}, // "E" is a unit here, not an exponent
		{"1e3EB", 1e21},
		{"1KiB", 1 << 10},
		{"1KIB", 1 << 10}, // prefixes are case-insensitive, only the b is not
		{"1gB", 1e9},
		{"1MiB", 1 << 20},
		{"1GiB", 1 << 30},
		{"1.5TiB", 1.5 * (1 << 40)},
		{"1PiB", 1 << 50},
		{"1EiB", 1 << 60},
		{"-1GB", -1e9},
	})
}

func TestParseSizeErrors(t *testing.T) {
	runBad(t, "size", ParseSize, []badCase{
		{"", "empty"},
		{"GB", "missing number"},
		{"nan GB", "NaN and Inf"},
		{"5G", `unknown unit "G"`},
		// A lowercase b means bits by convention: refused, not read as bytes.
		{"10b", `a lowercase b would mean bits`},
		{"1kb", `unknown unit "kb"`},
		{"10Gb", `unknown unit "Gb"`},
		{"1eb", `unknown unit "eb"`},
		{"1kib", `unknown unit "kib"`},
		{"5 bytes", `unknown unit "bytes"`},
		{"5\u212aB", `unknown unit`}, // Kelvin sign does not fold to k
		{"5GB3", `unexpected "3" after 5GB`},
		{"5 5", `unexpected "5" after 5`},
		{"1GB1MB", "unexpected"}, // sizes are not compound
		{"1e400", "out of range"},
		{"1e300EB", "out of range"},
	})
}

func TestParseBandwidth(t *testing.T) {
	runParse(t, "ParseBandwidth", ParseBandwidth, []parseCase{
		{"1000", 1000},
		{"400MB/s", 400e6},
		{"6.4GB/s", 6.4e9},
		{"6.4 GB / s", 6.4e9},
		{"1.5GiB/s", 1.5 * (1 << 30)},
		{"400MB/sec", 400e6},
		{"400MBps", 400e6},
		{"400 MBps", 400e6},
		{"100Bps", 100},
		{"2GiBps", 2 << 30},
		{"1TB/h", 1e12 / 3600},
		{"60MB/min", 1e6},
		{"1GB/ms", 1e12},
		{"86.4GB/d", 1e6},
		{"500/s", 500},
	})
}

func TestParseBandwidthErrors(t *testing.T) {
	runBad(t, "bandwidth", ParseBandwidth, []badCase{
		{"", "empty"},
		{"400MB", "missing time unit"},
		{"400Mbps", "bits per second"},
		{"400MBPS", "bits per second"},
		{"/s", `missing number before "/"`},
		{"MB/s", "missing number"},
		{"400MB/", `unknown time unit ""`},
		{"400MB/x", `unknown time unit "x"`},
		{"400MB/2s", `unknown time unit "2s"`},
		{"400XB/s", `unknown unit "XB"`},
		{"1/2/s", `unknown unit "/"`},
		{"1e300EB/ns", "out of range"},
	})
}

func TestParseRate(t *testing.T) {
	runParse(t, "ParseRate", ParseRate, []parseCase{
		{"1.757e-5", 1.757e-5},
		{"0", 0},
		{"3/s", 3},
		{"3/sec", 3},
		{"36/h", 0.01},
		{"8.64/d", 1e-4},
		{"1/y", 1 / (365 * 86400.0)},
		{"2 / h", 2.0 / 3600},
	})
}

func TestParseRateErrors(t *testing.T) {
	runBad(t, "rate", ParseRate, []badCase{
		{"", "empty"},
		{"/h", "missing number"},
		{"5s", `unknown unit "s" (write a rate as N/s`},
		{"5s/h", `unknown unit "s"`},
		{"5/q", `unknown time unit "q"`},
		{"inf/s", "NaN and Inf"},
	})
}

func TestParseFloat(t *testing.T) {
	runParse(t, "ParseFloat", ParseFloat, []parseCase{
		{"0", 0}, {"1.5", 1.5}, {"-2e3", -2000}, {" 7 ", 7},
	})
	runBad(t, "number", ParseFloat, []badCase{
		{"", "empty"},
		{"NaN", "NaN and Inf"},
		{"+Inf", "NaN and Inf"},
		{"0x1p3", `unknown unit "x"`},
		{"5s", `unknown unit "s" (expected a plain number)`},
		{"1e999", "out of range"},
	})
}

func TestParseList(t *testing.T) {
	got, err := ParseList("30s, 5m,1h30m", ParseDuration)
	if err != nil || len(got) != 3 || got[0] != 30 || got[1] != 300 || got[2] != 5400 {
		t.Errorf("ParseList durations = %v, %v", got, err)
	}
	got, err = ParseList("30,400", ParseFloat)
	if err != nil || len(got) != 2 || got[0] != 30 || got[1] != 400 {
		t.Errorf("ParseList numbers = %v, %v", got, err)
	}

	for _, c := range []struct {
		in   string
		pos  int
		elem string
	}{
		{"30s, 5x, 1h", 2, "5x"},
		{"bad", 1, "bad"},
		{"", 1, ""},
		{"30s,", 2, ""},
		{"30s,,5m", 2, ""},
	} {
		got, err := ParseList(c.in, ParseDuration)
		var le *ListError
		if !errors.As(err, &le) || got != nil {
			t.Errorf("ParseList(%q) = %v, %v; want *ListError", c.in, got, err)
			continue
		}
		if le.Pos != c.pos || le.Elem != c.elem || le.Input != c.in {
			t.Errorf("ParseList(%q): got pos %d elem %q, want %d %q", c.in, le.Pos, le.Elem, c.pos, c.elem)
		}
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("ParseList(%q): error does not wrap *SyntaxError: %v", c.in, err)
		}
	}
	_, err = ParseList("30s, 5x", ParseDuration)
	const want = `list "30s, 5x": element 2: invalid duration "5x": unknown unit "x" (use ns, us, ms, s, m, h, d, w, y)`
	if err == nil || err.Error() != want {
		t.Errorf("list error text = %v, want %s", err, want)
	}
}

func TestFormat(t *testing.T) {
	for _, c := range []struct {
		got, want string
	}{
		{FormatDuration(0), "0 s"},
		{FormatDuration(0.53), "0.53 s"},
		{FormatDuration(72.5), "72.5 s"},
		{FormatDuration(-72.5), "-72.5 s"},
		{FormatDuration(852), "14.2 min"},
		{FormatDuration(3.41 * 3600), "3.41 h"},
		{FormatDuration(2.13 * 86400), "2.13 d"},
		{FormatDuration(1.37 * 365 * 86400), "1.37 y"},
		{FormatDuration(3600), "1 h"},
		{FormatDuration(90), "90 s"},
		{FormatDuration(120), "2 min"},
		{FormatDuration(119.9999), "2 min"}, // rounding carries into the next unit
		{FormatDuration(3599.99), "1 h"},
		{FormatDuration(1234 * 365 * 86400.0), "1230 y"},
		{FormatDuration(1e-9), "1e-09 s"},
		{FormatDuration(math.Inf(1)), "inf"},
		{FormatDuration(math.Inf(-1)), "-inf"},
		{FormatDuration(math.NaN()), "NaN"},
		{FormatDuration(-1e-300), "-1e-300 s"},
		{FormatSize(0), "0 B"},
		{FormatSize(512), "512 B"},
		{FormatSize(29e9), "29 GB"},
		{FormatSize(40.8e12), "40.8 TB"},
		{FormatSize(1.5 * (1 << 40)), "1.65 TB"},
		{FormatSize(999.7e9), "1 TB"},
		{FormatSize(2e21), "2000 EB"},
		{FormatSize(math.Inf(1)), "inf"},
		{FormatBandwidth(400e6), "400 MB/s"},
		{FormatBandwidth(6.4e9), "6.4 GB/s"},
		{FormatBandwidth(-1500), "-1.5 kB/s"},
		{FormatRate(1.757e-5), "1.76e-05 /s"},
		{FormatRate(2), "2 /s"},
		{FormatRate(0.25), "0.25 /s"},
		{FormatRate(math.NaN()), "NaN"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

// TestRoundTrip checks that formatted values parse back to within the
// three-significant-digit rounding of the formatter.
func TestRoundTrip(t *testing.T) {
	values := []float64{0, 1e-9, 0.53, 7, 72.5, 852, 3599.99, 12345, 2e5, 4.3e7, 1e10, 1e20, -42}
	for _, rt := range []struct {
		name   string
		format func(float64) string
		parse  func(string) (float64, error)
	}{
		{"duration", FormatDuration, ParseDuration},
		{"size", FormatSize, ParseSize},
		{"bandwidth", FormatBandwidth, ParseBandwidth},
		{"rate", FormatRate, ParseRate},
	} {
		for _, v := range values {
			s := rt.format(v)
			got, err := rt.parse(s)
			if err != nil {
				t.Errorf("%s: %v formats as %q which does not parse: %v", rt.name, v, s, err)
				continue
			}
			if math.Abs(got-v) > 0.005*math.Abs(v) {
				t.Errorf("%s: %v -> %q -> %v", rt.name, v, s, got)
			}
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"", "0", "300", "-1.5e3", "5 m", "1h30m", "2d12h", "5y", "3µs", "1h-30m",
		"1.5TiB", "29 GB", "1EB", "400MB/s", "1TB/h", "400MBps", "400Mbps",
		"1.757e-5", "3/h", "NaN", "inf", "1e400", "1e308y", "30s, 5x", "/", "1e", ".",
		"\xff", "5\u212aB",
	} {
		f.Add(s)
	}
	parsers := map[string]func(string) (float64, error){
		"duration":  ParseDuration,
		"size":      ParseSize,
		"bandwidth": ParseBandwidth,
		"rate":      ParseRate,
		"number":    ParseFloat,
	}
	f.Fuzz(func(t *testing.T, s string) {
		for name, parse := range parsers {
			v, err := parse(s)
			if err == nil && (math.IsNaN(v) || math.IsInf(v, 0)) {
				t.Fatalf("%s(%q) = %v with nil error", name, s, v)
			}
			_ = FormatDuration(v) + FormatSize(v) + FormatBandwidth(v) + FormatRate(v)
			if err != nil && err.Error() == "" {
				t.Fatalf("%s(%q): empty error message", name, s)
			}
			vs, err := ParseList(s, parse)
			if err == nil {
				for _, v := range vs {
					if math.IsNaN(v) || math.IsInf(v, 0) {
						t.Fatalf("ParseList(%q, %s) = %v with nil error", s, name, vs)
					}
				}
			}
		}
	})
}

// TestSpelledOutUnits: "3 seconds" as one argument is an error that says
// what to write; the parser keeps one short spelling per unit.
func TestSpelledOutUnits(t *testing.T) {
	for in, want := range map[string]string{
		"3 seconds": "write 3s", "3seconds": "write 3s", "5 min": "", "2 hours": "write 2h", "1.5 Days": "write 1.5d",
		"1 year": "write 1y", "1h 30 minutes": "write 30m", "10 fortnights": "use ns, us",
	} {
		_, err := ParseDuration(in)
		switch {
		case want == "" && err != nil:
			t.Errorf("ParseDuration(%q): %v", in, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("ParseDuration(%q) = %v, want an error saying %q", in, err, want)
		}
	}
}

// TestUnit: which lone words are units, and what to write after the number.
func TestUnit(t *testing.T) {
	cases := []struct {
		kind, word, want string
		ok               bool
	}{
		{"duration", "seconds", "s", true}, {"duration", "s", "s", true}, {"duration", "min", "min", true},
		{"duration", "Hours", "h", true}, {"duration", "years", "y", true}, {"duration", "ms", "ms", true},
		{"duration", "GB", "", false}, {"duration", "himeno", "", false}, {"duration", "3", "", false}, {"duration", "", "", false},
		{"size", "GB", "GB", true}, {"size", "GiB", "GiB", true}, {"size", "Gb", "", false}, {"size", "seconds", "", false},
		{"bandwidth", "MB/s", "MB/s", true}, {"bandwidth", "GBps", "GBps", true}, {"bandwidth", "GB", "", false}, {"bandwidth", "/s", "", false},
		{"number", "s", "", false},
	}
	for _, c := range cases {
		got, ok := Unit(c.kind, c.word)
		if got != c.want || ok != c.ok {
			t.Errorf("Unit(%q, %q) = %q, %v; want %q, %v", c.kind, c.word, got, ok, c.want, c.ok)
		}
	}
}
