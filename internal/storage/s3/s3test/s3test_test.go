package s3test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBinary(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "minio")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	defer func(old string) { defaultBinary = old }(defaultBinary)

	// Nothing anywhere: ErrNotFound, with the message tests skip with.
	t.Setenv("PATH", t.TempDir())
	t.Setenv(EnvBinary, "")
	t.Setenv(EnvRequire, "")
	t.Setenv("CI", "")
	defaultBinary = filepath.Join(dir, "missing")
	_, err := Binary()
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "scripts/minio.sh") {
		t.Errorf("Binary() with no minio = %v, want ErrNotFound", err)
	}
	// Where the tests must run (CI), nothing is an error that fails them:
	// not ErrNotFound, which they skip on.
	for _, env := range [][2]string{{EnvRequire, "1"}, {"CI", "true"}} {
		t.Run(env[0], func(t *testing.T) {
			t.Setenv(env[0], env[1])
			_, err := Binary()
			if err == nil || errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "scripts/minio.sh") {
				t.Errorf("Binary() with no minio and $%s=%s = %v, want an error other than ErrNotFound", env[0], env[1], err)
			}
			if srv, err := StartIfFound(); srv != nil || err == nil {
				t.Errorf("StartIfFound() with no minio and $%s=%s = %v, %v; want an error", env[0], env[1], srv, err)
			}
		})
	}
	// The default path, then PATH, then the variable win in turn.
	defaultBinary = exe
	if got, err := Binary(); err != nil || got != exe {
		t.Errorf("Binary() = %q, %v; want the default %q", got, err, exe)
	}
	t.Setenv("PATH", dir)
	if got, err := Binary(); err != nil || got != exe {
		t.Errorf("Binary() = %q, %v; want %q from PATH", got, err, exe)
	}
	t.Setenv(EnvBinary, exe)
	if got, err := Binary(); err != nil || got != exe {
		t.Errorf("Binary() = %q, %v; want $%s", got, err, EnvBinary)
	}
	// A variable that names no executable is an error, not a skip.
	for _, p := range []string{plain, filepath.Join(dir, "missing"), dir} {
		t.Setenv(EnvBinary, p)
		if _, err := Binary(); err == nil || errors.Is(err, ErrNotFound) {
			t.Errorf("Binary() with $%s=%s = %v, want an error other than ErrNotFound", EnvBinary, p, err)
		}
	}
}
