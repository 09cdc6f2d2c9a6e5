package main

import (
	"runtime"

	"github.com/ckpt/ckpt"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/internal/resource"
)

// fakeMemory makes the machine have avail bytes of memory left.
func fakeMemory(t *testing.T, avail int64) {
	t.Helper()
	old := probeMemory
	probeMemory = func() resource.Limit { return resource.Limit{Avail: avail, From: "MemAvailable in /proc/meminfo"} }
	t.Cleanup(func() { probeMemory = old })
}

// Sizes whose arrays cannot fit are refused before anything is allocated:
// one line naming the flag, what is needed and what is there, exit status
// ckpt.ExitConfig (a configuration error: 'ckpt run' does not relaunch it), not the Go runtime's out-of-memory crash (which
// would also kill this test binary).
func TestExampleAbsurdSizesRefused(t *testing.T) {
	fakeMemory(t, 1<<30)
	checkRefused(t, ckpt.ExitConfig, []string{"--n 1000000", "this rank (of 1) needs 56 TB of memory", "1.07 GB available", "MemAvailable"},
		"example", "matmul", "--n", "1000000")
	checkRefused(t, ckpt.ExitConfig, []string{"--size 65536x65536x64", "needs 16.4 TB of memory", "1.07 GB available"},
		"example", "himeno", "--size", "65536x65536x64")
	// What fits runs.
	if code, _, stderr := runCLI(t, "example", "matmul", "--n", "64"); code != exitOK {
		t.Errorf("matmul --n 64 with 1 GiB: exit %d, %s", code, stderr)
	}
}

// The real probe refuses a grid no machine holds (16 PB).
func TestExampleAbsurdSizeOnThisMachine(t *testing.T) {
	if runtime.GOOS != "linux" || !resource.ProbeMemory().Known() {
		t.Skip("this machine's free memory cannot be read (only Linux's is probed): the size would be allocated and crash the test")
	}
	code, _, stderr := runCLI(t, "example", "himeno", "--size", "65536x65536x65536")
	if code != ckpt.ExitConfig || !strings.Contains(stderr, "--size 65536x65536x65536: this rank (of 1) needs") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

// At a relaunch the same refusal is an ordinary failure, not a
// configuration error: the sizes fitted at the first launch, and memory
// short now (page cache a cgroup counts, another job) may be back at the
// next, so 'ckpt run' must not give up on the job for it.
func TestExampleMemoryShortAtRelaunchIsAFailure(t *testing.T) {
	fakeMemory(t, 1<<30)
	t.Setenv("CKPT_INCARNATION", "3")
	code, _, stderr := runCLI(t, "example", "matmul", "--n", "1000000")
	if code != exitError || !strings.Contains(stderr, "--n 1000000: this rank (of 1) needs") || !strings.Contains(stderr, "relaunch 3") {
		t.Errorf("exit %d (want %d), stderr %q", code, exitError, stderr)
	}
}
