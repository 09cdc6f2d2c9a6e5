package units

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
)

// SyntaxError reports an input that could not be parsed.
type SyntaxError struct {
	Kind   string // "duration", "size", "bandwidth", "rate" or "number"
	Input  string // the text as given
	Reason string // what is wrong, phrased to help the user fix it
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("invalid %s %q: %s", e.Kind, e.Input, e.Reason)
}

// ListError reports the element of a comma-separated list that failed.
type ListError struct {
	Input string // the whole list as given
	Pos   int    // 1-based position of the bad element
	Elem  string // the bad element, trimmed
	Err   error  // the element parser's error
}

func (e *ListError) Error() string {
	return fmt.Sprintf("list %q: element %d: %v", e.Input, e.Pos, e.Err)
}

func (e *ListError) Unwrap() error { return e.Err }

const (
	day  = 86400.0
	year = 365 * day // exactly; see package doc
)

var durationUnits = map[string]float64{
	"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, // micro sign U+00B5 and Greek mu U+03BC
	"ms": 1e-3, "s": 1, "m": 60, "min": 60, "h": 3600,
	"d": day, "w": 7 * day, "y": year,
}

// durationWords are spelled-out time units people write. The parser keeps
// to one short spelling per unit and, for these, says which to write.
var durationWords = map[string]string{
	"sec": "s", "secs": "s", "second": "s", "seconds": "s",
	"mins": "m", "minute": "m", "minutes": "m",
	"hr": "h", "hrs": "h", "hour": "h", "hours": "h",
	"day": "d", "days": "d", "week": "w", "weeks": "w",
	"yr": "y", "yrs": "y", "year": "y", "years": "y",
}

// sizeUnits is keyed by the ASCII-lowercased unit.
var sizeUnits = map[string]float64{
	"b":  1,
	"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12, "pb": 1e15, "eb": 1e18,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30,
	"tib": 1 << 40, "pib": 1 << 50, "eib": 1 << 60,
}

// sizeUnit matches size units case-insensitively except for the final "B":
// a lowercase "b" ("Gb", "Mb", "b") conventionally means bits, and reading it
// as bytes would be off by a factor of eight, so it is refused.
func sizeUnit(u string) (float64, bool) {
	if strings.HasSuffix(u, "b") {
		return 0, false
	}
	m, ok := sizeUnits[asciiLower(u)]
	return m, ok
}

// quantity describes one grammar: [sign] number [unit], or for compound
// quantities a sum of number+unit parts.
type quantity struct {
	lookup func(unit string) (float64, bool)
	hint   string // shown after an unknown unit
	// suggest, if set, names the unit to write instead of an unknown one.
	suggest  func(unit string) (string, bool)
	compound bool
}

var (
	duration = quantity{
		lookup:   func(u string) (float64, bool) { m, ok := durationUnits[u]; return m, ok },
		hint:     "use ns, us, ms, s, m, h, d, w, y",
		suggest:  func(u string) (string, bool) { w, ok := durationWords[asciiLower(u)]; return w, ok },
		compound: true,
	}
	size = quantity{
		lookup: sizeUnit,
		hint:   "use B, kB, MB, GB, TB, PB, EB or KiB, MiB, GiB, TiB, PiB, EiB; a lowercase b would mean bits",
	}
	plain = quantity{
		lookup: func(string) (float64, bool) { return 0, false },
		hint:   "expected a plain number",
	}
	count = quantity{
		lookup: func(string) (float64, bool) { return 0, false },
		hint:   "write a rate as N/s, N/h, N/d or N/y",
	}
)

// ParseDuration parses a duration such as "300", "5m", "1h30m" or "5y" and
// returns seconds.
func ParseDuration(s string) (float64, error) {
	v, _, reason := duration.parse(s)
	return result("duration", s, v, reason)
}

// ParseSize parses a size such as "4096", "29GB" or "1.5TiB" and returns bytes.
func ParseSize(s string) (float64, error) {
	v, _, reason := size.parse(s)
	return result("size", s, v, reason)
}

// ParseBandwidth parses a bandwidth such as "400MB/s", "1TB/h" or "400MBps"
// and returns bytes per second.
func ParseBandwidth(s string) (float64, error) {
	v, reason := parseBandwidth(s)
	return result("bandwidth", s, v, reason)
}

// ParseRate parses an event rate such as "1.757e-5", "3/h" or "1/y" and
// returns events per second.
func ParseRate(s string) (float64, error) {
	t := strings.TrimSpace(s)
	var v float64
	var reason string
	if i := strings.LastIndexByte(t, '/'); i >= 0 {
		v, reason = perTime(count, t[:i], t[i+1:])
	} else {
		v, _, reason = count.parse(t)
	}
	return result("rate", s, v, reason)
}

// ParseFloat parses a plain decimal number, rejecting NaN, Inf, hexadecimal
// and digit separators, which strconv.ParseFloat would accept.
func ParseFloat(s string) (float64, error) {
	v, _, reason := plain.parse(s)
	return result("number", s, v, reason)
}

// ParseList parses a comma-separated list, applying parse to each trimmed
// element. A failure is reported as a *ListError wrapping parse's error.
func ParseList(s string, parse func(string) (float64, error)) ([]float64, error) {
	parts := strings.Split(s, ",")
	out := make([]float64, 0, len(parts))
	for i, p := range parts {
		p = strings.TrimSpace(p)
		v, err := parse(p)
		if err != nil {
			return nil, &ListError{Input: s, Pos: i + 1, Elem: p, Err: err}
		}
		out = append(out, v)
	}
	return out, nil
}

func result(kind, input string, v float64, reason string) (float64, error) {
	if reason != "" {
		return 0, &SyntaxError{Kind: kind, Input: input, Reason: reason}
	}
	return v, nil
}

