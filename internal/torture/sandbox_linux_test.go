package torture

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// sandboxListener listens inside the sandbox's network namespace.
func sandboxListener(t *testing.T, sb *sandbox) net.Listener {
	t.Helper()
	var ln net.Listener
	err := sb.inNet(func() (err error) {
		ln, err = net.Listen("tcp", "127.0.0.1:0")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// inSandbox makes a connection inside the sandbox's network namespace:
// to a listener there, by the sandbox's dialer.
func inSandbox(t *testing.T, sb *sandbox) (client, server net.Conn) {
	t.Helper()
	ln := sandboxListener(t, sb)
	client, err := sb.dial(context.Background(), ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if server, err = ln.Accept(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// testSandbox starts a sandbox for a test, which skips loudly where none
// can be made.
func testSandbox(t *testing.T) *sandbox {
	t.Helper()
	if why := SandboxUnavailable(); why != "" {
		t.Skip("SKIPPED: " + why)
	}
	sb, err := startSandbox(context.Background(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	return sb
}

func port(a net.Addr) uint16 { return uint16(a.(*net.TCPAddr).Port) }

// TestSandbox: what the network and disk faults do, on a connection and
// a disk of a sandbox: a partition drops a connection's packets until it
// is healed, a cut destroys it, a full disk refuses writes until its
// ballast goes, and none of it is seen outside.
func TestSandbox(t *testing.T) {
	sb := testSandbox(t)
	client, server := inSandbox(t, sb)
	buf := make([]byte, 16)

	// Partitioned: the byte sent does not arrive; healed, TCP delivers it.
	if _, err := sb.run(partitionSetup+partitionFilters([]uint16{port(server.LocalAddr())}), "tc", "-batch", "-"); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	server.SetReadDeadline(time.Now().Add(time.Second))
	if n, err := server.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("through a partition: read %q, %v", buf[:n], err)
	}
	if _, err := sb.run("", "tc", "qdisc", "del", "dev", "lo", "root"); err != nil {
		t.Fatal(err)
	}
	server.SetReadDeadline(time.Now().Add(time.Minute))
	if n, err := server.Read(buf); err != nil || string(buf[:n]) != "x" {
		t.Fatalf("after the partition healed: read %q, %v", buf[:n], err)
	}

	// Cut by the client's port: both ends are destroyed.
	out, err := sb.run("", "ss", cutArgs([]uint16{port(client.LocalAddr())})...)
	if err != nil {
		t.Fatal(err)
	}
	client.SetReadDeadline(time.Now().Add(time.Minute))
	if _, err := client.Read(buf); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a cut connection reads on: %v (ss said %q)", err, out)
	}

	// A disk: 1 MiB of tmpfs under dir/disk, its directory "sub" bound at
	// dir/at, seen by torture through the sandbox's root only.
	dir := t.TempDir()
	disk, at := filepath.Join(dir, "disk"), filepath.Join(dir, "at")
	if err := sb.disk(disk, 1<<20, "sub", at); err != nil {
		t.Fatal(err)
	}
	file := sb.path(filepath.Join(at, "f"))
	if err := os.WriteFile(file, []byte("fits"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(at, "f")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the sandbox's disk is seen outside: %v", err)
	}
	if err := fill(sb.path(ballast(disk))); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, make([]byte, 64<<10), 0o644); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("a write to a full disk: %v, want ENOSPC", err)
	}
	if err := os.Remove(sb.path(ballast(disk))); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, make([]byte, 64<<10), 0o644); err != nil {
		t.Fatalf("a write once the ballast is gone: %v", err)
	}

	// Closed: the holder is gone, and with it the namespaces.
	pid := sb.pid
	sb.Close()
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the holder %d outlived Close: %v", pid, err)
	}
}

// TestSandboxDial: the hostile fault's dialer reaches a listener that
// exists only inside the sandbox's network namespace, and leaves the
// caller's threads in their own namespace.
func TestSandboxDial(t *testing.T) {
	sb := testSandbox(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ln := sandboxListener(t, sb)
	addr := ln.Addr().String()
	accepted := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			c.Close()
		}
		accepted <- err
	}()
	nc, err := sb.dial(ctx, addr)
	if err != nil {
		t.Fatalf("dialing %s inside the sandbox: %v", addr, err)
	}
	nc.Close()
	if err := <-accepted; err != nil {
		t.Fatalf("the sandbox's listener: %v", err)
	}
	ln.Close()
	// Back home: a listener of the host is reached from here, as before,
	// and the sandbox's closed one is not, from inside.
	host, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	for i := 0; i < 8; i++ { // on whichever threads the scheduler picks
		if c, err := sb.dial(ctx, addr); err == nil {
			c.Close()
			t.Fatalf("dial %d reached the closed sandbox listener", i)
		}
		hc, err := net.Dial("tcp", host.Addr().String())
		if err != nil {
			t.Fatalf("after a sandbox dial, the host's listener: %v", err)
		}
		hc.Close()
	}
}
