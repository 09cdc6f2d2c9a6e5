// Package testwait bounds the waits of tests: a wait that does not end
// fails the test with a message saying what it waited for, instead of
// hanging until the test binary's timeout kills every test of the package
// with a stack dump.
//
// The bound is generous, since the tests must pass on a busy machine
// under the race detector; it only has to come before that timeout (10
// minutes by default for a whole package).
package testwait

import (
	"os/exec"
	"sync"
	"testing"
	"time"
)

// Bound is how long any one wait may take.
const Bound = 3 * time.Minute

var bound = Bound // shortened by this package's tests

// Recv returns the next value received from ch (or ch's zero value once
// it is closed), failing the test if none comes within Bound. what says
// what the value is, for the message.
func Recv[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	timer := time.NewTimer(bound)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		t.Fatalf("waited %v for %s", bound, what)
		panic("unreachable")
	}
}

// Group waits for wg, failing the test if it has not finished within
// Bound. The goroutines it waits for are left running then.
func Group(t testing.TB, wg *sync.WaitGroup, what string) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	Recv(t, done, what)
}

// Cmd waits for cmd, which has been started, and returns its Wait's
// error; if it has not exited within Bound it is killed and the test
// fails.
func Cmd(t testing.TB, cmd *exec.Cmd, what string) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	timer := time.NewTimer(bound)
	defer timer.Stop()
	select {
	case err := <-done:
		return err
	case <-timer.C:
		cmd.Process.Kill()
		<-done // Wait returns once the process is dead
		t.Fatalf("waited %v for %s to exit; killed it", bound, what)
		panic("unreachable")
	}
}
