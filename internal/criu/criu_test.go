package criu

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestParseVersion(t *testing.T) {
	for _, c := range []struct {
		out  string
		want Version
		ok   bool
	}{
		{"Version: 4.1.1\n", Version{4, 1, 1}, true},
		{"Version: 4.2\nGitID: v4.2-12-gdeadbee\n", Version{4, 2, 0}, true},
		{"Version: 3.17.1\n", Version{3, 17, 1}, true},
		{"criu: command not found", Version{}, false},
		{"Version: four\n", Version{}, false},
		{"Version: 4\n", Version{}, false},
	} {
		v, err := ParseVersion(c.out)
		if (err == nil) != c.ok || v != c.want {
			t.Errorf("ParseVersion(%q) = %v, %v; want %v (ok %v)", c.out, v, err, c.want, c.ok)
		}
	}
}

func TestAtLeast(t *testing.T) {
	for _, c := range []struct {
		v    Version
		want bool
	}{{Version{4, 1, 0}, true}, {Version{4, 1, 1}, true}, {Version{5, 0, 0}, true}, {Version{4, 0, 9}, false}, {Version{3, 17, 1}, false}} {
		if got := c.v.AtLeast(MinVersion); got != c.want {
			t.Errorf("%v.AtLeast(%v) = %v", c.v, MinVersion, got)
		}
	}
}

func TestFind(t *testing.T) {
	env := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	found := func(p string) (string, error) { return "/usr/sbin/" + p, nil }
	missing := func(p string) (string, error) { return "", exec.ErrNotFound }
	if p, err := Find(env(nil), found); err != nil || p != "/usr/sbin/criu" {
		t.Errorf("PATH: %q, %v", p, err)
	}
	if p, err := Find(env(map[string]string{EnvVar: "/opt/criu"}), found); err != nil || p != "/opt/criu" {
		t.Errorf("%s: %q, %v", EnvVar, p, err)
	}
	var u *Unavailable
	if _, err := Find(env(nil), missing); !errors.As(err, &u) || u.Missing != "criu" || !errors.Is(err, ErrUnavailable) {
		t.Errorf("no criu: %v", err)
	}
	if _, err := Find(env(map[string]string{EnvVar: "/nonexistent/criu"}), missing); !errors.As(err, &u) || !strings.Contains(err.Error(), "/nonexistent/criu") {
		t.Errorf("a missing %s: %v", EnvVar, err)
	}
}

// fakeRunner answers --version and check as scripted.
func fakeRunner(version string, check string, checkErr error) Runner {
	return func(ctx context.Context, path string, args ...string) (string, error) {
		switch args[0] {
		case "--version":
			return version, nil
		case "check":
			return check, checkErr
		}
		return "", fmt.Errorf("unexpected %v", args)
	}
}

func TestCheck(t *testing.T) {
	exit1 := errors.New("exit status 1")
	for _, c := range []struct {
		name           string
		run            Runner
		missing, about string
	}{
		{"good", fakeRunner("Version: 4.1.1\n", "Looks good.\n", nil), "", ""},
		{"too old", fakeRunner("Version: 3.17.1\n", "Looks good.\n", nil), "version", "3.17.1"},
		{"privileges", fakeRunner("Version: 4.2\n", "Error (criu/crtools.c:230): CRIU needs to have the CAP_SYS_ADMIN or the CAP_CHECKPOINT_RESTORE capability\n", exit1), "privileges", "CAP_SYS_ADMIN"},
		{"kernel", fakeRunner("Version: 4.2\n", "Error (criu/kerndat.c:100): vdso: Failed to fill self vdso symtable\nError (criu/kerndat.c:1900): kerndat_vdso_fill_symtable failed\n", exit1), "kernel", "vdso"},
		{"not criu", func(ctx context.Context, path string, args ...string) (string, error) { return "", exit1 }, "criu", "exit status 1"},
	} {
		info, err := Check(t.Context(), "/x/criu", c.run)
		if c.missing == "" {
			if err != nil || info.Version != (Version{4, 1, 1}) {
				t.Errorf("%s: %+v, %v", c.name, info, err)
			}
			continue
		}
		var u *Unavailable
		if !errors.As(err, &u) || u.Missing != c.missing || !strings.Contains(err.Error(), c.about) {
			t.Errorf("%s: %v; want missing %s, naming %q", c.name, err, c.missing, c.about)
		}
	}
}

func TestFakeRoundTrip(t *testing.T) {
	f := &Fake{
		State: func(pid int) ([]byte, error) { return []byte(fmt.Sprint("state ", pid)), nil },
		Spawn: func(state []byte, inherit []Inherit) (int, error) {
			if string(state) != "state 42" || len(inherit) != 1 || inherit[0].Key != PipeKey(7) {
				return 0, fmt.Errorf("spawn of %q with %v", state, inherit)
			}
			return 43, nil
		},
	}
	dir := t.TempDir()
	if err := f.Dump(t.Context(), DumpRequest{Pid: 42, Dir: dir}); err != nil {
		t.Fatal(err)
	}
	pid, err := f.Restore(t.Context(), RestoreRequest{Dir: dir, Inherit: []Inherit{{Key: "pipe:[7]", File: os.Stdout}}})
	if err != nil || pid != 43 {
		t.Fatalf("restore: %d, %v", pid, err)
	}
	f.FailDump = errors.New("injected")
	if err := f.Dump(t.Context(), DumpRequest{Pid: 42, Dir: dir}); err == nil {
		t.Fatal("an injected failure did not fail the dump")
	}
}

// Only 4.1.x waits for hardware breakpoints that never fire: it alone
// needs CRIU_FAULT.
func TestNeedsFault(t *testing.T) {
	for _, c := range []struct {
		v    Version
		want bool
	}{{Version{4, 1, 0}, true}, {Version{4, 1, 1}, true}, {Version{4, 2, 1}, false}, {Version{5, 1, 0}, false}, {Version{3, 17, 1}, false}} {
		if got := c.v.NeedsFault(); got != c.want {
			t.Errorf("%s.NeedsFault() = %v, want %v", c.v, got, c.want)
		}
	}
}
