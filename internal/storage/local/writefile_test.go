package local

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "addr")
	if err := WriteFile(path, []byte("127.0.0.1:7078\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	st, serr := os.Stat(path)
	if err != nil || string(b) != "127.0.0.1:7078\n" || serr != nil || st.Mode().Perm() != 0o644 {
		t.Fatalf("read %q, %v; mode %v, %v", b, err, st.Mode(), serr)
	}
	onlyFile(t, dir, "addr")
}

// A failure at any step, a crash mid-write included (the step "sync"
// comes after part of the data could be on disk), leaves the old file
// whole or no file, and no temp file.
func TestWriteFileFailsWhole(t *testing.T) {
	boom := errors.New("boom")
	for _, at := range []string{"write", "sync", "rename"} {
		for _, old := range []bool{false, true} {
			dir := t.TempDir()
			path := filepath.Join(dir, "addr")
			if old {
				if err := WriteFile(path, []byte("old\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			err := writeFile(path, []byte("a new address that is longer\n"), 0o600, func(s string) error {
				if s == at {
					// Mid-write, what a reader finds is the old file or none.
					if b, err := os.ReadFile(path); old && string(b) != "old\n" || !old && !os.IsNotExist(err) {
						t.Errorf("%s: during the write, path holds %q (%v)", at, b, err)
					}
					return boom
				}
				return nil
			})
			if !errors.Is(err, boom) {
				t.Fatalf("%s: %v", at, err)
			}
			b, err := os.ReadFile(path)
			switch {
			case old && string(b) != "old\n":
				t.Errorf("failed at %s: the old file became %q (%v)", at, b, err)
			case !old && !os.IsNotExist(err):
				t.Errorf("failed at %s: a file %q appeared (%v)", at, b, err)
			}
			if old {
				onlyFile(t, dir, "addr")
			} else {
				onlyFile(t, dir)
			}
		}
	}
}

func onlyFile(t *testing.T, dir string, names ...string) {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range es {
		got = append(got, e.Name())
	}
	if len(got) != len(names) || (len(names) == 1 && got[0] != names[0]) {
		t.Errorf("directory holds %v, want %v", got, names)
	}
}
