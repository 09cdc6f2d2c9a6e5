package testwait

import (
	"fmt"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestRecv(t *testing.T) {
	ch := make(chan int, 1)
	ch <- 7
	if got := Recv(t, ch, "seven"); got != 7 {
		t.Errorf("Recv = %d, want 7", got)
	}
	close(ch)
	if got := Recv(t, ch, "the close"); got != 0 {
		t.Errorf("Recv on a closed channel = %d, want 0", got)
	}
}

func TestGroup(t *testing.T) {
	var wg sync.WaitGroup
	n := 0
	wg.Go(func() { n = 1 })
	Group(t, &wg, "the goroutine")
	if n != 1 {
		t.Error("Group returned before the goroutine ended")
	}
}

func TestCmd(t *testing.T) {
	cmd := exec.Command("sh", "-c", "exit 3")
	if err := cmd.Start(); err != nil {
		t.Fatalf("no sh to run: %v", err)
	}
	if err := Cmd(t, cmd, "sh"); err == nil || cmd.ProcessState.ExitCode() != 3 {
		t.Errorf("Cmd = %v (exit code %d), want exit status 3", err, cmd.ProcessState.ExitCode())
	}
}

// recorder is a test that records its fatal message; Fatalf ends the
// goroutine as testing.T's does.
type recorder struct {
	testing.TB
	msg chan string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.msg <- fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// fails runs fn with a recorder and a short bound, and returns the fatal
// message fn gave (failing if it gave none, or returned).
func fails(t *testing.T, fn func(tb testing.TB)) string {
	t.Helper()
	defer func(old time.Duration) { bound = old }(bound)
	bound = 50 * time.Millisecond
	r := &recorder{TB: t, msg: make(chan string, 1)}
	returned := make(chan struct{})
	go func() {
		fn(r)
		close(returned)
	}()
	select {
	case m := <-r.msg:
		return m
	case <-returned:
		t.Fatal("the wait returned instead of failing")
	case <-time.After(Bound):
		t.Fatal("the wait neither failed nor returned")
	}
	return ""
}

// A wait that does not end fails the test with a message naming it.
func TestWaitsFail(t *testing.T) {
	if m := fails(t, func(tb testing.TB) { Recv(tb, make(chan int), "a value") }); !strings.Contains(m, "a value") {
		t.Errorf("Recv's message %q does not say what it waited for", m)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	defer wg.Done()
	if m := fails(t, func(tb testing.TB) { Group(tb, &wg, "the workers") }); !strings.Contains(m, "the workers") {
		t.Errorf("Group's message %q does not say what it waited for", m)
	}
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatalf("no sleep to run: %v", err)
	}
	if m := fails(t, func(tb testing.TB) { Cmd(tb, cmd, "sleep") }); !strings.Contains(m, "sleep") || !strings.Contains(m, "killed") {
		t.Errorf("Cmd's message %q does not say what it waited for and that it killed it", m)
	}
	if cmd.ProcessState == nil || cmd.ProcessState.Success() {
		t.Errorf("the command was not killed: %v", cmd.ProcessState)
	}
}
