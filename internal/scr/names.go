package scr

import (
	"fmt"
	"path/filepath"
	"strings"
)

// DatasetName is the name of dataset id: the application's, or SCR's
// default scr.dataset.<id> when it gave none.
func DatasetName(name string, id uint64) string {
	if name == "" {
		return fmt.Sprintf("scr.dataset.%d", id)
	}
	return name
}

// Encode turns an SCR name (a dataset's, or a routed file's path relative
// to the prefix, which may have directories and a leading dot) into one
// ckpt accepts: a single path element not starting with '.'. '%', '/' and
// a leading '.' are escaped as %25, %2F and %2E; Decode undoes it.
func Encode(name string) string {
	var b strings.Builder
	for i, r := range name {
		switch {
		case r == '%':
			b.WriteString("%25")
		case r == '/':
			b.WriteString("%2F")
		case r == '.' && i == 0:
			b.WriteString("%2E")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Decode is Encode's inverse.
func Decode(s string) string {
	r := strings.NewReplacer("%2F", "/", "%2E", ".", "%25", "%")
	return r.Replace(s)
}

// OutputKey is a file's key in an output dataset: its path relative to
// the prefix. A relative name is taken against cwd; the file must lie
// under the prefix (SCR aborts otherwise).
func OutputKey(prefix, cwd, name string) (string, error) {
	if name == "" {
		return "", fmt.Errorf("empty file name")
	}
	abs := name
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(cwd, abs)
	}
	abs = filepath.Clean(abs)
	rel, err := filepath.Rel(prefix, abs)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", fmt.Errorf("file %q is not under the prefix %s", name, prefix)
	}
	return rel, nil
}

// RestartKey finds name among the keys of a restored dataset: by its path
// relative to the prefix, or, as SCR still allows, by its base name when
// one file alone has it.
func RestartKey(prefix, cwd, name string, keys []string) (string, bool) {
	if k, err := OutputKey(prefix, cwd, name); err == nil {
		for _, have := range keys {
			if have == k {
				return k, true
			}
		}
	}
	if strings.ContainsRune(name, '/') {
		return "", false
	}
	found := ""
	for _, have := range keys {
		if filepath.Base(have) == name {
			if found != "" {
				return "", false
			}
			found = have
		}
	}
	return found, found != ""
}
