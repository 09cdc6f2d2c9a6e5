//go:build linux

package transparent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ckpt/ckpt/internal/criu"
	"github.com/ckpt/ckpt/internal/tcplock"
)

// Processes is the Runner of real process trees: the program runs as the
// first process of a PID namespace of its own (so that its PIDs are its
// own on every restore, and the kernel ends the whole tree when the
// supervisor dies: the namespace's first process gets SIGKILL then), in a
// session of its own, stdin /dev/null, stdout and stderr through pipes
// the supervisor copies into the files Stdout and Stderr. It needs root
// (CLONE_NEWPID), as CRIU does.
type Processes struct {
	Program string
	Args    []string
	Env     []string // nil: the supervisor's
	Dir     string   // "": the supervisor's
	Stdout  string
	Stderr  string
	Tool    criu.Tool
}

var _ Runner = (*Processes)(nil)

// Start implements Runner.
func (p *Processes) Start(ctx context.Context) (Tree, error) {
	outs, err := p.outputs(0, 0)
	if err != nil {
		return nil, err
	}
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		outs.close()
		return nil, err
	}
	defer devnull.Close()
	keepInherited()
	cmd := exec.Command(p.Program, p.Args...)
	cmd.Env, cmd.Dir = p.Env, p.Dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = devnull, outs.outW, outs.errW
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Cloneflags: syscall.CLONE_NEWPID, Pdeathsig: syscall.SIGKILL}
	err = cmd.Start()
	outs.closeWriters()
	if err != nil {
		outs.close()
		return nil, fmt.Errorf("starting %s: %w", p.Program, err)
	}
	return newTree(cmd.Process, outs), nil
}

// keepInherited marks the descriptors this process inherited (beyond
// stdin, stdout and stderr) close-on-exec: they are the supervisor's
// launcher's, not the program's, and CRIU must not meet them in its
// tree. One opened in another mount namespace (a launcher's /dev/null,
// before `ip netns exec` made the node's) fails every dump: "Can't
// lookup mount=23 for fd=10 path=/dev/null". Go opens its own
// descriptors close-on-exec already.
func keepInherited() {
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range fds {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			unix.CloseOnExec(fd)
		}
	}
}

// Restore implements Runner.
func (p *Processes) Restore(ctx context.Context, dir, work string, m Meta) (Tree, error) {
	// The files the program had open for writing go back to their size at
	// the checkpoint, as its output does: CRIU refuses a file whose size
	// changed, and the restored program writes again what it wrote after.
	for _, f := range m.Files {
		if err := cutBack(f); err != nil {
			return nil, err
		}
	}
	outs, err := p.outputs(m.Stdout.Offset, m.Stderr.Offset)
	if err != nil {
		return nil, err
	}
	pid, err := p.Tool.Restore(ctx, criu.RestoreRequest{Dir: dir, WorkDir: work, TCPEstablished: len(m.Conns) > 0, Inherit: []criu.Inherit{
		{Key: criu.PipeKey(m.Stdout.Pipe), File: outs.outW},
		{Key: criu.PipeKey(m.Stderr.Pipe), File: outs.errW},
	}})
	outs.closeWriters()
	if err != nil {
		outs.close()
		return nil, err
	}
	proc, err := os.FindProcess(pid)
	if err != nil {
		syscall.Kill(pid, syscall.SIGKILL)
		outs.close()
		return nil, err
	}
	t := newTree(proc, outs)
	// The tree was dumped frozen, and comes back so.
	t.signalAll(syscall.SIGCONT)
	return t, nil
}

// Ended implements Runner.
func (p *Processes) Ended(m Meta) error {
	for _, f := range []struct {
		path string
		off  int64
	}{{p.Stdout, m.Stdout.Offset}, {p.Stderr, m.Stderr.Offset}} {
		if err := truncateOutput(f.path, f.off); err != nil {
			return err
		}
	}
	return nil
}

