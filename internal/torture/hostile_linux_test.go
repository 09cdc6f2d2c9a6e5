package torture

import (
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/hostile"
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

// sink is a listener in this process that accepts every connection and
// keeps it, reading nothing: one that holds no attack.
type sink struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func newSink(t *testing.T, closeAfter int) *sink {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &sink{ln: ln}
	t.Cleanup(s.close)
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns = append(s.conns, nc)
			n := len(s.conns)
			s.mu.Unlock()
			if n == closeAfter {
				s.close()
			}
		}
	}()
	return s
}

// close ends the listener and every connection, as a process that exits.
func (s *sink) close() {
	s.ln.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, nc := range s.conns {
		nc.Close()
	}
}

func (s *sink) listener(prompt time.Duration) listener {
	a := s.ln.Addr().(*net.TCPAddr).AddrPort()
	return listener{kind: "peer", pid: os.Getpid(), addr: a, tg: hostile.Target{Name: "sink", Addr: a.String(),
		Hello:   func(tok string) []byte { return hostile.PeerHello(tok, 1, 0) },
		Replays: [][]byte{hostile.PeerHello("tok", 2, 1)}, Prompt: prompt, Silent: prompt}}
}

// A listener that holds nothing fails every attack, and the connections
// it keeps are a leak.
func TestAttackOneFailsAListenerThatKeepsEverything(t *testing.T) {
	s := newSink(t, -1)
	j := &procJob{leakWait: 300 * time.Millisecond}
	held, cut, failed := j.attackOne(t.Context(), s.listener(200*time.Millisecond))
	if held != 0 || cut != 0 || len(failed) != len(hostile.Attacks())+1 {
		t.Fatalf("held %d, cut %d, failed %d: %q", held, cut, len(failed), failed)
	}
	if last := failed[len(failed)-1]; !strings.Contains(last, "kept") || !strings.Contains(last, "of the attackers'") {
		t.Fatalf("no leak reported: %q", failed)
	}
}

// A listener whose process ends during the attacks (the job finished)
// fails none: the attacks it did not see to their end are cut short.
func TestAttackOneCutsTheAttacksOfAListenerThatEnds(t *testing.T) {
	// It ends once it has accepted the slowloris's connections and a few
	// more: before any attack's bound (a minute) has passed.
	s := newSink(t, hostile.Slowloris+4)
	j := &procJob{}
	held, cut, failed := j.attackOne(t.Context(), s.listener(time.Minute))
	if len(failed) != 0 || cut == 0 || held+cut != len(hostile.Attacks()) {
		t.Fatalf("held %d, cut %d, failed %q", held, cut, failed)
	}
}
