//go:build unix

package jobdir

import (
	"io/fs"
	"path/filepath"
	"syscall"
	"testing"
)

// The job's directory and every file the job keeps there (its lock, its
// configuration, its status, a request) are its user's only, even with a
// umask that takes nothing away.
func TestJobDirPrivate(t *testing.T) {
	defer syscall.Umask(syscall.Umask(0))
	d := At(filepath.Join(t.TempDir(), "jobs", "myjob"))
	l, err := d.Acquire(testSpec())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if err := d.WriteStatus(Status{}); err != nil {
		t.Fatal(err)
	}
	if err := d.Request(HaltFile); err != nil {
		t.Fatal(err)
	}
	files := 0
	err = filepath.WalkDir(filepath.Dir(d.Path), func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := e.Info()
		if err != nil {
			return err
		}
		want := fs.FileMode(fileMode)
		if e.IsDir() {
			want = dirMode
		} else {
			files++
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s: mode %v, want %v", p, got, want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files != 4 { // lock, job.json, status.json, the request
		t.Errorf("%d files, want 4", files)
	}
}