// cutBack truncates a file the program had open for writing to its size
// at the checkpoint. A file now shorter lost what the checkpoint counted
// on: that is an error, not something to paper over with zeros.
func cutBack(f OpenFile) error {
	fi, err := os.Stat(f.Path)
	if err != nil {
		return fmt.Errorf("a file the program had open for writing: %w", err)
	}
	if fi.Size() < f.Size {
		return fmt.Errorf("%s: %d bytes, shorter than the %d it had at the checkpoint", f.Path, fi.Size(), f.Size)
	}
	if fi.Size() == f.Size {
		return nil
	}
	return os.Truncate(f.Path, f.Size)
}

// outputs are a tree's output files and the pipes into them.
type outputs struct {
	outF, errF *os.File // the files, positioned at their end
	outR, errR *os.File // the pipes' read ends, the supervisor's
	outW, errW *os.File // their write ends, the program's
}

// outputs opens the output files cut to the given lengths, and new pipes.
func (p *Processes) outputs(outOff, errOff int64) (*outputs, error) {
	o := &outputs{}
	var err error
	if o.outF, err = openOutput(p.Stdout, outOff); err == nil {
		if o.errF, err = openOutput(p.Stderr, errOff); err == nil {
			if o.outR, o.outW, err = os.Pipe(); err == nil {
				o.errR, o.errW, err = os.Pipe()
			}
		}
	}
	if err != nil {
		o.closeWriters()
		o.close()
		return nil, err
	}
	return o, nil
}

func (o *outputs) closeWriters() {
	for _, f := range []*os.File{o.outW, o.errW} {
		if f != nil {
			f.Close()
		}
	}
}

func (o *outputs) close() {
	for _, f := range []*os.File{o.outF, o.errF, o.outR, o.errR} {
		if f != nil {
			f.Close()
		}
	}
}

// truncateOutput cuts an output file back to where it ended at a
// checkpoint. A file shorter than that lost what the checkpoint counted on.
func truncateOutput(path string, off int64) error {
	f, err := openOutput(path, off)
	if err != nil {
		return err
	}
	return f.Close()
}

// openOutput opens an output file for appending at off, cutting what
// follows.
func openOutput(path string, off int64) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && fi.Size() < off {
		err = fmt.Errorf("%s: %d bytes, shorter than the %d it had at the checkpoint", path, fi.Size(), off)
	}
	if err == nil {
		err = f.Truncate(off)
	}
	if err == nil {
		_, err = f.Seek(off, 0)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// tree is a running program (Tree).
type tree struct {
	proc     *os.Process
	out, err *stream
	reaped   atomic.Bool // the root was waited for: its pid may be another's
	done     chan struct{}
	code     int
	stopped  []int // what Freeze stopped
}

func newTree(proc *os.Process, o *outputs) *tree {
	t := &tree{proc: proc, out: newStream(o.outR, o.outF), err: newStream(o.errR, o.errF), done: make(chan struct{})}
	go func() {
		st, err := proc.Wait()
		t.reaped.Store(true)
		code := 1
		if err == nil {
			code = st.ExitCode()
			if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				code = 128 + int(ws.Signal())
			}
		}
		// The namespace's processes die with its first one: the pipes
		// reach their end, and the files have everything.
		<-t.out.eof
		<-t.err.eof
		t.code = code
		close(t.done)
	}()
	return t
}

func (t *tree) Pid() int              { return t.proc.Pid }
func (t *tree) Done() <-chan struct{} { return t.done }
func (t *tree) ExitCode() int         { <-t.done; return t.code }

// Ends implements Tree: both copiers have reached their pipe's end and
// written all of it before done is closed.
func (t *tree) Ends() (Stream, Stream) {
	<-t.done
	return Stream{Offset: t.out.off}, Stream{Offset: t.err.off}
}
func (t *tree) Kill()                        { t.proc.Kill() }
func (t *tree) Thaw() error                  { return t.signal(t.stopped, syscall.SIGCONT) }
func (t *tree) signalAll(sig syscall.Signal) { t.signal(descendants(t.proc.Pid), sig) }

func (t *tree) signal(pids []int, sig syscall.Signal) error {
	var first error
	for _, pid := range pids {
		if err := syscall.Kill(pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) && first == nil {
			first = err
		}
	}
	return first
}

