package manifest

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// MaxNameLen is the longest checkpoint or file name in bytes, the usual
// limit of a file-name component.
const MaxNameLen = 255

// ErrBadName is wrapped by the errors of ValidName.
var ErrBadName = errors.New("invalid name")

// ValidName checks a checkpoint name or file name chosen by an application.
// A valid name is a single path component that is safe on every backend:
// 1 to MaxNameLen bytes of UTF-8, no '/', '\\', NUL or other control
// character (C0, DEL, C1), and no leading '.' (which also excludes "." and
// ".."; hidden names are reserved for the library's own files). The error
// quotes the name and says what is wrong.
func ValidName(name string) error {
	bad := func(why string, args ...any) error {
		return fmt.Errorf("%w %q: %s", ErrBadName, clip(name), fmt.Sprintf(why, args...))
	}
	switch {
	case name == "":
		return fmt.Errorf("%w: empty name", ErrBadName)
	case name == "." || name == "..":
		return bad("not a name but a path element")
	case len(name) > MaxNameLen:
		return bad("%d bytes, longer than %d", len(name), MaxNameLen)
	case name[0] == '.':
		return bad("starts with '.'")
	case !utf8.ValidString(name):
		return bad("not valid UTF-8")
	}
	for i, r := range name {
		switch {
		case r == '/' || r == '\\':
			return bad("contains %q at byte %d; a name is one path component", r, i)
		case r < 0x20 || r == 0x7f || 0x80 <= r && r < 0xa0:
			return bad("contains control character %U at byte %d", r, i)
		}
	}
	return nil
}

// validLabel checks free-form labels stored in a manifest (node names, the
// scheme): non-empty, at most MaxNameLen bytes of UTF-8 without control
// characters.
func validLabel(what, s string) error {
	switch {
	case s == "":
		return fmt.Errorf("empty %s", what)
	case len(s) > MaxNameLen:
		return fmt.Errorf("%s %q: %d bytes, longer than %d", what, clip(s), len(s), MaxNameLen)
	case !utf8.ValidString(s):
		return fmt.Errorf("%s %q: not valid UTF-8", what, clip(s))
	}
	for i, r := range s {
		if r < 0x20 || r == 0x7f || 0x80 <= r && r < 0xa0 {
			return fmt.Errorf("%s %q: control character %U at byte %d", what, clip(s), r, i)
		}
	}
	return nil
}
