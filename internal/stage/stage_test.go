package stage

import (
	"context"
	"testing"

	"github.com/ckpt/ckpt/internal/sharedtier"
	"github.com/ckpt/ckpt/internal/storage/mem"
)

// One server, two nodes: each node's client announces its ranks; the
// server pulls every file in chunks (chunk size not dividing the files),
// writes one object per rank, and commits the manifest once all are
// durable.
func TestFlushTwoNodes(t *testing.T) {
	shared := mem.New()
	cp := makeCheckpoint(t, "ckpt.1", 1, 4, 2, []int{100000, 0, 7}, 1)
	srv, addr := startServer(t, Config{Shared: shared, Writers: 2, ChunkSize: 4096})
	flushNodes(t, addr, cp, "node0", "node1")
	waitManifest(t, shared, cp.name)
	checkShared(t, shared, cp)
	st := srv.Stats()
	if st.Committed != 1 || st.Failed != 0 {
		t.Errorf("stats %+v: want 1 committed", st)
	}
	if want := int64(4 * 100007); st.BytesWritten != want {
		t.Errorf("BytesWritten %d, want %d", st.BytesWritten, want)
	}
	if st.PeakBuffered > int64(2*2*4096) {
		t.Errorf("peak buffered %d bytes beyond the configured buffer %d", st.PeakBuffered, 2*2*4096)
	}
	ms, err := sharedtier.List(context.Background(), shared)
	if err != nil || len(ms) != 1 || ms[0].Level != "shared" {
		t.Fatalf("shared tier lists %v (%v)", ms, err)
	}
}

// flushNodes has a client per node announce cp's ranks there to the
// server at addr, and waits until each says cp is committed or durable.
func flushNodes(t *testing.T, addr string, cp *testCheckpoint, nodes ...string) {
	t.Helper()
	var clients []*Client
	for _, node := range nodes {
		c := startClient(t, addr, node, newSource(cp))
		if err := c.Announce(cp.name, cp.encoded, cp.ranks(node)); err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
	}
	for _, c := range clients {
		waitState(t, c, cp.name, Committed, Durable)
	}
}

// Two servers, each serving one node, agree through the markers: the
// checkpoint is committed once, by whichever finishes last.
func TestFlushTwoServers(t *testing.T) {
	shared := mem.New()
	cp := makeCheckpoint(t, "ckpt.7", 7, 6, 3, []int{30000}, 2)
	var clients []*Client
	var servers []*Server
	for i := range 2 {
		srv, addr := startServer(t, Config{Shared: shared, ChunkSize: 1000})
		servers = append(servers, srv)
		_ = i
		for _, node := range map[int][]string{0: {"node0", "node2"}, 1: {"node1"}}[i] {
			c := startClient(t, addr, node, newSource(cp))
			c.Announce(cp.name, cp.encoded, cp.ranks(node))
			clients = append(clients, c)
		}
	}
	for _, c := range clients {
		waitState(t, c, cp.name, Committed, Durable)
	}
	waitManifest(t, shared, cp.name)
	checkShared(t, shared, cp)
	committed := servers[0].Stats().Committed + servers[1].Stats().Committed
	if committed < 1 {
		t.Errorf("no server reports the commit")
	}
}
