package netns_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/netns"
	"github.com/ckpt/ckpt/internal/netns/netnstest"
)

// pair is a connection from host b to a listener on host a.
func pair(t *testing.T, a, b *netns.Host) (client, server net.Conn) {
	t.Helper()
	ln, err := a.Listen("tcp", a.Addr+":0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client, err = b.DialContext(ctx, ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if server, err = ln.Accept(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// Each host has its own address, reached from another host across the
// bridge; a program run on a host sees that address and no other.
func TestHosts(t *testing.T) {
	n := netnstest.New(t, "node0", "node1", "coord")
	a, b, c := n.Host("node0"), n.Host("node1"), n.Host("coord")
	if a.Addr != netns.Subnet+".1" || c.Addr != netns.Subnet+".3" || n.Addr("node1") != b.Addr || n.Addr("none") != "" {
		t.Fatalf("addresses %s %s %s", a.Addr, b.Addr, c.Addr)
	}
	client, server := pair(t, a, b)
	if got := client.LocalAddr().(*net.TCPAddr).IP.String(); got != b.Addr {
		t.Errorf("the client's address is %s, want its host's %s", got, b.Addr)
	}
	if got := server.RemoteAddr().(*net.TCPAddr).IP.String(); got != b.Addr {
		t.Errorf("the server sees %s, want the client's host's %s", got, b.Addr)
	}
	io.WriteString(client, "ping")
	buf := make([]byte, 4)
	if _, err := io.ReadFull(server, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("read %q, %v", buf, err)
	}

	out, err := n.Command("coord", exec.Command("ip", "-o", "-4", "addr", "show")).CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, h := range []*netns.Host{a, b} {
		if strings.Contains(string(out), h.Addr+"/") {
			t.Errorf("coord's host shows %s's address:\n%s", h.Name, out)
		}
	}
	if !strings.Contains(string(out), c.Addr+"/24") || !strings.Contains(string(out), "127.0.0.1/8") {
		t.Errorf("coord's host shows no %s/24 and loopback:\n%s", c.Addr, out)
	}
	// The hosts' loopbacks are their own: a listener on node0's loopback
	// is not node1's.
	ln, err := a.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if nc, err := b.DialContext(ctx, ln.Addr().String()); err == nil {
		nc.Close()
		t.Errorf("node1 reached node0's loopback listener %s", ln.Addr())
	}
}

// A host whose link is down neither sends nor receives, and its
// connection stays open; the link up again, TCP delivers what waited.
func TestLinkDownUp(t *testing.T) {
	n := netnstest.New(t, "a", "b")
	client, server := pair(t, n.Host("a"), n.Host("b"))
	if err := n.Host("b").LinkDown(); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1)
	server.SetReadDeadline(time.Now().Add(2 * time.Second))
	if k, err := server.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read %d bytes (%v) across a link that is down", k, err)
	}
	if err := n.Host("b").LinkUp(); err != nil {
		t.Fatal(err)
	}
	// TCP retransmits with back-off: a generous deadline.
	server.SetReadDeadline(time.Now().Add(2 * time.Minute))
	if _, err := server.Read(buf); err != nil || buf[0] != 'x' {
		t.Fatalf("after the link came back: %q, %v", buf, err)
	}
}

// Netem delays a host's packets: a round trip takes at least the delay.
func TestNetem(t *testing.T) {
	n := netnstest.New(t, "a", "b")
	client, server := pair(t, n.Host("a"), n.Host("b"))
	const delay = 300 * time.Millisecond
	if err := n.Host("b").Netem(delay, 0); err != nil {
		// A kernel without netem (this project's machines): the failure
		// must name what is missing and leave the host's link as it was.
		if !strings.Contains(err.Error(), "netem") || !strings.Contains(err.Error(), "b") {
			t.Errorf("netem refused with %q: want an error naming netem and the host", err)
		}
		t.Logf("this kernel has no netem (%v): checked its error and that the link still carries data", err)
		go io.Copy(server, server) // echo
		io.WriteString(client, "x")
		buf := make([]byte, 1)
		client.SetReadDeadline(time.Now().Add(time.Minute))
		if _, err := io.ReadFull(client, buf); err != nil || buf[0] != 'x' {
			t.Fatalf("after a refused netem the link carries nothing: %q, %v", buf, err)
		}
		return
	}
	go io.Copy(server, server) // echo
	start := time.Now()
	io.WriteString(client, "x")
	buf := make([]byte, 1)
	if _, err := io.ReadFull(client, buf); err != nil {
		t.Fatal(err)
	}
	if rtt := time.Since(start); rtt < delay {
		t.Errorf("a round trip took %v under a delay of %v", rtt, delay)
	}
	if err := n.Host("b").Netem(0, 0); err != nil {
		t.Fatal(err)
	}
}

// Close removes every namespace of the run; Sweep removes those of a run
// whose process is gone, and no other.
func TestCloseAndSweep(t *testing.T) {
	netnstest.Available(t)
	n, err := netns.New("x", "y")
	if err != nil {
		t.Fatal(err)
	}
	var made []string
	for _, h := range n.Hosts() {
		made = append(made, h.NS)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	for _, ns := range made {
		if _, err := os.Stat(filepath.Join(netns.Dir, ns)); !os.IsNotExist(err) {
			t.Errorf("%s still there after Close: %v", ns, err)
		}
	}
	// A stale namespace: named by a process that has ended.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	stale := fmt.Sprintf("ckpt%dx0000-0", dead.Process.Pid)
	live := netnstest.New(t, "live")
	if out, err := exec.Command("ip", "netns", "add", stale).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("ip", "netns", "del", stale).Run() })
	// (Another test process's New may sweep it first: either way, it
	// must be gone.)
	gone := netns.Sweep()
	if _, err := os.Stat(filepath.Join(netns.Dir, stale)); !os.IsNotExist(err) {
		t.Errorf("Sweep removed %v, not the stale %s (%v)", gone, stale, err)
	}
	for _, h := range live.Hosts() {
		if _, err := os.Stat(filepath.Join(netns.Dir, h.NS)); err != nil || slices.Contains(gone, h.NS) {
			t.Errorf("Sweep removed a live run's %s: %v", h.NS, err)
		}
	}
}
