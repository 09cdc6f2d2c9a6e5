package criu

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	gocriu "github.com/checkpoint-restore/go-criu/v8"
	"github.com/checkpoint-restore/go-criu/v8/rpc"
)

// Tool dumps process trees into directories of image files and restores
// them. Both calls block until CRIU is done; neither is safe to call
// concurrently on the same directory.
type Tool interface {
	// Dump saves the process tree rooted at req.Pid (with every
	// descendant) into req.Dir, an existing empty directory. With
	// LeaveRunning the tree is left as it was (a tree stopped with SIGSTOP
	// stays stopped); without, it is killed once saved.
	Dump(ctx context.Context, req DumpRequest) error
	// Restore recreates the tree saved in req.Dir as a child of the
	// calling process (CRIU's --restore-sibling) and returns its root's
	// pid. Files the images name by key (pipes: "pipe:[INODE]") are
	// replaced by req.Inherit's (CRIU's --inherit-fd). The tree is in the
	// state it was saved in: a stopped tree comes back stopped.
	Restore(ctx context.Context, req RestoreRequest) (int, error)
}

// DumpRequest is what Dump saves, and where.
type DumpRequest struct {
	Pid          int
	Dir          string
	LeaveRunning bool
	// TCPEstablished saves established TCP connections (CRIU's
	// --tcp-established); without it a tree with one fails to dump.
	// CRIU's own network lock is skipped (--network-lock skip): it spans
	// one dump, not the whole job's, and wants iptables or nftables rules
	// of its own, so the caller keeps the connections quiet itself from
	// before the first rank's dump to after the last's (package tcplock).
	TCPEstablished bool
	// WorkDir, if set, takes CRIU's log and statistics (CRIU's
	// --work-dir), so that Dir holds the images and nothing else: a
	// checkpoint's directory in the node cache, say.
	WorkDir string
}

// RestoreRequest is what Restore recreates.
type RestoreRequest struct {
	Dir string
	// TCPEstablished restores the established TCP connections the
	// images hold (dumped with DumpRequest.TCPEstablished); the caller
	// keeps them quiet until every end is back.
	TCPEstablished bool
	Inherit        []Inherit
	// WorkDir, if set, takes CRIU's log and statistics: Dir is then only
	// read, and may be a committed checkpoint's files in place.
	WorkDir string
}

// Inherit replaces, at restore, the file the images know by Key with File.
type Inherit struct {
	Key  string
	File *os.File
}

// PipeKey is the key under which CRIU's images name a pipe: what Inherit
// needs to give a restored tree a new pipe in its place.
func PipeKey(inode uint64) string { return fmt.Sprintf("pipe:[%d]", inode) }

// The logs CLI asks CRIU to write into the work directory (the images
// directory unless the request names one).
const (
	DumpLog    = "dump.log"
	RestoreLog = "restore.log"
)

// CLI is the Tool over CRIU's RPC service (`criu swrk`, one process per
// call, started from Path).
//
// Calls are serialized across the processes of a host by an flock on
// Lock: CRIU names the socket through which its parasite code passes
// descriptors after the dumped task's pid as its own namespace sees it,
// so two dumps of trees that each run in a PID namespace of their own
// (both roots are pid 1) collide ("Can't retrieve FD from socket").
type CLI struct {
	Path string
	// LogLevel is CRIU's verbosity in its log (0: 2, errors and warnings;
	// 4 for everything).
	LogLevel int
	// Lock is the lock file ("": ckpt-criu.lock in the temp directory).
	Lock string
}

var _ Tool = CLI{}

func (c CLI) level() int32 {
	if c.LogLevel <= 0 {
		return 2
	}
	return int32(c.LogLevel)
}

