package jobdir

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// CheckWritable accepts a writable directory, or one that could be made,
// and leaves nothing there; a file, or a path under a file, is refused.
func TestCheckWritable(t *testing.T) {
	root := t.TempDir()
	file := filepath.Join(root, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, ok := range []string{root, filepath.Join(root, "new", "deeper")} {
		if err := CheckWritable(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	if ents, _ := os.ReadDir(root); len(ents) != 1 {
		t.Errorf("CheckWritable left %d entries, want only the file", len(ents))
	}
	for dir, want := range map[string]string{file: "is a file, not a directory", filepath.Join(file, "sub"): "cannot be made: " + file + " is a file"} {
		if err := CheckWritable(dir); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", dir, err, want)
		}
	}
}
