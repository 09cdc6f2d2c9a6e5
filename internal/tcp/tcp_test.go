package tcp

import (
	"errors"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/testwait"
)

func TestBackoff(t *testing.T) {
	b := Backoff{First: 10 * time.Millisecond, Max: 50 * time.Millisecond}
	var got []time.Duration
	for range 5 {
		got = append(got, b.Next(nil))
	}
	want := []time.Duration{10, 20, 40, 50, 50}
	for i := range want {
		if got[i] != want[i]*time.Millisecond {
			t.Fatalf("delays %v, want %v ms", got, want)
		}
	}
	b.Reset()
	if d := b.Next(nil); d != 10*time.Millisecond {
		t.Fatalf("after Reset: %v, want 10ms", d)
	}
	// Jitter draws from [d/2, d]: the extremes of the source give the
	// bounds.
	b.Reset()
	if d := b.Next(func(int64) int64 { return 0 }); d != 5*time.Millisecond {
		t.Fatalf("least jitter: %v, want 5ms", d)
	}
	if d := b.Next(func(n int64) int64 { return n - 1 }); d != 20*time.Millisecond {
		t.Fatalf("most jitter: %v, want 20ms", d)
	}
}

// flaky is a listener whose Accept fails with errs first, then gives
// conns, then reports itself closed.
type flaky struct {
	mu    sync.Mutex
	errs  []error
	conns []net.Conn
	calls int
}

func (l *flaky) Accept() (net.Conn, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls++
	if len(l.errs) > 0 {
		err := l.errs[0]
		l.errs = l.errs[1:]
		return nil, err
	}
	if len(l.conns) > 0 {
		c := l.conns[0]
		l.conns = l.conns[1:]
		return c, nil
	}
	return nil, net.ErrClosed
}
func (*flaky) Close() error   { return nil }
func (*flaky) Addr() net.Addr { return &net.TCPAddr{} }

// Transient errors are logged and retried, backing off; a connection after
// them is served; a closed listener ends the loop with its error.
func TestAcceptRetries(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	ln := &flaky{errs: []error{syscall.EMFILE, syscall.ECONNABORTED}, conns: []net.Conn{a}}
	var retries []time.Duration
	var served []net.Conn
	err := Accept(ln, make(chan struct{}), func(err error, d time.Duration) {
		if !errors.Is(err, syscall.EMFILE) && !errors.Is(err, syscall.ECONNABORTED) {
			t.Errorf("logged %v", err)
		}
		retries = append(retries, d)
	}, func(c net.Conn) { served = append(served, c) })
	if !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept = %v, want net.ErrClosed", err)
	}
	if len(retries) != 2 || retries[0] != 5*time.Millisecond || retries[1] != 10*time.Millisecond {
		t.Errorf("retries after %v, want [5ms 10ms]", retries)
	}
	if len(served) != 1 || served[0] != a {
		t.Errorf("served %v, want the one connection", served)
	}
}

// Once done is closed, an error ends the loop quietly, and so does done
// closing during a back-off.
func TestAcceptDone(t *testing.T) {
	done := make(chan struct{})
	close(done)
	ln := &flaky{errs: []error{syscall.EMFILE}}
	if err := Accept(ln, done, nil, func(net.Conn) { t.Error("served") }); err != nil || ln.calls != 1 {
		t.Fatalf("Accept = %v after %d calls, want nil after 1", err, ln.calls)
	}

	done = make(chan struct{})
	ln = &flaky{errs: []error{syscall.EMFILE}}
	ret := make(chan error)
	go func() {
		ret <- Accept(ln, done, func(error, time.Duration) { close(done) }, func(net.Conn) {})
	}()
	if err := testwait.Recv(t, ret, "Accept to return once done closed"); err != nil {
		t.Fatalf("Accept = %v, want nil", err)
	}
}