// lock takes the host's CRIU lock; the returned function releases it.
func (c CLI) lock() (func(), error) {
	path := c.Lock
	if path == "" {
		path = filepath.Join(os.TempDir(), "ckpt-criu.lock")
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("criu lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("criu lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}

func (c CLI) client() *gocriu.Criu {
	cr := gocriu.MakeCriu()
	cr.SetCriuPath(c.Path)
	return cr
}

// Dump implements Tool. ctx is checked before CRIU starts; a dump under way
// runs to its end (a tree left half-frozen would be worse).
func (c CLI) Dump(ctx context.Context, req DumpRequest) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	dir, err := os.Open(req.Dir)
	if err != nil {
		return err
	}
	defer dir.Close()
	work, logs, err := openWork(req.WorkDir, req.Dir)
	if err != nil {
		return err
	}
	if work != nil {
		defer work.Close()
	}
	unlock, err := c.lock()
	if err != nil {
		return err
	}
	defer unlock()
	opts := &rpc.CriuOpts{
		ImagesDirFd:    ptr(int32(dir.Fd())),
		WorkDirFd:      fdOf(work),
		Pid:            ptr(int32(req.Pid)),
		LeaveRunning:   ptr(req.LeaveRunning),
		TcpEstablished: ptr(req.TCPEstablished),
		LogLevel:       ptr(c.level()),
		LogFile:        ptr(DumpLog),
	}
	if req.TCPEstablished {
		opts.NetworkLock = rpc.CriuNetworkLockMethod_SKIP.Enum()
	}
	if err := c.client().Dump(opts, nil); err != nil {
		return fmt.Errorf("criu dump of pid %d: %w%s", req.Pid, err, logErrors(logs, DumpLog))
	}
	return nil
}

// Restore implements Tool.
func (c CLI) Restore(ctx context.Context, req RestoreRequest) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	dir, err := os.Open(req.Dir)
	if err != nil {
		return 0, err
	}
	defer dir.Close()
	work, logs, err := openWork(req.WorkDir, req.Dir)
	if err != nil {
		return 0, err
	}
	if work != nil {
		defer work.Close()
	}
	unlock, err := c.lock()
	if err != nil {
		return 0, err
	}
	defer unlock()
	cr := c.client()
	for _, in := range req.Inherit {
		cr.AddInheritFd(in.Key, in.File)
	}
	opts := &rpc.CriuOpts{
		ImagesDirFd: ptr(int32(dir.Fd())),
		WorkDirFd:   fdOf(work),
		RstSibling:  ptr(true),
		LogLevel:    ptr(c.level()),
		LogFile:     ptr(RestoreLog),
	}
	if req.TCPEstablished {
		opts.TcpEstablished = ptr(true)
		opts.NetworkLock = rpc.CriuNetworkLockMethod_SKIP.Enum()
	}
	var n restored
	if err := cr.Restore(opts, &n); err != nil {
		return 0, fmt.Errorf("criu restore from %s: %w%s", req.Dir, err, logErrors(logs, RestoreLog))
	}
	if n.pid <= 0 {
		return 0, errors.New("criu restore: CRIU did not say which pid it restored")
	}
	return int(n.pid), nil
}

// restored learns the restored tree's root from CRIU's post-restore
// notification.
type restored struct {
	gocriu.NoNotify
	pid int32
}

func (n *restored) PostRestore(pid int32) error {
	n.pid = pid
	return nil
}

// logErrors is ": " and the error lines of CRIU's log in dir, or "".
func logErrors(dir, name string) string {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return ""
	}
	var lines []string
	for _, l := range bytes.Split(b, []byte("\n")) {
		if s := strings.TrimSpace(string(l)); strings.Contains(s, "Error") {
			lines = append(lines, s)
		}
	}
	if len(lines) == 0 {
		return ""
	}
	if len(lines) > 4 {
		lines = lines[len(lines)-4:]
	}
	return ": " + strings.Join(lines, "; ")
}

// openWork opens a request's work directory, if it names one, and says
// where CRIU's logs go.
func openWork(work, images string) (*os.File, string, error) {
	if work == "" {
		return nil, images, nil
	}
	f, err := os.Open(work)
	if err != nil {
		return nil, "", err
	}
	return f, work, nil
}

// fdOf is the work directory's descriptor for CRIU's options (nil: none).
func fdOf(f *os.File) *int32 {
	if f == nil {
		return nil
	}
	return ptr(int32(f.Fd()))
}

func ptr[T any](v T) *T { return &v }
