package storage

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"
)

// TempPrefix starts the element under which a backend keeps an object that is
// still being written (".tmp-<random>-<base>" in package local). No valid name
// has an element that starts with it, so an unfinished or abandoned object
// can never be opened, listed or overwritten as a committed one.
const TempPrefix = ".tmp-"

// Limits on names. They are those of S3 keys (1024 bytes) and of file names
// on common POSIX file systems (255 bytes per element).
const (
	MaxNameLen    = 1024
	MaxElementLen = 255
)

// ValidName reports whether name can name an object, and if not, returns an
// error wrapping ErrInvalidName that quotes name and says why. A valid name
// is a slash-separated relative path ("ckpt.0007/rank-3/state.bin") of valid
// UTF-8, at most MaxNameLen bytes long, with no empty, "." or ".." element,
// no element longer than MaxElementLen bytes or starting with TempPrefix, and
// no backslash or control character (bytes below 0x20, and 0x7f) anywhere.
func ValidName(name string) error {
	if why := checkName(name, false); why != "" {
		return fmt.Errorf("storage: %w %q: %s", ErrInvalidName, name, why)
	}
	return nil
}

// ValidPrefix is ValidName for the prefix argument of List: the empty prefix
// is valid, and so is any prefix of a valid name, so the last element may be
// empty ("ckpt.0007/") or partial ("ckpt.00", "ckpt.0007/.").
func ValidPrefix(prefix string) error {
	if why := checkName(prefix, true); why != "" {
		return fmt.Errorf("storage: %w: prefix %q: %s", ErrInvalidName, prefix, why)
	}
	return nil
}

// checkName returns why name is not a valid name (or, if prefix, not a prefix
// of one), or "" if it is.
func checkName(name string, prefix bool) string {
	if name == "" {
		if prefix {
			return ""
		}
		return "empty"
	}
	if len(name) > MaxNameLen {
		return fmt.Sprintf("%d bytes long, more than %d", len(name), MaxNameLen)
	}
	if name[0] == '/' {
		return "absolute (starts with /)"
	}
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case c < 0x20 || c == 0x7f:
			return fmt.Sprintf("control character %q at byte %d", c, i)
		case c == '\\':
			return fmt.Sprintf("backslash at byte %d", i)
		}
	}
	if !utf8.ValidString(name) {
		return "not valid UTF-8"
	}
	for rest := name; ; {
		elem, tail, more := strings.Cut(rest, "/")
		last := !more
		switch {
		case last && prefix:
			// A partial last element: only its length and start matter.
		case elem == "" && last:
			return "ends with /"
		case elem == "":
			return "empty element (//)"
		case elem == "." || elem == "..":
			return fmt.Sprintf("element %q", elem)
		}
		if len(elem) > MaxElementLen {
			return fmt.Sprintf("element of %d bytes, more than %d", len(elem), MaxElementLen)
		}
		if strings.HasPrefix(elem, TempPrefix) {
			return fmt.Sprintf("element %q starts with the reserved prefix %q", elem, TempPrefix)
		}
		if last {
			return ""
		}
		rest = tail
	}
}

// Precheck is the check every backend method makes before it starts:
// the name (the prefix, for op "list") is valid, the context is not done,
// and the backend is not closed. It returns the error the method must fail
// with, if any.
func Precheck(ctx context.Context, op, name string, closed bool) error {
	var err error
	if op == "list" {
		err = ValidPrefix(name)
	} else {
		err = ValidName(name)
	}
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return &Error{Op: op, Name: name, Err: err}
	}
	if closed {
		return &Error{Op: op, Name: name, Err: ErrClosed}
	}
	return nil
}
