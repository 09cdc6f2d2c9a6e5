package stage

import (
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/jobtls"
	"github.com/ckpt/ckpt/internal/jobtls/jobtlstest"
	"github.com/ckpt/ckpt/internal/storage/mem"
)

// A flush over the job's TLS commits the checkpoint exact, as over TCP.
func TestFlushOverTLS(t *testing.T) {
	c := jobtlstest.New(t)
	shared := mem.New()
	cp := makeCheckpoint(t, "ckpt.1", 1, 2, 1, []int{300000, 5}, 3)
	_, addr := startServer(t, Config{Shared: shared, ChunkSize: 64 << 10, TLS: c.Server})
	cl := NewClient(ClientConfig{Addr: addr, Token: "tok", Node: "node0", Source: newSource(cp), Logf: t.Logf, TLS: c.Client})
	defer cl.Close()
	if err := cl.Announce(cp.name, cp.encoded, cp.ranks("node0")); err != nil {
		t.Fatal(err)
	}
	waitState(t, cl, cp.name, Committed, Durable)
	waitManifest(t, shared, cp.name)
	checkShared(t, shared, cp)
}

// A server that speaks TLS reads no Hello from a plain-TCP client, nor
// from a client with another job's certificate: both are dropped before
// their token is looked at, and the stranger's flush stays pending.
func TestTLSServerRefusesOutsiders(t *testing.T) {
	c := jobtlstest.New(t)
	var mu sync.Mutex
	var logged []string
	srv, err := NewServer(Config{Shared: mem.New(), Token: "tok", TLS: c.Server, HelloTimeout: 5 * time.Second,
		Logf: func(f string, a ...any) {
			mu.Lock()
			logged = append(logged, fmt.Sprintf(f, a...))
			mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	addr := ln.Addr().String()
	// Plain TCP: the server waits for a TLS ClientHello and gets a Hello
	// frame, which is no such thing.
	p := dialPeer(t, addr)
	p.send(&Hello{Version: Version, Token: "tok", Node: "node0"})
	p.expectClosed("a plain-TCP client of a TLS server")
	// Another job's certificate: it trusts this job's server, but the
	// server does not trust it.
	other := jobtlstest.New(t).Client.Clone()
	other.RootCAs = c.Client.RootCAs
	cp := makeCheckpoint(t, "ckpt.2", 2, 1, 1, []int{10}, 4)
	cl := NewClient(ClientConfig{Addr: addr, Token: "tok", Node: "node0", Source: newSource(cp), Logf: t.Logf, TLS: other})
	defer cl.Close()
	if err := cl.Announce(cp.name, cp.encoded, cp.ranks("node0")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		mu.Lock()
		refused := slices.ContainsFunc(logged, func(l string) bool {
			return strings.Contains(l, "no hello") && strings.Contains(l, "certificate")
		})
		mu.Unlock()
		if refused {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server never refused the stranger's certificate; it logged %q", logged)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if st, _, _ := cl.State(cp.name); st != Pending {
		t.Fatalf("a client with another job's certificate: %v, want Pending", st)
	}
}

// pullRate flushes n checkpoints of one rank holding size bytes through a
// server and a client (with tls, if not nil) and returns the bytes per
// second from the first announcement to the last commit. The bytes come
// from memory and go to memory: what is measured is the staging pull,
// its protocol and its connection.
func pullRate(b *testing.B, tls *jobtls.Config, size, n int) float64 {
	b.Helper()
	cfg, ccfg := Config{Shared: mem.New()}, ClientConfig{Token: "tok", Node: "node0"}
	if tls != nil {
		cfg.TLS, ccfg.TLS = tls.Server, tls.Client
	}
	_, addr := startServer(b, cfg)
	src := newSource()
	var cps []*testCheckpoint
	for i := range n {
		cp := makeCheckpoint(b, fmt.Sprintf("ckpt.%d", i+1), uint64(i+1), 1, 1, []int{size}, 5)
		src.add(cp)
		cps = append(cps, cp)
	}
	ccfg.Addr, ccfg.Source = addr, src
	cl := NewClient(ccfg)
	defer cl.Close()
	start := time.Now()
	for _, cp := range cps {
		if err := cl.Announce(cp.name, cp.encoded, cp.ranks("node0")); err != nil {
			b.Fatal(err)
		}
		waitState(b, cl, cp.name, Committed, Durable)
	}
	return float64(size) * float64(n) / time.Since(start).Seconds()
}

// BenchmarkPullTLS32MiB is the staging pull of a 32 MiB checkpoint over
// the job's TLS (ns/op, MB/s), beside the same pulls over plain TCP
// measured right after in the same run (plain-MB/s) and the ratio
// (x-plain): the cost of ckpt run --tls on the staging pull.
func BenchmarkPullTLS32MiB(b *testing.B) {
	const size = 32 << 20
	c := jobtlstest.New(b)
	b.SetBytes(size)
	b.ResetTimer()
	rate := pullRate(b, c, size, b.N)
	b.StopTimer()
	plain := pullRate(b, nil, size, b.N)
	b.ReportMetric(plain/1e6, "plain-MB/s")
	b.ReportMetric(rate/plain, "x-plain")
}
