package manifest

import (
	"errors"
	"strings"
	"testing"
)

func TestValidName(t *testing.T) {
	for _, ok := range []string{"a", "step-100", "ckpt.0042", "état", "rank 3 state", "x..y", strings.Repeat("n", 255), "日本"} {
		if err := ValidName(ok); err != nil {
			t.Errorf("ValidName(%q) = %v", ok, err)
		}
	}
	for _, tc := range []struct{ name, want string }{
		{"", "invalid name: empty name"},
		{".", `invalid name ".": not a name but a path element`},
		{"..", `invalid name "..": not a name but a path element`},
		{".hidden", `invalid name ".hidden": starts with '.'`},
		{"a/b", `invalid name "a/b": contains '/' at byte 1; a name is one path component`},
		{`a\b`, `invalid name "a\\b": contains '\\' at byte 1`},
		{"a\x00b", `invalid name "a\x00b": contains control character U+0000 at byte 1`},
		{"tab\there", "control character U+0009 at byte 3"},
		{"del\x7f", "control character U+007F at byte 3"},
		{"c1\u0085", "control character U+0085 at byte 2"},
		{"bad\xffutf8", "not valid UTF-8"},
		{strings.Repeat("n", 256), "256 bytes, longer than 255"},
	} {
		err := ValidName(tc.name)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrBadName) {
			t.Errorf("ValidName(%q) = %v, want %q", tc.name, err, tc.want)
		}
	}
	// Long names are clipped in the message.
	if err := ValidName(strings.Repeat("x", 1000)); len(err.Error()) > 200 {
		t.Errorf("message too long: %d bytes", len(err.Error()))
	}
}
