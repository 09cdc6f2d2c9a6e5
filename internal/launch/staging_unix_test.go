//go:build unix

package launch

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// The staging servers' directory (their journals and address files) is
// the job's user's only, even with a umask that takes nothing away.
func TestStagingDirPrivate(t *testing.T) {
	defer syscall.Umask(syscall.Umask(0))
	dir := t.TempDir()
	script := filepath.Join(dir, "fake-stage.sh")
	if err := os.WriteFile(script, []byte(fakeStage), 0o700); err != nil {
		t.Fatal(err)
	}
	sdir := filepath.Join(dir, "cache", "staging")
	s, err := StartStaging(StagingConfig{Servers: 1, Program: script, Dir: sdir, Token: "t"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	fi, err := os.Stat(sdir)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o700 {
		t.Fatalf("staging directory mode %v, want 0700", fi.Mode().Perm())
	}
}
