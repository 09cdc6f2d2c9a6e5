package uncoord

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/ckpt/ckpt/internal/msglog/logstore"
	"github.com/ckpt/ckpt/internal/peer"
)

type benchRank interface {
	send(to int) error
	recv(from int) error
}

var benchLogs = []struct {
	name string
	log  func(b *testing.B) logstore.Store
}{
	{"raw", nil},
	{"mem-log", func(*testing.B) logstore.Store { return logstore.NewMem() }},
	{"file-log", func(b *testing.B) logstore.Store {
		l, err := logstore.OpenFile(filepath.Join(b.TempDir(), "log"))
		if err != nil {
			b.Fatal(err)
		}
		return l
	}},
}

// benchPair returns two ranks over loopback TCP (peer Nodes): raw, or
// through the driver with log's store.
func benchPair(b *testing.B, log func(b *testing.B) logstore.Store, size int) [2]benchRank {
	ctx := context.Background()
	res := peer.NewMapResolver()
	msg := make([]byte, size)
	var ranks [2]benchRank
	var nodes []*peer.Node
	var drivers []*Rank
	// Drivers first, then the Nodes: no driver is left dialling a Node
	// that closed.
	b.Cleanup(func() {
		for _, d := range drivers {
			d.Close()
		}
		for _, n := range nodes {
			n.Close()
		}
	})
	for r := range ranks {
		n, err := peer.Listen(r, 2, "t", res, peer.WithListenAddr("127.0.0.1:0"))
		if err != nil {
			b.Fatal(err)
		}
		nodes = append(nodes, n)
		res.Publish(r, n.Addr())
		if log == nil {
			ranks[r] = rawRank{ctx, n, msg}
			continue
		}
		l := log(b)
		d, err := Start(ctx, Config{Rank: r, Size: 2, Net: n, Log: l})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { l.Close() })
		drivers = append(drivers, d)
		ranks[r] = drvRank{ctx, d, msg}
	}
	return ranks
}

// BenchmarkPingPong measures a round trip of 1 KiB between two ranks:
// raw, then through the driver with the log in memory and in the
// protector's file (a sync per record, since one message is in flight).
// The ratios to raw are the price of pessimistic logging on a delivery's
// latency (Fialho et al. 2011 fig. 2: the delivery waits for the log).
func BenchmarkPingPong(b *testing.B) {
	for _, c := range benchLogs {
		b.Run(c.name, func(b *testing.B) {
			ranks := benchPair(b, c.log, 1024)
			done := make(chan error, 1)
			go func() {
				for range b.N {
					if err := ranks[1].recv(0); err != nil {
						done <- err
						return
					}
					if err := ranks[1].send(0); err != nil {
						done <- err
						return
					}
				}
				done <- nil
			}()
			b.ResetTimer()
			for range b.N {
				if err := ranks[0].send(1); err != nil {
					b.Fatal(err)
				}
				if err := ranks[0].recv(1); err != nil {
					b.Fatal(err)
				}
			}
			if err := <-done; err != nil {
				b.Fatal(err)
			}
		})
	}
}

// BenchmarkStream measures a stream of 1 KiB messages from one rank to
// another: the records that arrive while the log syncs are appended
// together (group commit), so the file log's cost is shared.
func BenchmarkStream(b *testing.B) {
	for _, c := range benchLogs {
		b.Run(c.name, func(b *testing.B) {
			ranks := benchPair(b, c.log, 1024)
			b.SetBytes(1024)
			done := make(chan error, 1)
			go func() {
				for range b.N {
					if err := ranks[0].send(1); err != nil {
						done <- err
						return
					}
				}
				done <- nil
			}()
			for range b.N {
				if err := ranks[1].recv(0); err != nil {
					b.Fatal(err)
				}
			}
			if err := <-done; err != nil {
				b.Fatal(err)
			}
		})
	}
}

type rawRank struct {
	ctx context.Context
	n   *peer.Node
	msg []byte
}

func (r rawRank) send(to int) error { return r.n.Send(r.ctx, to, 1, r.msg) }
func (r rawRank) recv(from int) error {
	_, err := r.n.Recv(r.ctx, from, 1, nil)
	return err
}

type drvRank struct {
	ctx context.Context
	d   *Rank
	msg []byte
}

func (r drvRank) send(to int) error { return r.d.Send(r.ctx, to, r.msg) }
func (r drvRank) recv(from int) error {
	_, err := r.d.Recv(r.ctx, from)
	return err
}
