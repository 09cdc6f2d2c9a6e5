package main

import (
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/ckpt/ckpt/internal/launch"
	"github.com/ckpt/ckpt/internal/resource"
)

// fakeResources makes the machine have h for the rest of the test.
func fakeResources(t *testing.T, h resource.Have) {
	t.Helper()
	old := probeResources
	probeResources = func() resource.Have { return h }
	t.Cleanup(func() { probeResources = old })
}

// refusedQuickly runs a job that must be refused before anything starts:
// its program would leave a mark if it ever ran.
func refusedQuickly(t *testing.T, mention []string, args ...string) {
	t.Helper()
	mark := filepath.Join(t.TempDir(), "ran")
	start := time.Now()
	checkBadInput(t, mention, append(args, "--", "/bin/sh", "-c", "touch "+mark)...)
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("refusing took %v: something started", d)
	}
	if _, err := os.Stat(mark); err == nil {
		t.Errorf("a rank ran")
	}
}

func TestRunRefusesMoreProcessesThanAllowed(t *testing.T) {
	fakeResources(t, resource.Have{Procs: resource.Limit{Avail: 96000, From: "RLIMIT_NPROC 96364 (ulimit -u), 364 in use by this user"},
		FDs: resource.Unknown, Memory: resource.Unknown})
	refusedQuickly(t, []string{"-n 100000", "needs 100000 processes, 96000 available", "RLIMIT_NPROC"},
		"run", "-n", "100000")
}

func TestRunRefusesMoreDescriptorsThanAllowed(t *testing.T) {
	fakeResources(t, resource.Have{Procs: resource.Limit{Avail: 1 << 20, From: "plenty"},
		FDs: resource.Limit{Avail: 1000, From: "RLIMIT_NOFILE 1024 (ulimit -n), 24 open"}, Memory: resource.Unknown})
	// 3 per rank and 64 for the launcher itself; tree mode adds 3 per node.
	refusedQuickly(t, []string{"-n 400", "needs 1264 file descriptors, 1000 available", "ulimit -n"},
		"run", "-n", "400")
	refusedQuickly(t, []string{"-n 300", "needs 1024 file descriptors"},
		"run", "-n", "300", "--nodes", "20", "--tree")
}

// With the machine's own limits: no Linux machine runs ten million
// processes (pid_max is at most 4194304).
func TestRunRefusesAbsurdNOnThisMachine(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("only Linux's limits are probed; elsewhere ckpt run cannot refuse up front")
	}
	refusedQuickly(t, []string{"-n 10000000", "needs 10000000 processes"}, "run", "-n", "10000000")
}

func TestRunJoinTimeoutFlag(t *testing.T) {
	checkBadInput(t, []string{"--join-timeout", "0s"}, "run", "-n", "2", "--join-timeout", "0", "--", "true")
	checkBadInput(t, []string{"--join-timeout"}, "run", "-n", "2", "--join-timeout", "soon", "--", "true")
}

// The join allowance scales with -n unless --join-timeout says otherwise,
// and reaches the attempts' coordinators.
func TestRunJoinAllowance(t *testing.T) {
	fakeResources(t, resource.Have{Procs: resource.Unknown, FDs: resource.Unknown, Memory: resource.Unknown})
	specOf := func(ranks int, args ...string) runSpec {
		t.Helper()
		c := &cobra.Command{}
		rf := addRunFlags(c)
		if err := c.Flags().Parse(args); err != nil {
			t.Fatal(err)
		}
		s, err := rf.spec(ranks, "prog", nil)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	small, large := specOf(2), specOf(2000)
	if want := launch.JoinAllowance(2000, runtime.NumCPU()); large.joinTimeout != want || small.joinTimeout >= want {
		t.Errorf("join timeouts: -n 2 %v, -n 2000 %v; want %v for 2000", small.joinTimeout, large.joinTimeout, want)
	}
	s := specOf(2, "--join-timeout", "90s")
	if s.joinTimeout != 90*time.Second {
		t.Errorf("--join-timeout 90s: %v", s.joinTimeout)
	}
	s.progress, s.output = io.Discard, io.Discard
	_, coords, err := s.config()
	if err != nil {
		t.Fatal(err)
	}
	if coords.JoinTimeout != 90*time.Second {
		t.Errorf("the coordinators get a join timeout of %v", coords.JoinTimeout)
	}
}

// Ranks that start further apart than the heartbeat interval (which is all
// the time `ckpt run` used to leave them to join: a third of the heartbeat
// timeout) still make a job: rank 1 starts six seconds, two heartbeat
// timeouts, after rank 0.
func TestRunRanksStartingApartJoin(t *testing.T) {
	t.Setenv(asCkpt, "1")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	want, err := reference()
	if err != nil {
		t.Fatal(err)
	}
	// The timeout is long enough that ranks that have joined do not miss
	// it on a busy machine.
	script := `if [ "$CKPT_RANK" = 1 ]; then sleep 6; fi; exec "$0" "$@"`
	args := append([]string{"run", "-n", "2", "--heartbeat-timeout", "3s", "--retries", "0",
		"--cache-root", filepath.Join(t.TempDir(), "caches"), "--", "/bin/sh", "-c", script, exe}, himenoArgs...)
	code, stdout, stderr := runCLI(t, args...)
	if code != exitOK {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, want) {
		t.Errorf("stdout %q, want the result %q", stdout, want)
	}
}
