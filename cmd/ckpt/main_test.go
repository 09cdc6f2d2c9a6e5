package main

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"regexp"
	"runtime/debug"
	"sort"
	"strings"
	"testing"
)

// runCLI runs the command line in process and returns the exit status and
// what the command printed. A panic fails the test with the arguments.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("run(%q) panicked: %v\n%s", args, r, debug.Stack())
			}
		}()
		code = run(args, &out, &errb)
	}()
	return code, out.String(), errb.String()
}

// runJSON runs a command that must succeed and print exactly one JSON
// object, and returns it decoded.
func runJSON(t *testing.T, args ...string) map[string]any {
	t.Helper()
	code, stdout, stderr := runCLI(t, args...)
	if code != exitOK {
		t.Fatalf("ckpt %s: exit %d, stderr %q", strings.Join(args, " "), code, stderr)
	}
	if rest := withoutProgress(stderr); rest != "" {
		t.Errorf("ckpt %s: unexpected stderr %q", strings.Join(args, " "), rest)
	}
	return decodeOne(t, stdout)
}

// progressLine is a long simulation's progress report on stderr, which a
// slow machine makes appear for any run that takes longer than
// simulateProgressEvery.
var progressLine = regexp.MustCompile(`(?m)^ckpt simulate: \d+/\d+ replications, \d+s\n`)

// withoutProgress is stderr without progress lines: what must be empty
// however slow the machine.
func withoutProgress(stderr string) string { return progressLine.ReplaceAllString(stderr, "") }

// decodeOne decodes one JSON object and refuses anything after it.
func decodeOne(t *testing.T, text string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		t.Fatalf("stdout is not a JSON object: %v\n%s", err, text)
	}
	if obj == nil {
		t.Fatalf("stdout is JSON null, not an object")
	}
	if _, err := dec.Token(); err != io.EOF {
		t.Fatalf("more than one JSON value on stdout:\n%s", text)
	}
	return obj
}

// checkKeys checks that obj has exactly the documented keys plus the
// listed extras, and that every documented key holds a finite number
// (or, for the keys in nonNumeric, any non-null value).
func checkKeys(t *testing.T, obj map[string]any, documented, extras []string, nonNumeric ...string) {
	t.Helper()
	want := map[string]bool{}
	for _, k := range append(append([]string(nil), documented...), extras...) {
		want[k] = true
	}
	var got []string
	for k := range obj {
		got = append(got, k)
		if !want[k] {
			t.Errorf("unexpected key %q", k)
		}
	}
	sort.Strings(got)
	for k := range want {
		if _, ok := obj[k]; !ok {
			t.Errorf("missing key %q (have %v)", k, got)
		}
	}
	skip := map[string]bool{}
	for _, k := range nonNumeric {
		skip[k] = true
	}
	for _, k := range documented {
		v, ok := obj[k]
		if !ok {
			continue
		}
		if skip[k] {
			if v == nil {
				t.Errorf("%s is null", k)
			}
			continue
		}
		if _, ok := toFloat(v); !ok {
			t.Errorf("%s = %v (%T), want a finite number", k, v, v)
		}
	}
}

// toFloat reads a JSON number decoded with UseNumber.
func toFloat(v any) (float64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := n.Float64()
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

// num reads a numeric key, failing the test if it is not a finite number.
func getNum(t *testing.T, obj map[string]any, key string) float64 {
	t.Helper()
	f, ok := toFloat(obj[key])
	if !ok {
		t.Fatalf("%s = %v, want a finite number", key, obj[key])
	}
	return f
}

// getObj reads a nested object.
func getObj(t *testing.T, obj map[string]any, key string) map[string]any {
	t.Helper()
	o, ok := obj[key].(map[string]any)
	if !ok {
		t.Fatalf("%s = %v, want an object", key, obj[key])
	}
	return o
}

// ints reads an array of whole numbers.
func ints(t *testing.T, obj map[string]any, key string) []int {
	t.Helper()
	arr, ok := obj[key].([]any)
	if !ok {
		t.Fatalf("%s = %v (%T), want an array", key, obj[key], obj[key])
	}
	out := make([]int, len(arr))
	for i, v := range arr {
		n, ok := v.(json.Number)
		if !ok {
			t.Fatalf("%s[%d] = %v", key, i, v)
		}
		x, err := n.Int64()
		if err != nil {
			t.Fatalf("%s[%d] = %v: %v", key, i, v, err)
		}
		out[i] = int(x)
	}
	return out
}

func relClose(got, want, rel float64) bool {
	if got == want {
		return true
	}
	return math.Abs(got-want) <= rel*math.Max(math.Abs(got), math.Abs(want))
}

func checkRel(t *testing.T, what string, got, want, rel float64) {
	t.Helper()
	if !relClose(got, want, rel) {
		t.Errorf("%s = %.12g, want %.12g (rel. tol. %g)", what, got, want, rel)
	}
}

// checkBadInput asserts the contract for bad input: exit status 2, nothing
// on stdout, exactly one line on stderr, naming the flag or field.
func checkBadInput(t *testing.T, mention []string, args ...string) {
	t.Helper()
	checkRefused(t, exitUsage, mention, args...)
}

// checkRefused is checkBadInput for a refusal with another exit status
// (a rank's configuration error: ckpt.ExitConfig).
func checkRefused(t *testing.T, status int, mention []string, args ...string) {
	t.Helper()
	code, stdout, stderr := runCLI(t, args...)
	cmd := "ckpt " + strings.Join(args, " ")
	if code != status {
		t.Errorf("%s: exit %d, want %d (stderr %q)", cmd, code, status, stderr)
	}
	if stdout != "" {
		t.Errorf("%s: stdout %q, want nothing", cmd, stdout)
	}
	if !strings.HasSuffix(stderr, "\n") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("%s: stderr %q, want exactly one line", cmd, stderr)
	}
	if !strings.HasPrefix(stderr, "ckpt: ") {
		t.Errorf("%s: stderr %q does not start with \"ckpt: \"", cmd, stderr)
	}
	for _, m := range mention {
		if !strings.Contains(stderr, m) {
			t.Errorf("%s: stderr %q does not mention %q", cmd, stderr, m)
		}
	}
}

func TestRunNoArgsPrintsHelp(t *testing.T) {
	code, stdout, stderr := runCLI(t)
	if code != exitOK || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	for _, want := range []string{"model", "plan", "--json"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("root help does not mention %q", want)
		}
	}
}
