//go:build linux

package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// launcher is `ckpt run` started as a process of its own (the test binary
// as ckpt), so that it can be signalled. Its ranks, and every process they
// start, carry a marker in their environment that /proc shows.
type launcher struct {
	cmd    *exec.Cmd
	marker string
	lines  chan string
	mu     sync.Mutex
	log    bytes.Buffer // stderr so far
	exited chan struct{}
}

// rankArgs is a Himeno job that runs far longer than any test waits.
func rankArgs(t *testing.T) []string {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return []string{"--", exe, "example", "himeno", "--size", "xs", "--iterations", "10000000"}
}

func startLauncher(t *testing.T, args ...string) *launcher {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	l := &launcher{marker: fmt.Sprintf("CKPT_TEST_MARKER=%s-%d", t.Name(), time.Now().UnixNano()),
		lines: make(chan string, 1<<16), exited: make(chan struct{})}
	full := append([]string{"run", "-v", "--cache-root", filepath.Join(t.TempDir(), "c")}, args...)
	full = append(full, rankArgs(t)...)
	l.cmd = exec.Command(exe, full...)
	l.cmd.Env = append(os.Environ(), asCkpt+"=1", l.marker)
	stderr, err := l.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := l.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			l.mu.Lock()
			l.log.WriteString(sc.Text() + "\n")
			l.mu.Unlock()
			select {
			case l.lines <- sc.Text():
			default:
			}
		}
		close(l.lines)
	}()
	t.Cleanup(func() {
		// Whatever happened, leave nothing running.
		l.cmd.Process.Kill()
		for _, pid := range marked(l.marker) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return l
}

func (l *launcher) stderr() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.log.String()
}

// waitFor waits for a line of stderr that contains s.
func (l *launcher) waitFor(t *testing.T, s string, timeout time.Duration) {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case line, ok := <-l.lines:
			if !ok {
				t.Fatalf("ckpt run ended before printing %q:\n%s", s, l.stderr())
			}
			if strings.Contains(line, s) {
				return
			}
		case <-deadline:
			t.Fatalf("no %q from ckpt run within %v:\n%s", s, timeout, l.stderr())
		}
	}
}

func (l *launcher) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := l.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

// wait waits for ckpt run to exit and returns its exit status.
func (l *launcher) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		for range l.lines { // drain, so that the reader never blocks
		}
		done <- l.cmd.Wait()
	}()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(timeout):
		t.Fatalf("ckpt run did not exit within %v:\n%s", timeout, l.stderr())
	}
	return -1
}

// marked lists the processes whose environment holds marker, other than
// zombies (which hold nothing) and this test.
func marked(marker string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		for _, kv := range bytes.Split(b, []byte{0}) {
			if string(kv) == marker {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

// ranksRunning checks that the marker finds the job's ranks (else the
// check for survivors could not fail).
func (l *launcher) ranksRunning(t *testing.T, atLeast int) {
	t.Helper()
	var others []int
	for _, pid := range marked(l.marker) {
		if pid != l.cmd.Process.Pid {
			others = append(others, pid)
		}
	}
	if len(others) < atLeast {
		t.Fatalf("%d marked processes besides ckpt run (%v), want at least %d ranks", len(others), others, atLeast)
	}
}

// noSurvivors checks, once ckpt run has exited, that none of its
// processes did not.
func (l *launcher) noSurvivors(t *testing.T) {
	t.Helper()
	if pids := marked(l.marker); len(pids) > 0 {
		t.Errorf("processes of the job still run after ckpt run exited: %v\n%s", pids, l.stderr())
	}
}

// SIGTERM, or the --signal one, asks the job to checkpoint and stop: it
// does, every rank is reaped, and ckpt run says how to resume; 143 after
// SIGTERM, 0 after --signal's planned stop.
func TestRunSignalCheckpointsThenStops(t *testing.T) {
	for _, tc := range []struct {
		sig    syscall.Signal
		args   []string
		status int
	}{
		{syscall.SIGTERM, nil, 128 + int(syscall.SIGTERM)},
		{syscall.SIGUSR1, []string{"--signal", "USR1"}, 0},
	} {
		t.Run(tc.sig.String(), func(t *testing.T) {
			l := startLauncher(t, append([]string{"-n", "3", "--nodes", "3", "--interval", "5steps", "--halt-timeout", "5m"}, tc.args...)...)
			l.waitFor(t, "committed", 3*time.Minute)
			l.ranksRunning(t, 3)
			l.signal(t, tc.sig)
			if got := l.wait(t, 5*time.Minute); got != tc.status {
				t.Errorf("exit status %d, want %d\n%s", got, tc.status, l.stderr())
			}
			l.noSurvivors(t)
			out := l.stderr()
			for _, want := range []string{"stopped by " + sigName(tc.sig), "the job checkpointed and stopped",
				"run the same command again to resume from checkpoint himeno-"} {
				if !strings.Contains(out, want) {
					t.Errorf("stderr lacks %q:\n%s", want, out)
				}
			}
		})
	}
}

// A second signal kills the ranks at once, even when the job would never
// stop by itself (no checkpoint policy: the halt never reaches it).
func TestRunSecondSignalStopsAtOnce(t *testing.T) {
	l := startLauncher(t, "-n", "3", "--interval", "none", "--halt-timeout", "1h")
	l.waitFor(t, "started from scratch", 3*time.Minute)
	l.ranksRunning(t, 3)
	l.signal(t, syscall.SIGINT)
	l.waitFor(t, "asking the job to checkpoint and stop", time.Minute)
	l.signal(t, syscall.SIGINT)
	if got := l.wait(t, 2*time.Minute); got != 128+int(syscall.SIGINT) {
		t.Errorf("exit status %d, want %d\n%s", got, 128+int(syscall.SIGINT), l.stderr())
	}
	l.noSurvivors(t)
	if out := l.stderr(); !strings.Contains(out, "ranks killed (a second signal)") || !strings.Contains(out, "starts again from scratch") {
		t.Errorf("stderr does not say what happened:\n%s", out)
	}
}

// A signal while the ranks are being started: the launcher starts no
// more, the job cannot halt (no policy), the grace ends, every rank
// started is killed and reaped.
func TestRunSignalDuringStartup(t *testing.T) {
	l := startLauncher(t, "-n", "6", "--nodes", "3", "--interval", "none", "--halt-timeout", "2s")
	l.waitFor(t, "  launch", 3*time.Minute) // printed just before the ranks start
	l.signal(t, syscall.SIGTERM)
	if got := l.wait(t, 3*time.Minute); got != 128+int(syscall.SIGTERM) {
		t.Errorf("exit status %d, want %d\n%s", got, 128+int(syscall.SIGTERM), l.stderr())
	}
	l.noSurvivors(t)
	if out := l.stderr(); !strings.Contains(out, "stopped by SIGTERM") {
		t.Errorf("stderr does not say what happened:\n%s", out)
	}
}

// A launcher killed outright (SIGKILL: no chance to act) takes its ranks
// with it.
func TestRunLauncherKilledTakesRanks(t *testing.T) {
	l := startLauncher(t, "-n", "3", "--interval", "none")
	l.waitFor(t, "started from scratch", 3*time.Minute)
	l.ranksRunning(t, 3)
	l.signal(t, syscall.SIGKILL)
	l.wait(t, time.Minute)
	// The kernel kills them as the launcher dies; they take a moment to go.
	deadline := time.Now().Add(time.Minute)
	for len(marked(l.marker)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("ranks %v outlived their launcher by a minute", marked(l.marker))
		}
		time.Sleep(50 * time.Millisecond)
	}
}
