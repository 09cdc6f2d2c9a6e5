//go:build linux

package tcplock

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/netns"
	"github.com/ckpt/ckpt/internal/netns/netnstest"
)

// pair is a connection between hosts a (its accepting end) and b.
func pair(t *testing.T, n *netns.Net) (a, b net.Conn) {
	t.Helper()
	ln, err := n.Listen("a", "tcp", n.Addr("a")+":0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	b, err = n.Dial(ctx, "b", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	a, err = ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

func connOf(c net.Conn) Conn {
	return Conn{Local: netip.MustParseAddrPort(c.LocalAddr().String()), Remote: netip.MustParseAddrPort(c.RemoteAddr().String())}
}

// TestNFTLock locks one of two connections between two hosts, from host
// a's side: the locked one carries nothing either way, the other goes
// on, and once unlocked the locked one delivers what was sent meanwhile
// (retransmitted: nothing lost).
func TestNFTLock(t *testing.T) {
	n := netnstest.New(t, "a", "b")
	a1, b1 := pair(t, n)
	a2, b2 := pair(t, n)
	lock := NFT{Table: "ckpt-test"}
	in := func(fn func() error) error { return netns.Do(n.Host("a").Path(), fn) }
	if err := in(func() error { return lock.Lock([]Conn{connOf(a1)}) }); err != nil {
		t.Fatal(err)
	}
	if _, err := b1.Write([]byte("to a")); err != nil {
		t.Fatal(err)
	}
	if _, err := a1.Write([]byte("to b")); err != nil {
		t.Fatal(err)
	}
	// The other connection goes on meanwhile: once its bytes crossed,
	// the locked one's, sent before, would have too.
	echo(t, b2, a2, "other")
	for _, c := range []net.Conn{a1, b1} {
		c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		buf := make([]byte, 8)
		if k, err := c.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("locked: read %q, %v; want nothing", buf[:k], err)
		}
	}
	// Locking again replaces the table; unlocking removes it.
	if err := in(func() error { return lock.Lock([]Conn{connOf(a1)}) }); err != nil {
		t.Fatal(err)
	}
	if err := in(lock.Unlock); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		conn net.Conn
		want string
	}{{a1, "to a"}, {b1, "to b"}} {
		c.conn.SetReadDeadline(time.Now().Add(2 * time.Minute)) // bounds a hang only: TCP's retransmission backs off
		buf := make([]byte, len(c.want))
		if _, err := io.ReadFull(c.conn, buf); err != nil || string(buf) != c.want {
			t.Errorf("unlocked: read %q, %v; want %q", buf, err, c.want)
		}
	}
	// Unlocking again (nothing there) is no error.
	if err := in(lock.Unlock); err != nil {
		t.Error(err)
	}
}

func echo(t *testing.T, from, to net.Conn, msg string) {
	t.Helper()
	if _, err := from.Write([]byte(msg)); err != nil {
		t.Fatal(err)
	}
	to.SetReadDeadline(time.Now().Add(time.Minute))
	buf := make([]byte, len(msg))
	if _, err := io.ReadFull(to, buf); err != nil || string(buf) != msg {
		t.Fatalf("read %q, %v; want %q", buf, err, msg)
	}
}

// TestConnsOfThisProcess finds this process's own connection.
func TestConnsOfThisProcess(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := Conns([]int{os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	want := map[Conn]bool{connOf(c): true, connOf(s): true}
	for _, g := range got {
		delete(want, g)
	}
	if len(want) != 0 {
		t.Errorf("found %v, not %v", got, want)
	}
}
