package coordnet

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/coord"
	"github.com/ckpt/ckpt/internal/jobtls"
	"github.com/ckpt/ckpt/internal/jobtls/jobtlstest"
	"github.com/ckpt/ckpt/internal/testwait"
)

// Over the job's TLS, a coordinator and a node's relay run a job as over
// TCP; a client without TLS, or with another job's certificate, does not
// join it.
func TestTreeJobOverTLS(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	c := jobtlstest.New(t)
	co, err := StartCoordinator("127.0.0.1:0", coord.Config{Size: 2, Token: token}, Options{Tick: 20 * time.Millisecond, TLS: c})
	if err != nil {
		t.Fatal(err)
	}
	defer co.Close()
	r, err := coord.NewRelay(coord.RelayConfig{Token: token, Node: "n0", Ranks: []int32{0, 1}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	relay := Serve(ln, r, Options{Tick: 20 * time.Millisecond, Upstream: co.Addr(), TLS: c})
	defer relay.Close()

	for _, cli := range []ClientConfig{
		{Addr: relay.Addr(), Token: token, Rank: 0, Size: 2},                                           // no TLS
		{Addr: relay.Addr(), Token: token, Rank: 0, Size: 2, TLS: jobtlstest.New(t).Client},            // another job's
		{Addr: co.Addr(), Token: token, Rank: 0, Size: 2, TLS: withRoots(jobtlstest.New(t), c).Client}, // another job's, trusting this one
	} {
		dctx, dcancel := context.WithTimeout(ctx, 5*time.Second)
		cl, err := Dial(dctx, cli)
		dcancel()
		if err == nil {
			cl.Close()
			t.Fatalf("an outsider (TLS %v) joined", cli.TLS != nil)
		}
	}
	clients := make([]*Client, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for r := range clients {
		wg.Go(func() {
			clients[r], errs[r] = Dial(ctx, ClientConfig{Addr: relay.Addr(), Token: token, Node: "n0",
				Rank: r, Size: 2, HeartbeatInterval: 100 * time.Millisecond, TLS: c.Client})
		})
	}
	testwait.Group(t, &wg, "the dials")
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d over TLS: %v", r, err)
		}
		defer clients[r].Close()
	}
	exercise(t, ctx, clients)
}

// withRoots returns a's configuration trusting b's CA.
func withRoots(a, b *jobtls.Config) *jobtls.Config {
	cl := a.Client.Clone()
	cl.RootCAs = b.Client.RootCAs
	return &jobtls.Config{Server: a.Server, Client: cl}
}
