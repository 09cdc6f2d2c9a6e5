package ckpt

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/coordnet"
	"github.com/ckpt/ckpt/internal/jobenv"
	"github.com/ckpt/ckpt/internal/redundancy"
	"github.com/ckpt/ckpt/internal/storage/location"
	"github.com/ckpt/ckpt/internal/uncoord"
)

// A rank's configuration errors exit with ExitConfig, so that 'ckpt run'
// gives up at once instead of relaunching the job to fail the same way.
func TestExitStatusOfConfigurationErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "a-file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		env  map[string]string
	}{
		{"redundancy that does not parse", map[string]string{"CKPT_REDUNDANCY": "xor:1"}},
		{"shared tier that is a file", map[string]string{"CKPT_SHARED": file}},
		{"shared tier under a file", map[string]string{"CKPT_SHARED": filepath.Join(file, "sub")}},
		{"cache under a file", map[string]string{"CKPT_CACHE": filepath.Join(file, "cache")}},
		{"durability", map[string]string{"CKPT_CACHE_DURABILITY": "forever"}},
		{"interval", map[string]string{"CKPT_INTERVAL": "often"}},
		{"flush-every", map[string]string{"CKPT_FLUSH_EVERY": "zero"}},
		{"flush prior", map[string]string{jobenv.VarFlushPrior: "{not json"}},
		{"incarnation", map[string]string{jobenv.VarIncarnation: "-1"}},
		{"staging servers", map[string]string{jobenv.VarStage: "no-port"}},
		{"rank", map[string]string{jobenv.VarRank: "first"}},
		{"shared bandwidth", map[string]string{jobenv.VarSharedBandwidth: "fast"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("CKPT_COORD", "") // a job of one rank
			t.Setenv("CKPT_SIZE", "1")
			t.Setenv("CKPT_RANK", "0")
			t.Setenv("CKPT_CACHE", filepath.Join(t.TempDir(), "cache"))
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			job, err := Join(context.Background(), JobOptions{})
			if err == nil {
				job.Close()
				t.Fatalf("Join accepted %v", tc.env)
			}
			if !errors.Is(err, ErrConfig) || ExitStatus(err) != ExitConfig {
				t.Errorf("%v: ExitStatus %d, want %d (a configuration error)", err, ExitStatus(err), ExitConfig)
			}
		})
	}
}

// A redundancy scheme the nodes cannot hold (xor:9 on 4 nodes) fails the
// first checkpoint with a configuration error.
func TestInfeasibleRedundancyIsAConfigurationError(t *testing.T) {
	j := newTestJob(t, 4, 4, "xor:9")
	errs := j.run(func(r int, s *Store) error { return writeCheckpoint(context.Background(), s, "c1") })
	for r, err := range errs {
		if err == nil || ExitStatus(err) != ExitConfig {
			t.Errorf("rank %d: %v: ExitStatus %d, want %d", r, err, ExitStatus(err), ExitConfig)
		}
	}
}