func parseBandwidth(s string) (float64, string) {
	t := strings.TrimSpace(s)
	if i := strings.LastIndexByte(t, '/'); i >= 0 {
		return perTime(size, t[:i], t[i+1:])
	}
	perSecond := false
	switch {
	case strings.HasSuffix(t, "Bps"):
		t, perSecond = t[:len(t)-len("ps")], true // keep the "B" of the size unit
	case strings.HasSuffix(asciiLower(t), "bps"):
		return 0, `"bps" usually means bits per second; write bytes per second as e.g. 400MB/s`
	}
	v, hasUnit, reason := size.parse(t)
	if reason == "" && hasUnit && !perSecond {
		return 0, `missing time unit (write e.g. 400MB/s)`
	}
	return v, reason
}

// perTime parses "<amount>/<time unit>" and converts it to per second.
func perTime(q quantity, amount, per string) (float64, string) {
	if strings.TrimSpace(amount) == "" {
		return 0, `missing number before "/"`
	}
	v, _, reason := q.parse(amount)
	if reason != "" {
		return 0, reason
	}
	per = strings.TrimSpace(per)
	d, ok := durationUnits[per]
	if per == "sec" {
		d, ok = 1, true
	}
	if !ok {
		return 0, fmt.Sprintf(`unknown time unit %q after "/" (use s, sec, min, h, d, w, y)`, per)
	}
	v /= d
	if math.IsInf(v, 0) {
		return 0, "out of range"
	}
	return v, ""
}

// parse scans s according to q and returns the value in base units, whether
// any unit was present, and a non-empty reason on failure.
func (q quantity) parse(s string) (v float64, hasUnit bool, reason string) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, false, "empty"
	}
	neg := t[0] == '-'
	if t[0] == '+' || t[0] == '-' {
		t = t[1:]
	}
	total := 0.0
	for first := true; ; first = false {
		n := scanNumber(t)
		if n == 0 {
			switch {
			case !first && (t[0] == '+' || t[0] == '-'):
				return 0, false, "sign inside compound duration (only the whole value may be negative)"
			case strings.HasPrefix(asciiLower(t), "nan") || strings.HasPrefix(asciiLower(t), "inf"):
				return 0, false, "NaN and Inf are not allowed"
			case first:
				return 0, false, "missing number"
			default:
				return 0, false, fmt.Sprintf("missing number before %q", t)
			}
		}
		num := t[:n]
		x, err := strconv.ParseFloat(num, 64)
		if err != nil { // scanNumber admits only valid syntax, so this is overflow
			return 0, false, fmt.Sprintf("number %s out of range", num)
		}
		t = skipSpace(t[n:])
		unit := t[:unitLen(t)]
		t = skipSpace(t[len(unit):])
		mult := 1.0
		switch {
		case unit != "":
			m, ok := q.lookup(unit)
			if !ok {
				if q.suggest != nil {
					if short, ok := q.suggest(unit); ok {
						return 0, false, fmt.Sprintf("unknown unit %q: write %s%s", unit, num, short)
					}
				}
				return 0, false, fmt.Sprintf("unknown unit %q (%s)", unit, q.hint)
			}
			mult, hasUnit = m, true
		case first && t == "":
			// A lone bare number is in base units.
		case q.compound:
			return 0, false, fmt.Sprintf("missing unit after %s", num)
		}
		total += x * mult
		if math.IsInf(total, 0) {
			return 0, false, "out of range"
		}
		if t == "" {
			break
		}
		if !q.compound {
			return 0, false, fmt.Sprintf("unexpected %q after %s%s", t, num, unit)
		}
	}
	if neg {
		total = -total
	}
	return total, hasUnit, ""
}

// scanNumber returns the length of the decimal number at the start of s, or
// 0. An "e" counts as an exponent only when digits follow, so that "1EB" is
// one exabyte rather than a malformed exponent.
func scanNumber(s string) int {
	i, digits := 0, 0
	for i < len(s) && isDigit(s[i]) {
		i++
		digits++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && isDigit(s[i]) {
			i++
			digits++
		}
	}
	if digits == 0 {
		return 0
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		j := i + 1
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		if j < len(s) && isDigit(s[j]) {
			for j < len(s) && isDigit(s[j]) {
				j++
			}
			i = j
		}
	}
	return i
}

// unitLen returns the length of the unit at the start of s: everything up to
// the next number, sign or space.
func unitLen(s string) int {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case isDigit(c), c == '.', c == '+', c == '-', c == ' ', c == '\t':
			return i
		}
	}
	return len(s)
}

func skipSpace(s string) string { return strings.TrimLeft(s, " \t") }

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// asciiLower folds only ASCII letters, so that e.g. the Kelvin sign "K"
// (U+212A) is not mistaken for "k" as strings.ToLower would.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// Unit reports whether word, standing alone, is a unit of a quantity of the
// kind ("duration", "size" or "bandwidth"), and the unit to write right
// after the number: "seconds" → "s", "GB" → "GB", "MB/s" → "MB/s". It lets
// a command line notice a value the shell split from its unit ("3 seconds").
func Unit(kind, word string) (string, bool) {
	if word == "" || !unicode.IsLetter([]rune(word)[0]) {
		return "", false
	}
	switch kind {
	case "duration":
		if _, ok := durationUnits[word]; ok {
			return word, true
		}
		w, ok := durationWords[asciiLower(word)]
		return w, ok
	case "size":
		if _, ok := sizeUnit(word); ok {
			return word, true
		}
	case "bandwidth":
		if _, reason := parseBandwidth("1" + word); reason == "" {
			return word, true
		}
	}
	return "", false
}
