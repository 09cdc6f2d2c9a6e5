package jobtls

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func load(t *testing.T) (*Config, Files) {
	t.Helper()
	f, err := Generate(t.TempDir(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Load(f)
	if err != nil || c == nil {
		t.Fatalf("Load = %v, %v", c, err)
	}
	return c, f
}

// handshake runs a server with srv and a client with cli over a loopback
// connection, and returns each side's handshake error.
func handshake(t *testing.T, srv, cli *tls.Config) (serr, cerr error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan error, 1)
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		defer nc.Close()
		nc.SetDeadline(time.Now().Add(20 * time.Second))
		tc := tls.Server(nc, srv)
		err = tc.Handshake()
		if err == nil {
			// TLS 1.3: the client's certificate is checked after the
			// client's side returned; a byte both ways settles it.
			_, err = io.ReadFull(tc, make([]byte, 1))
			tc.Write([]byte{1})
		}
		done <- err
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(20 * time.Second))
	tc := tls.Client(nc, cli)
	cerr = tc.Handshake()
	if cerr == nil {
		tc.Write([]byte{1})
		_, cerr = io.ReadFull(tc, make([]byte, 1))
	}
	nc.Close()
	return <-done, cerr
}

// Two processes of one job authenticate each other.
func TestMutualAuthentication(t *testing.T) {
	c, _ := load(t)
	if serr, cerr := handshake(t, c.Server, c.Client); serr != nil || cerr != nil {
		t.Fatalf("same job: server %v, client %v", serr, cerr)
	}
}

// A client without a certificate, or with another job's, is refused by
// the server; a server of another job is refused by the client.
func TestOtherJobsRefused(t *testing.T) {
	c, _ := load(t)
	other, _ := load(t)
	noCert := c.Client.Clone()
	noCert.Certificates = nil
	if serr, _ := handshake(t, c.Server, noCert); serr == nil {
		t.Error("a client without a certificate was accepted")
	}
	// Another job's client, which trusts this job's CA but presents its
	// own job's certificate.
	stranger := other.Client.Clone()
	stranger.RootCAs = c.Client.RootCAs
	if serr, _ := handshake(t, c.Server, stranger); serr == nil {
		t.Error("a client with another job's certificate was accepted")
	}
	if _, cerr := handshake(t, other.Server, c.Client); cerr == nil {
		t.Error("the client accepted another job's server")
	}
}

// The files are the job's user's only, whatever the umask, and Load
// wants all three or none.
func TestFilesPrivateAndComplete(t *testing.T) {
	defer umask0()()
	_, f := load(t)
	for _, p := range []string{f.CA, f.Cert, f.Key} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", filepath.Base(p), fi.Mode().Perm())
		}
	}
	if c, err := Load(Files{}); c != nil || err != nil {
		t.Errorf("Load of nothing = %v, %v; want no TLS", c, err)
	}
	if _, err := Load(Files{CA: f.CA, Cert: f.Cert}); !errors.Is(err, ErrIncomplete) {
		t.Errorf("Load without the key = %v, want ErrIncomplete", err)
	}
	if _, err := Load(Files{CA: f.Key, Cert: f.Cert, Key: f.Key}); err == nil {
		t.Error("Load of a CA file holding no certificate succeeded")
	}
}
