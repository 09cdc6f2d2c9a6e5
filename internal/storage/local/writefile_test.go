package local

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
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
			err := writeFile(path, strings.NewReader("a new address that is longer\n"), 0o600, func(s string) error {
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

// WriteFileFrom streams its content: a header and the tail of another
// file, as a log rewritten from its tail is.
func TestWriteFileFrom(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "old-log")
	body := strings.Repeat("0123456789abcdef", 64<<10) // 1 MiB
	if err := os.WriteFile(src, []byte("skipped"+body), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	path := filepath.Join(dir, "log")
	r := io.MultiReader(strings.NewReader("header"), io.NewSectionReader(f, 7, int64(len(body))))
	if err := WriteFileFrom(path, r, 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "header"+body {
		t.Fatalf("read %d bytes, %v; want the header and the %d bytes of the tail", len(b), err, len(body))
	}
	onlyFile(t, dir, "log", "old-log")
}

// An error reading the content fails the write, after part of it was
// written: the old file stands whole, and no temp file is left.
func TestWriteFileFromReadError(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "log")
	if err := WriteFile(path, []byte("old\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	r := io.MultiReader(strings.NewReader(strings.Repeat("new", 100<<10)), iotest.ErrReader(boom))
	if err := WriteFileFrom(path, r, 0o600); !errors.Is(err, boom) {
		t.Fatalf("WriteFileFrom with a failing reader: %v, want %v", err, boom)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "old\n" {
		t.Errorf("the old file became %q (%v)", b, err)
	}
	onlyFile(t, dir, "log")
}

// RemoveTemps removes the temp files a crashed write of path left, named
// as os.CreateTemp names them, and nothing else: not path, not the temp
// files of another path.
func TestRemoveTemps(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "log")
	if err := WriteFile(path, []byte("the log\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, pattern := range []string{".log.*.tmp", ".log.*.tmp", ".log2.*.tmp"} {
		f, err := os.CreateTemp(dir, pattern) // what a crash mid-write leaves
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	for _, name := range []string{"log.tmp", ".log.tmp", ".log.x1.tmp"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := RemoveTemps(path); err != nil {
		t.Fatal(err)
	}
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range es {
		if !strings.HasPrefix(e.Name(), ".log2.") {
			got = append(got, e.Name())
		}
	}
	if want := []string{".log.tmp", ".log.x1.tmp", "log", "log.tmp"}; !slices.Equal(got, want) || len(es) != len(want)+1 {
		t.Errorf("left %v (and %d of log2's), want %v and log2's temp file", got, len(es)-len(got), want)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "the log\n" {
		t.Errorf("path became %q (%v)", b, err)
	}
	if err := RemoveTemps(filepath.Join(dir, "no-such-dir", "log")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("RemoveTemps in a missing directory: %v, want ErrNotExist", err)
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
	slices.Sort(names)
	if !slices.Equal(got, names) {
		t.Errorf("directory holds %v, want %v", got, names)
	}
}
