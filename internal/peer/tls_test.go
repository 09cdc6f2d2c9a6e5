package peer_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/jobtls/jobtlstest"
	"github.com/ckpt/ckpt/internal/peer"
	"github.com/ckpt/ckpt/internal/peer/transporttest"
	"github.com/ckpt/ckpt/internal/redundancy"
	"github.com/ckpt/ckpt/internal/testwait"
)

// Over TLS the application channel keeps the whole transport contract.
func TestContractAppTLS(t *testing.T) {
	c := jobtlstest.New(t)
	transporttest.Run(t, func(t *testing.T, n, depth int) transporttest.Net {
		nodes, _ := cluster(t, n, peer.WithDepth(depth), peer.WithTLS(c))
		eps := make([]redundancy.Transport, n)
		for i := range eps {
			eps[i] = nodes[i]
		}
		return transporttest.Net{Endpoints: eps, Close: func(i int) error { return nodes[i].Close() }}
	})
}

// A Node that speaks TLS takes no plain-TCP peer, nor a peer with another
// job's certificate, even one with the right token, and keeps serving its
// job.
func TestTLSRefusesOutsiders(t *testing.T) {
	ctx := ctxT(t)
	c := jobtlstest.New(t)
	res := peer.NewMapResolver()
	n0 := start(t, 0, 3, res, peer.WithTLS(c), peer.WithHandshakeTimeout(10*time.Second))
	for _, opts := range [][]peer.Option{nil, {peer.WithTLS(jobtlstest.New(t))}} {
		intruder, err := peer.Listen(1, 3, token, res, append(opts, peer.WithLogger(quiet), peer.WithHandshakeTimeout(10*time.Second))...)
		if err != nil {
			t.Fatal(err)
		}
		err = intruder.Send(ctx, 0, 1, []byte("x"))
		intruder.Close()
		if err == nil || errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("an outsider's Send: %v, want it refused", err)
		}
	}
	n1 := start(t, 1, 3, res, peer.WithTLS(c))
	done := make(chan error, 1)
	go func() { done <- n1.Send(ctx, 0, 1, []byte("member")) }()
	if got, err := n0.Recv(ctx, 1, 1, nil); err != nil || string(got) != "member" {
		t.Fatalf("a member after the outsiders: %q, %v", got, err)
	}
	if err := testwait.Recv(t, done, "the member's Send"); err != nil {
		t.Fatal(err)
	}
}
