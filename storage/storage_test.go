package storage_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/ckpt/ckpt/internal/storage/local"
	"github.com/ckpt/ckpt/internal/storage/mem"
	"github.com/ckpt/ckpt/storage"
)

func TestValidName(t *testing.T) {
	long := strings.Repeat("x", storage.MaxElementLen)
	for _, name := range []string{
		"a", "ckpt.0007/rank-3/state.bin", ".hidden", "..x", "x..", "a/...", "x.tmp-",
		"ü", "a b", long, long + "/" + long,
	} {
		if err := storage.ValidName(name); err != nil {
			t.Errorf("ValidName(%q) = %v, want nil", name, err)
		}
	}
	for _, c := range []struct{ name, why string }{
		{"", "empty"},
		{"/a", "absolute"},
		{"a/", "ends with /"},
		{"a//b", "empty element"},
		{"..", `element ".."`},
		{"a/./b", `element "."`},
		{"a\x00b", `control character '\x00' at byte 1`},
		{"a\x1fb", "control character"},
		{"a\x7f", "control character"},
		{"a\\b", "backslash at byte 1"},
		{"a\xff", "UTF-8"},
		{long + "x", "element of 256 bytes"},
		{strings.Repeat("a/", 600), "1200 bytes long"},
		{".tmp-1", "reserved prefix"},
		{"a/.tmp-x/b", "reserved prefix"},
	} {
		err := storage.ValidName(c.name)
		if !errors.Is(err, storage.ErrInvalidName) {
			t.Errorf("ValidName(%q) = %v, want ErrInvalidName", c.name, err)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, fmt.Sprintf("%q", c.name)) || !strings.Contains(msg, c.why) {
			t.Errorf("ValidName(%q) = %q, want the quoted name and %q", c.name, msg, c.why)
		}
	}
}

func TestValidPrefix(t *testing.T) {
	for _, p := range []string{"", "a", "a/", "ckpt.00", "ckpt.0007/", "ckpt.0007/rank-", "a/.", "a/..", "."} {
		if err := storage.ValidPrefix(p); err != nil {
			t.Errorf("ValidPrefix(%q) = %v, want nil", p, err)
		}
	}
	for _, p := range []string{"/", "/a", "../", "a/../", "a//", "a\x00", "a\\", ".tmp-x", "a/.tmp-", strings.Repeat("p", 1025)} {
		if err := storage.ValidPrefix(p); !errors.Is(err, storage.ErrInvalidName) {
			t.Errorf("ValidPrefix(%q) = %v, want ErrInvalidName", p, err)
		}
	}
}

func TestErrors(t *testing.T) {
	err := &storage.Error{Op: "open", Name: "a/b", Err: storage.ErrNotExist}
	if got, want := err.Error(), `storage: open "a/b": object does not exist`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(err, storage.ErrNotExist) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%v does not match ErrNotExist and fs.ErrNotExist", err)
	}
	if errors.Is(err, fs.ErrExist) || errors.Is(storage.ErrExists, fs.ErrNotExist) {
		t.Errorf("ErrNotExist and ErrExists are confused")
	}
	if !errors.Is(storage.ErrExists, fs.ErrExist) {
		t.Errorf("ErrExists does not match fs.ErrExist")
	}
}

func TestIsPermanent(t *testing.T) {
	pathErr := func(errno syscall.Errno) error {
		return &storage.Error{Op: "commit", Name: "x", Err: &fs.PathError{Op: "write", Path: "/x", Err: errno}}
	}
	for _, c := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{errors.New("connection reset"), false},
		{context.Canceled, false},
		{context.DeadlineExceeded, false},
		{pathErr(syscall.EIO), false},
		{pathErr(syscall.EINTR), false},
		{pathErr(syscall.ENOSPC), true},
		{pathErr(syscall.EDQUOT), true},
		{pathErr(syscall.EROFS), true},
		{pathErr(syscall.EACCES), true},
		{pathErr(syscall.EPERM), true},
		{pathErr(syscall.ENOENT), true},
		{fmt.Errorf("wrapped: %w", pathErr(syscall.ENOSPC)), true},
		{&storage.Error{Op: "stat", Name: "x", Err: storage.ErrNotExist}, true},
		{storage.ValidName("/abs"), true},
		{storage.ErrExists, true},
		{storage.ErrClosed, true},
		{storage.Permanent(errors.New("403 access denied")), true},
		{fmt.Errorf("put: %w", storage.Permanent(errors.New("bad digest"))), true},
	} {
		if got := storage.IsPermanent(c.err); got != c.want {
			t.Errorf("IsPermanent(%v) = %v, want %v", c.err, got, c.want)
		}
	}
	if storage.Permanent(nil) != nil {
		t.Errorf("Permanent(nil) != nil")
	}
}

// wrapper is a decorator, as a retrying or logging backend would be.
type wrapper struct{ storage.Backend }

func (w wrapper) Unwrap() storage.Backend { return w.Backend }

func TestAs(t *testing.T) {
	l, err := local.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var b storage.Backend = wrapper{wrapper{l}}
	loc, ok := storage.As[storage.Locator](b)
	if !ok {
		t.Fatal("As did not find the Locator under two decorators")
	}
	if p, ok := loc.Path("x/y"); !ok || !strings.HasSuffix(p, "x"+string(os.PathSeparator)+"y") {
		t.Errorf("Path = %q, %v", p, ok)
	}
	if _, ok := storage.As[storage.Cleaner](b); !ok {
		t.Errorf("As did not find the Cleaner")
	}
	if _, ok := storage.As[storage.Locator](wrapper{mem.New()}); ok {
		t.Errorf("As found a Locator in the mem backend")
	}
	if got := storage.PropertiesOf(b); got != l.Properties() {
		t.Errorf("PropertiesOf(decorated local) = %+v", got)
	}
	if got := storage.PropertiesOf(struct{ storage.Backend }{mem.New()}); got.Connections != 1 || !got.Hierarchical {
		t.Errorf("PropertiesOf(backend without Properties) = %+v, want the defaults", got)
	}
}

// failingCommit is a backend whose writers fail to commit.
type failingCommit struct{ *mem.Backend }

type failingWriter struct{ storage.Writer }

var errCommit = errors.New("commit failed")

func (f failingCommit) Create(ctx context.Context, name string) (storage.Writer, error) {
	w, err := f.Backend.Create(ctx, name)
	return failingWriter{w}, err
}

func (w failingWriter) Commit() error { w.Writer.Abort(); return errCommit }

func TestSaveLoad(t *testing.T) {
	ctx := t.Context()
	b := mem.New()
	n, err := storage.Save(ctx, b, "m", strings.NewReader("manifest"))
	if err != nil || n != 8 {
		t.Fatalf("Save = %d, %v", n, err)
	}
	if got, err := storage.Load(ctx, b, "m"); err != nil || string(got) != "manifest" {
		t.Errorf("Load = %q, %v", got, err)
	}
	if _, err := storage.Save(ctx, b, "a//b", strings.NewReader("x")); !errors.Is(err, storage.ErrInvalidName) {
		t.Errorf("Save(a//b) = %v", err)
	}
	if _, err := storage.Save(ctx, failingCommit{b}, "n", strings.NewReader("x")); !errors.Is(err, errCommit) {
		t.Errorf("Save with a failing Commit = %v, want %v", err, errCommit)
	}
	if _, err := b.Stat(ctx, "n"); !errors.Is(err, storage.ErrNotExist) {
		t.Errorf("Stat after failed Save = %v", err)
	}
}
