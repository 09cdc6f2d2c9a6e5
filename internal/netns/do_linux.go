package netns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// probe makes a namespace with a bridge and a link, and removes it.
func probe() string {
	if os.Geteuid() != 0 {
		return "needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN, for a network namespace per host)"
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return "needs iproute2's ip on PATH"
	}
	ns := fmt.Sprintf("ckpt%dx0000-probe", os.Getpid())
	if err := ip("netns", "add", ns); err != nil {
		return "ip netns add failed: " + err.Error()
	}
	defer ip("netns", "del", ns)
	if err := ipBatch(ns, "link add name br0 type bridge\nlink add name pa type veth peer name pb\nlink set pa master br0\n"); err != nil {
		return "a bridge and a veth pair in a namespace failed: " + err.Error()
	}
	return ""
}

// Do runs fn inside the network namespace whose file is path
// (/run/netns/NAME, /proc/PID/ns/net): the sockets fn makes belong
// there, and stay there once fn returned. A socket belongs to the
// namespace of the thread that made it, so fn runs on a thread locked to
// this goroutine, moved into the namespace and back. Back home, the
// thread is unlocked and lives on: a thread ended with its goroutine
// would take with it every child it forked with Pdeathsig. Only a thread
// that cannot get back stays locked, and Go ends it rather than reuse it
// in the wrong namespace.
func Do(path string, fn func() error) error {
	target, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("netns: the namespace: %w", err)
	}
	defer target.Close()
	runtime.LockOSThread()
	home, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer home.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("netns: entering %s: %w", path, err)
	}
	err = fn()
	if unix.Setns(int(home.Fd()), unix.CLONE_NEWNET) == nil {
		runtime.UnlockOSThread()
	}
	return err
}

// Listen listens on h ("tcp", an address of h's such as Addr+":0").
func (h *Host) Listen(network, addr string) (ln net.Listener, err error) {
	err = Do(h.Path(), func() error {
		ln, err = net.Listen(network, addr)
		return err
	})
	return ln, err
}

// DialContext connects from h to addr (IPv4 host:port, TCP). Only the
// socket is made in h's namespace; the connection is then made as any
// other, so that thousands of dials at once hold no thread each.
func (h *Host) DialContext(ctx context.Context, addr string) (net.Conn, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil || !ap.Addr().Is4() {
		return nil, fmt.Errorf("netns: dial %q: want an IPv4 host:port", addr)
	}
	fd := -1
	if err := Do(h.Path(), func() (err error) {
		fd, err = unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
		return err
	}); err != nil {
		return nil, fmt.Errorf("netns: dial %s from %s: %w", addr, h.Name, err)
	}
	f := os.NewFile(uintptr(fd), "tcp:"+addr) // non-blocking: the runtime's poller waits on it
	defer f.Close()
	sa := &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	if d, ok := ctx.Deadline(); ok {
		f.SetWriteDeadline(d)
	}
	stop := context.AfterFunc(ctx, func() { f.SetWriteDeadline(aLongTimeAgo) })
	defer stop()
	started := false
	var cerr error
	werr := rc.Write(func(fd uintptr) bool {
		if !started {
			started = true
			cerr = unix.Connect(int(fd), sa)
			// Under way (or interrupted, and going on in the kernel): the
			// socket turns writable once connected or refused.
			return !errors.Is(cerr, unix.EINPROGRESS) && !errors.Is(cerr, unix.EINTR)
		}
		var soerr int
		soerr, cerr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_ERROR)
		if cerr == nil && soerr != 0 {
			cerr = unix.Errno(soerr)
		}
		return true
	})
	if werr != nil {
		if ctx.Err() != nil {
			werr = ctx.Err()
		}
		return nil, &net.OpError{Op: "dial", Net: "tcp", Addr: net.TCPAddrFromAddrPort(ap), Err: werr}
	}
	if cerr != nil {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Addr: net.TCPAddrFromAddrPort(ap), Err: os.NewSyscallError("connect", cerr)}
	}
	return net.FileConn(f) // a copy of the descriptor; f's closes with f
}

var aLongTimeAgo = time.Unix(1, 0)
