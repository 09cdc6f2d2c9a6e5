package criu

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/ckpt/ckpt/internal/jobenv"
)

// EnvVar names the criu binary to use (scripts/criu.sh prints one); without
// it, criu is looked up in PATH.
const EnvVar = jobenv.VarCRIU

// ErrUnavailable is wrapped by every error that says transparent
// checkpointing cannot work on this machine (an *Unavailable says what is
// missing): a configuration problem, not a failure a relaunch can fix.
var ErrUnavailable = errors.New("transparent checkpointing is unavailable")

// Unavailable says what is missing for transparent checkpointing and what
// to do about it.
type Unavailable struct {
	// Missing is one of "criu" (no binary), "version" (too old), "kernel"
	// (a feature `criu check` found missing) or "privileges".
	Missing string
	Detail  string // what was found
	Fix     string // what to do
}

func (u *Unavailable) Error() string {
	msg := fmt.Sprintf("%v: %s: %s", ErrUnavailable, u.Missing, u.Detail)
	if u.Fix != "" {
		msg += " (" + u.Fix + ")"
	}
	return msg
}

func (u *Unavailable) Unwrap() error { return ErrUnavailable }

const fetchHint = "scripts/criu.sh in ckpt's repository fetches a working one from Debian's archive; point " + EnvVar + " at it"

// Find returns the criu binary to use: $CKPT_CRIU if set (it must exist),
// else criu from PATH. lookupEnv and lookPath are os.LookupEnv and
// exec.LookPath outside tests.
func Find(lookupEnv func(string) (string, bool), lookPath func(string) (string, error)) (string, error) {
	if p, ok := lookupEnv(EnvVar); ok && p != "" {
		if _, err := lookPath(p); err != nil {
			return "", &Unavailable{Missing: "criu", Detail: fmt.Sprintf("%s=%s: %v", EnvVar, p, err), Fix: fetchHint}
		}
		return p, nil
	}
	p, err := lookPath("criu")
	if err != nil {
		return "", &Unavailable{Missing: "criu", Detail: "no criu in PATH and " + EnvVar + " is not set", Fix: "install CRIU " + MinVersion.String() + " or newer; " + fetchHint}
	}
	return p, nil
}

// Runner runs CRIU with args and returns its combined output; err is
// non-nil when it could not run or exited with a failure status.
type Runner func(ctx context.Context, path string, args ...string) (string, error)

// Exec is the Runner that runs the binary.
func Exec(ctx context.Context, path string, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, path, args...).CombinedOutput()
	return string(out), err
}

// Info is a CRIU that Check found working.
type Info struct {
	Path    string
	Version Version
}

// Check finds out whether the criu at path can checkpoint here: its
// version (MinVersion or newer), then `criu check`, CRIU's own test of the
// kernel's features and of the caller's privileges. What is missing is an
// *Unavailable.
func Check(ctx context.Context, path string, run Runner) (Info, error) {
	out, err := run(ctx, path, "--version")
	if err != nil {
		return Info{}, &Unavailable{Missing: "criu", Detail: fmt.Sprintf("%s --version: %v: %s", path, err, firstLine(out)), Fix: fetchHint}
	}
	v, err := ParseVersion(out)
	if err != nil {
		return Info{}, &Unavailable{Missing: "version", Detail: err.Error(), Fix: fetchHint}
	}
	if !v.AtLeast(MinVersion) {
		return Info{}, &Unavailable{Missing: "version",
			Detail: fmt.Sprintf("%s is CRIU %s; %s or newer is needed (older ones cannot dump on kernels from 6.13 on)", path, v, MinVersion),
			Fix:    fetchHint}
	}
	out, err = run(ctx, path, "check")
	if err != nil {
		return Info{}, classifyCheck(path, out, err)
	}
	return Info{Path: path, Version: v}, nil
}

// classifyCheck turns a failed `criu check` into what is missing: the
// privileges when CRIU says so, else the kernel's features it named.
func classifyCheck(path, out string, err error) *Unavailable {
	detail := errorLines(out)
	if detail == "" {
		detail = fmt.Sprintf("%v: %s", err, firstLine(out))
	}
	for _, p := range []string{"CAP_SYS_ADMIN", "CAP_CHECKPOINT_RESTORE", "Operation not permitted", "Permission denied", "must be run as root", "needs to be run as root"} {
		if strings.Contains(out, p) {
			fix := "run as root, or give criu CAP_CHECKPOINT_RESTORE and CAP_SYS_PTRACE"
			if os.Geteuid() != 0 {
				fix = fmt.Sprintf("ckpt runs as uid %d: %s", os.Geteuid(), fix)
			}
			return &Unavailable{Missing: "privileges", Detail: path + " check: " + detail, Fix: fix}
		}
	}
	return &Unavailable{Missing: "kernel", Detail: path + " check: " + detail,
		Fix: "the kernel lacks a feature CRIU needs; see `criu check --all` and docs/TRANSPARENT.md"}
}

// errorLines joins the lines of CRIU's output that report errors.
func errorLines(out string) string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "Error") || strings.Contains(l, "rror (") {
			lines = append(lines, l)
		}
	}
	if len(lines) > 3 {
		lines = lines[:3]
	}
	return strings.Join(lines, "; ")
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
