//go:build unix

package launch

import (
	"syscall"
	"testing"
)

func TestParseSignal(t *testing.T) {
	for in, want := range map[string]syscall.Signal{"USR1": syscall.SIGUSR1, "sigusr2": syscall.SIGUSR2,
		"SIGTERM": syscall.SIGTERM, "10": syscall.Signal(10), " int ": syscall.SIGINT} {
		if got, err := ParseSignal(in); err != nil || got != want {
			t.Errorf("ParseSignal(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "USR3", "KILL", "9", "SIGSTOP", "0", "65", "-1", "1.5"} {
		if _, err := ParseSignal(in); err == nil {
			t.Errorf("ParseSignal(%q) accepted", in)
		}
	}
	if n := SignalName(syscall.SIGTERM); n != "SIGTERM" {
		t.Errorf("SignalName(SIGTERM) = %q", n)
	}
}
