package resource

import (
	"math"
	"runtime"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	if err := Check(FDs, 100, Limit{Avail: 100, From: "x"}); err != nil {
		t.Errorf("need = have: %v", err)
	}
	if err := Check(Memory, math.MaxInt64, Unknown); err != nil {
		t.Errorf("unknown limit must not refuse: %v", err)
	}
	err := Check(FDs, 300064, Limit{Avail: 19990, From: "RLIMIT_NOFILE 20000 (ulimit -n), 10 open"})
	want := "needs 300064 file descriptors, 19990 available (RLIMIT_NOFILE 20000 (ulimit -n), 10 open)"
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
	err = Check(Procs, 100000, Limit{Avail: 96000, From: "f"})
	if err == nil || err.Error() != "needs 100000 processes, 96000 available (f)" {
		t.Errorf("procs: %v", err)
	}
	err = Check(Memory, 16e12, Limit{Avail: 24e9, From: "MemAvailable in /proc/meminfo"})
	if err == nil || !strings.HasPrefix(err.Error(), "needs 16 TB of memory, 24 GB available") {
		t.Errorf("memory: %v", err)
	}
}

func TestMulAddSaturate(t *testing.T) {
	for _, tc := range []struct {
		got, want int64
	}{
		{Mul(3, 4, 5), 60},
		{Mul(1<<31, 1<<31), 1 << 62},
		{Mul(1<<32, 1<<32), math.MaxInt64},
		{Mul(-1, 2), math.MaxInt64},
		{Mul(2, -1), math.MaxInt64},
		{Mul(0, math.MaxInt64, math.MaxInt64), 0},
		{Add(1, 2, 3), 6},
		{Add(math.MaxInt64, 1), math.MaxInt64},
		{Add(-5), math.MaxInt64},
	} {
		if tc.got != tc.want {
			t.Errorf("got %d, want %d", tc.got, tc.want)
		}
	}
}

// Probe must find this machine's limits where the system has them: a check
// that silently knows nothing would let absurd sizes through.
func TestProbeFindsLimits(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Probe reads /proc: only Linux has it; elsewhere every check passes")
	}
	h := Probe()
	if !h.FDs.Known() || !h.Memory.Known() || !h.Procs.Known() {
		t.Fatalf("Probe() = %+v: a limit of Linux was not found", h)
	}
	if h.Memory.Avail <= 0 || h.FDs.Avail <= 0 || h.Procs.Avail <= 0 {
		t.Errorf("Probe() = %+v: nothing available?", h)
	}
	t.Logf("%+v", h)
}
