package nodeloss

import (
	"fmt"
	"os"
	"slices"
	"testing"
)

// harness is what internal/cluster needs of a testing.TB, for one pattern
// outside a test (the ckpt torture command): temp directories, cleanups,
// and a fatal error that ends the pattern instead of the process.
// cluster.New, its faults and its bounded waits (internal/testwait) call
// only the methods below, on the goroutine that plays the pattern; the
// embedded testing.TB is nil, so a call of any other method panics, which
// the pattern reports as an error too.
type harness struct {
	testing.TB
	dir      string // under which TempDir makes directories
	cleanups []func()
}

// fatal is the panic value of harness.Fatal: the cluster gave up (a wait
// that did not end within testwait.Bound, a tier that failed).
type fatal struct{ msg string }

func (h *harness) Helper() {}

func (h *harness) Fatal(args ...any) { panic(fatal{fmt.Sprint(args...)}) }

func (h *harness) Fatalf(format string, args ...any) { panic(fatal{fmt.Sprintf(format, args...)}) }

func (h *harness) Cleanup(f func()) { h.cleanups = append(h.cleanups, f) }

func (h *harness) TempDir() string {
	d, err := os.MkdirTemp(h.dir, "pattern")
	if err != nil {
		h.Fatal(err)
	}
	h.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// close runs the cleanups, last registered first, as testing does.
func (h *harness) close() {
	for _, f := range slices.Backward(h.cleanups) {
		f()
	}
	h.cleanups = nil
}

// play runs f with h as the cluster's test, turning a fatal error or any
// other panic into an error, and cleans up.
func (h *harness) play(f func() error) (err error) {
	defer h.close()
	defer func() {
		switch v := recover().(type) {
		case nil:
		case fatal:
			err = fmt.Errorf("cluster: %s", v.msg)
		default:
			err = fmt.Errorf("panic: %v", v)
		}
	}()
	return f()
}
