package torture

import (
	"net"
	"net/netip"
	"os"
	"slices"
	"testing"
)

// This process's sockets, read from /proc as torture reads a job's: its
// listener, and a connection the listener holds after its client hung
// up, until the server closes it too.
func TestSocketsOfAProcess(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().(*net.TCPAddr).AddrPort()
	addrs, err := listening(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(addrs, addr) {
		t.Fatalf("listening on %v, not on %v", addrs, addr)
	}
	client, err := net.Dial("tcp", addr.String())
	if err != nil {
		t.Fatal(err)
	}
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	from := client.LocalAddr().(*net.TCPAddr).AddrPort()
	client.Close()
	// The client's end is gone; the server's is open until it closes it.
	kept, err := keptConns(os.Getpid(), addr.Port(), []netip.AddrPort{from})
	if err != nil || kept != 1 {
		t.Fatalf("kept %d (%v), want the server's end of the connection", kept, err)
	}
	if kept, _ := keptConns(os.Getpid(), addr.Port(), []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:1")}); kept != 0 {
		t.Fatalf("kept %d of another client's connections", kept)
	}
	server.Close()
	if kept, err := keptConns(os.Getpid(), addr.Port(), []netip.AddrPort{from}); err != nil || kept != 0 {
		t.Fatalf("kept %d (%v) after the server closed it", kept, err)
	}
}