// rootEnded says whether the program's first process ended (a zombie, or
// reaped already).
func (t *tree) rootEnded() bool {
	if t.reaped.Load() {
		return true
	}
	st, ok := procState(t.proc.Pid)
	return !ok || st == 'Z' || st == 'X'
}

// Freeze implements Tree: SIGSTOP to every process of the tree, again to
// those born meanwhile, until all are stopped. A stopped process forks no
// more, so the tree stops growing.
//
// A child whose parent is in uninterruptible sleep (state D) is left
// running, and continued if it was stopped already, until its parent
// is out of it: a shell starts commands with vfork, and the parent waits
// in the kernel, where SIGSTOP cannot reach it, until the child has
// exec'd or exited; a child stopped before that would keep its parent
// running forever, and the freeze would never end. Once the parent is
// out of the wait it stops on the SIGSTOP it holds, and the child is
// stopped in turn.
func (t *tree) Freeze(ctx context.Context) error {
	t.stopped = t.stopped[:0]
	seen := map[int]bool{}
	for {
		if t.rootEnded() {
			t.Thaw()
			return ErrExited
		}
		pids, parent := descendantsOf(t.proc.Pid)
		waiting := map[int]bool{}
		for _, pid := range pids {
			if st, ok := procState(pid); ok && st == 'D' {
				waiting[pid] = true
			}
		}
		grew := false
		for _, pid := range pids {
			if waiting[parent[pid]] {
				if seen[pid] {
					syscall.Kill(pid, syscall.SIGCONT)
					delete(seen, pid)
				}
				grew = true
				continue
			}
			if !seen[pid] {
				seen[pid], grew = true, true
				if syscall.Kill(pid, syscall.SIGSTOP) == nil && !slices.Contains(t.stopped, pid) {
					t.stopped = append(t.stopped, pid)
				}
			}
		}
		if !grew && allStopped(pids) {
			return nil
		}
		select {
		case <-ctx.Done():
			t.Thaw()
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
}

// Sync implements Tree.
func (t *tree) Sync() (Stream, Stream, error) {
	out, err := t.out.sync()
	if err != nil {
		return Stream{}, Stream{}, fmt.Errorf("stdout: %w", err)
	}
	errs, err := t.err.sync()
	if err != nil {
		return Stream{}, Stream{}, fmt.Errorf("stderr: %w", err)
	}
	return out, errs, nil
}

// OpenFiles implements fileLister: the regular files the tree's processes
// have open for writing (/proc/PID/fdinfo's flags), each once, with its
// size. The tree must be frozen, so that the sizes hold until the dump.
// Deleted files are left out: CRIU saves those itself.
func (t *tree) OpenFiles() ([]OpenFile, error) {
	var out []OpenFile
	seen := map[string]bool{}
	for _, pid := range descendants(t.proc.Pid) {
		fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		if err != nil {
			continue // it ended
		}
		for _, fd := range fds {
			link := fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())
			path, err := os.Readlink(link)
			if err != nil || !filepath.IsAbs(path) || seen[path] || strings.HasSuffix(path, " (deleted)") {
				continue
			}
			if !writable(fmt.Sprintf("/proc/%d/fdinfo/%s", pid, fd.Name())) {
				continue
			}
			fi, err := os.Stat(link)
			if err != nil || !fi.Mode().IsRegular() {
				continue
			}
			seen[path] = true
			out = append(out, OpenFile{Path: path, Size: fi.Size()})
		}
	}
	slices.SortFunc(out, func(a, b OpenFile) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

// writable says whether the descriptor whose fdinfo is at path was opened
// for writing (its flags' access mode, in octal, is not O_RDONLY).
func writable(path string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		v, ok := strings.CutPrefix(l, "flags:")
		if !ok {
			continue
		}
		flags, err := strconv.ParseUint(strings.TrimSpace(v), 8, 64)
		return err == nil && flags&syscall.O_ACCMODE != syscall.O_RDONLY
	}
	return false
}

// Conns implements connLister: the tree's established TCP connections,
// as its network namespace (the supervisor's) sees them.
func (t *tree) Conns() ([]tcplock.Conn, error) {
	return tcplock.Conns(descendants(t.proc.Pid))
}

// descendants lists pid and every process below it (through
// /proc/PID/task/TID/children, which CRIU needs too).
func descendants(pid int) []int {
	all, _ := descendantsOf(pid)
	return all
}

// descendantsOf is descendants, with each process's parent (pid's own is
// not in the map).
func descendantsOf(pid int) ([]int, map[int]int) {
	all := []int{pid}
	parent := map[int]int{}
	for i := 0; i < len(all); i++ {
		tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", all[i]))
		for _, task := range tasks {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", all[i], task.Name()))
			if err != nil {
				continue
			}
			for _, f := range strings.Fields(string(b)) {
				if c, err := strconv.Atoi(f); err == nil {
					all = append(all, c)
					parent[c] = all[i]
				}
			}
		}
	}
	return all, parent
}

// allStopped says whether every process of pids is stopped, dead or gone.
func allStopped(pids []int) bool {
	for _, pid := range pids {
		st, ok := procState(pid)
		if ok && st != 'T' && st != 't' && st != 'Z' && st != 'X' {
			return false
		}
	}
	return true
}

// procState is a process's state letter (/proc/PID/stat's third field);
// false if it is gone.
func procState(pid int) (byte, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// The command name, in parentheses, may hold spaces and parentheses.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 || i+2 >= len(b) {
		return 0, false
	}
	return b[i+2], true
}

// stream copies one of the program's output pipes into its file.
type stream struct {
	r, f   *os.File
	off    int64         // bytes in f
	werr   error         // the first write error: reported by sync
	paused chan struct{} // the copier stopped reading for sync
	resume chan struct{}
	eof    chan struct{} // closed when the pipe reached its end
}

func newStream(r, f *os.File) *stream {
	fi, _ := f.Stat()
	s := &stream{r: r, f: f, paused: make(chan struct{}), resume: make(chan struct{}), eof: make(chan struct{})}
	if fi != nil {
		s.off = fi.Size()
	}
	go s.copy()
	return s
}

func (s *stream) write(b []byte) {
	if s.werr != nil {
		return
	}
	n, err := s.f.Write(b)
	s.off += int64(n)
	s.werr = err
}

// copy runs until the pipe's end; sync interrupts it with a read
// deadline.
func (s *stream) copy() {
	defer func() {
		s.r.Close()
		s.f.Close()
		close(s.eof)
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := s.r.Read(buf)
		s.write(buf[:n])
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			s.paused <- struct{}{}
			<-s.resume
		case err != nil:
			return
		}
	}
}

