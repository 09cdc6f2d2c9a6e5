package criu

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
)

// FakeImage is the one image file Fake writes per dump.
const FakeImage = "fake.img"

// Fake is Tool's in-memory twin, for tests of the logic around CRIU: Dump
// writes what State returns for the pid into FakeImage, Restore hands that
// file's content and the inherited files to Spawn, which returns the new
// pid. Failures are injected through FailDump and FailRestore. It is safe
// for concurrent use.
type Fake struct {
	State func(pid int) ([]byte, error)
	Spawn func(state []byte, inherit []Inherit) (int, error)

	mu          sync.Mutex
	FailDump    error // returned by every Dump while set
	FailRestore error
	Dumps       []DumpRequest
	Restores    []RestoreRequest
}

var _ Tool = (*Fake)(nil)

// Dump implements Tool.
func (f *Fake) Dump(ctx context.Context, req DumpRequest) error {
	f.mu.Lock()
	fail := f.FailDump
	f.Dumps = append(f.Dumps, req)
	f.mu.Unlock()
	if fail != nil {
		return fail
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if f.State == nil {
		return errors.New("criu.Fake: no State")
	}
	b, err := f.State(req.Pid)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(req.Dir, FakeImage), b, 0o600)
}

// Restore implements Tool.
func (f *Fake) Restore(ctx context.Context, req RestoreRequest) (int, error) {
	f.mu.Lock()
	fail := f.FailRestore
	f.Restores = append(f.Restores, req)
	f.mu.Unlock()
	if fail != nil {
		return 0, fail
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	b, err := os.ReadFile(filepath.Join(req.Dir, FakeImage))
	if err != nil {
		return 0, err
	}
	if f.Spawn == nil {
		return 0, errors.New("criu.Fake: no Spawn")
	}
	return f.Spawn(b, req.Inherit)
}