func TestExitStatus(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want int
	}{
		{nil, 0},
		{errors.New("boom"), 1},
		{fmt.Errorf("rank 2: %w", coordnet.ErrAborted), ExitJobFailed},
		{fmt.Errorf("send: %w", redundancy.ErrPeerClosed), ExitJobFailed},
		{configError(errors.New("bad")), ExitConfig},
		{fmt.Errorf("himeno: %w: too many ranks", ErrConfig), ExitConfig},
		{fmt.Errorf("restart: %w: %w", uncoord.ErrCannotServe, errors.New("record 7: hash mismatch")), jobenv.ExitCannotServe},
		// The log cannot serve, whatever else the error says.
		{fmt.Errorf("hello: %w: %w", uncoord.ErrCannotServe, redundancy.ErrPeerClosed), jobenv.ExitCannotServe},
	} {
		if got := ExitStatus(tc.err); got != tc.want {
			t.Errorf("ExitStatus(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}

// A shared directory that is misconfigured is a configuration error; one
// whose file system hiccups (EIO, ESTALE, full) may come back at a
// relaunch, and must not end the job.
func TestSharedMisconfigured(t *testing.T) {
	for _, tc := range []struct {
		loc  string
		err  error
		want bool
	}{
		{"/lustre/job", &fs.PathError{Op: "mkdir", Path: "/lustre/job", Err: syscall.ENOTDIR}, true},
		{"/lustre/job", &fs.PathError{Op: "open", Path: "/lustre/job/x", Err: syscall.EACCES}, true},
		{"/lustre/job", &fs.PathError{Op: "open", Path: "/lustre/job/x", Err: syscall.EROFS}, true},
		{"/lustre/job", &fs.PathError{Op: "open", Path: "/lustre/job/x", Err: syscall.EIO}, false},
		{"/lustre/job", &fs.PathError{Op: "open", Path: "/lustre/job/x", Err: syscall.ESTALE}, false},
		{"/lustre/job", &fs.PathError{Op: "write", Path: "/lustre/job/x", Err: syscall.ENOSPC}, false},
		{"s3://bucket/job", errors.New("connection refused"), false},
	} {
		if got := sharedMisconfigured(tc.loc, tc.err); got != tc.want {
			t.Errorf("%s: %v: misconfigured %v, want %v", tc.loc, tc.err, got, tc.want)
		}
	}
}

// A shared directory that fails to open as a misconfigured one would is a
// configuration error at the first launch only: at a relaunch it opened
// before (torture found a shared tier gone for a second ending a job whose
// caches held good checkpoints), so the launcher must try again.
func TestSharedOpenErrorAtRelaunchIsAFailure(t *testing.T) {
	notDir := &fs.PathError{Op: "mkdir", Path: "/lustre/job", Err: syscall.ENOTDIR}
	if err := sharedOpenError("/lustre/job", 0, notDir); ExitStatus(err) != ExitConfig {
		t.Errorf("first launch: %v: ExitStatus %d, want %d", err, ExitStatus(err), ExitConfig)
	}
	err := sharedOpenError("/lustre/job", 3, notDir)
	if ExitStatus(err) != 1 || !errors.Is(err, syscall.ENOTDIR) || !strings.Contains(err.Error(), "relaunch 3") {
		t.Errorf("relaunch 3: %v: ExitStatus %d, want 1 with ENOTDIR and the relaunch named", err, ExitStatus(err))
	}
	eio := &fs.PathError{Op: "open", Path: "/lustre/job/x", Err: syscall.EIO}
	if err := sharedOpenError("/lustre/job", 0, eio); ExitStatus(err) != 1 {
		t.Errorf("first launch, EIO: %v: ExitStatus %d, want 1", err, ExitStatus(err))
	}
}

// A relaunched rank tries again to open a shared tier that is gone for a
// moment (a file where its directory was), and opens it once it is back;
// at the first launch it does not wait.
func TestSharedTierBackAtRelaunchOpens(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "shared")
	if err := os.WriteFile(dir, []byte("in the way"), 0o600); err != nil {
		t.Fatal(err)
	}
	sleeps := 0
	defer func(f func(time.Duration)) { sharedSleep = f }(sharedSleep)
	sharedSleep = func(time.Duration) {
		// The tier comes back after the second failed try.
		if sleeps++; sleeps == 2 {
			if err := os.Remove(dir); err != nil {
				t.Error(err)
			}
		}
	}
	if _, err := openShared(dir, location.Options{}, 0); err == nil || sleeps != 0 {
		t.Fatalf("first launch: %v after %d retries, want an error and none", err, sleeps)
	}
	b, err := openShared(dir, location.Options{}, 1)
	if err != nil {
		t.Fatalf("relaunch: the shared tier came back, yet: %v", err)
	}
	if sleeps != 2 {
		t.Errorf("relaunch: opened after %d retries, want 2", sleeps)
	}
	b.Close()
}

// A shared tier that stays gone fails a relaunched rank once
// sharedReopenFor has passed.
func TestSharedTierGoneAtRelaunchFails(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "shared")
	if err := os.WriteFile(dir, []byte("in the way"), 0o600); err != nil {
		t.Fatal(err)
	}
	defer func(d time.Duration) { sharedReopenFor = d }(sharedReopenFor)
	sharedReopenFor = time.Second
	_, err := openShared(dir, location.Options{}, 1)
	if !errors.Is(err, syscall.ENOTDIR) {
		t.Fatalf("relaunch, tier gone for good: %v, want ENOTDIR", err)
	}
}