// sync drains the pipe into the file (the writers are stopped) and says
// where it ends. The copier is paused meanwhile: what it had read is
// written first.
func (s *stream) sync() (Stream, error) {
	if err := s.r.SetReadDeadline(time.Now()); err != nil {
		select {
		case <-s.eof:
			return Stream{}, ErrExited
		default:
			return Stream{}, err
		}
	}
	select {
	case <-s.paused:
	case <-s.eof:
		return Stream{}, ErrExited
	}
	defer func() { s.resume <- struct{}{} }()
	if err := s.r.SetReadDeadline(time.Time{}); err != nil {
		return Stream{}, err
	}
	rc, err := s.r.SyscallConn()
	if err != nil {
		return Stream{}, err
	}
	buf := make([]byte, 64<<10)
	for {
		var n int
		var rerr error
		if err := rc.Read(func(fd uintptr) bool {
			n, rerr = unix.Read(int(fd), buf)
			return true // never wait: an empty pipe is the end here
		}); err != nil {
			return Stream{}, err
		}
		if n > 0 {
			s.write(buf[:n])
			continue
		}
		if rerr == unix.EINTR {
			continue
		}
		break
	}
	if s.werr != nil {
		return Stream{}, s.werr
	}
	if err := s.f.Sync(); err != nil {
		return Stream{}, err
	}
	var st unix.Stat_t
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.Fstat(int(fd), &st) }); err != nil {
		return Stream{}, err
	}
	if serr != nil {
		return Stream{}, serr
	}
	return Stream{Offset: s.off, Pipe: st.Ino}, nil
}
