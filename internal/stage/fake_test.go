package stage

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"net"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/storage/mem"
	"github.com/ckpt/ckpt/storage"
)

// frame builds a frame by hand: a header claiming n bytes of type typ,
// then payload.
func frame(typ Type, n uint32, payload []byte) []byte {
	b := binary.LittleEndian.AppendUint32(nil, n)
	return append(append(b, byte(typ)), payload...)
}

// leftOver is m's frame with one byte more in its payload.
func leftOver(m Msg) []byte {
	f := append(Append(nil, m), 0)
	binary.LittleEndian.PutUint32(f, uint32(len(f)-headerSize))
	return f
}

// A fake server sends the client pulls it must refuse, each answered by a
// PullError on a connection that stays up, and frames it cannot read,
// after which the client drops the connection and connects again.
func TestClientAgainstFakeServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cp := makeCheckpoint(t, "ckpt.20", 20, 2, 2, []int{10000, 500}, 20) // rank 0 on node0, 1 on node1
	gone := makeCheckpoint(t, "ckpt.21", 21, 1, 1, []int{10000}, 21)    // announced, not in the cache
	c := startClient(t, ln.Addr().String(), "node0", newSource(cp))
	for _, x := range []*testCheckpoint{cp, gone} {
		if err := c.Announce(x.name, x.encoded, x.ranks("node0")); err != nil {
			t.Fatal(err)
		}
	}
	// session accepts the client's next connection: Hello, Welcome, and
	// its announcements of both checkpoints again.
	session := func() *peer {
		p := acceptPeer(t, ln)
		if h, ok := p.recv().(*Hello); !ok || h.Version != Version || h.Token != "tok" || h.Node != "node0" {
			t.Fatalf("first frame %+v, want node0's Hello", h)
		}
		p.send(&Welcome{Server: "fake"})
		var names []string
		for range 2 {
			a, ok := p.recv().(*Announce)
			if !ok {
				t.Fatalf("want the client's announcements, got %+v", a)
			}
			names = append(names, a.Name)
		}
		if slices.Sort(names); !slices.Equal(names, []string{cp.name, gone.name}) {
			t.Fatalf("client announced %v", names)
		}
		return p
	}
	// good checks that the connection serves a valid pull.
	good := func(p *peer, id uint64) {
		t.Helper()
		p.send(&Pull{ID: id, Name: cp.name, Rank: 0, File: "f0", Offset: 100, Length: 1000})
		d, ok := p.recv().(*Data)
		if !ok || d.ID != id || d.Length != 1000 {
			t.Fatalf("answer to a valid pull: %+v", d)
		}
		if got := p.recvData(1000); !bytes.Equal(got, cp.data["0/f0"][100:1100]) {
			t.Fatal("Data bytes differ from the cache")
		}
	}

	p := session()
	for i, bad := range []struct {
		pull Pull
		want string
	}{
		{Pull{Name: "ckpt.99", Rank: 0, File: "f0", Length: 10}, "not announced"},
		{Pull{Name: cp.name, Rank: 1, File: "f0", Length: 10}, "not on node"},
		{Pull{Name: cp.name, Rank: 5, File: "f0", Length: 10}, "not on node"},
		{Pull{Name: cp.name, Rank: 0, File: "nope", Length: 10}, "no file"},
		{Pull{Name: cp.name, Rank: 0, File: "f0", Offset: 10001, Length: 1}, "outside"},
		{Pull{Name: cp.name, Rank: 0, File: "f0", Offset: 9990, Length: 11}, "outside"},
		{Pull{Name: cp.name, Rank: 0, File: "f1", Offset: 500, Length: 1}, "outside"},
		{Pull{Name: cp.name, Rank: 0, File: "f0", Offset: 1<<63 - 1, Length: MaxChunk}, "outside"},
		{Pull{Name: cp.name, Rank: 0, File: "f0", Offset: 0, Length: 0}, "outside"},
		{Pull{Name: gone.name, Rank: 0, File: "f0", Length: 10}, storage.ErrNotExist.Error()},
	} {
		m := bad.pull
		m.ID = uint64(100 + i)
		p.send(&m)
		p.expectPullError(m.ID, bad.want)
	}
	good(p, 1)
	// Statuses of names the client does not know are ignored.
	p.send(&Status{Name: "ckpt.99", State: Committed})
	good(p, 2)

	for _, bad := range []struct {
		name string
		raw  []byte
	}{
		{"frame beyond MaxFrame", frame(TPull, MaxFrame+1, nil)},
		{"huge Status", frame(TStatus, 1<<31, nil)},
		{"undecodable Pull", frame(TPull, 1, []byte{0xff})},
		{"Pull with bytes left over", leftOver(&Pull{ID: 3, Name: cp.name, File: "f0", Length: 1})},
		{"unknown frame type", frame(77, 0, nil)},
		{"a second Welcome", Append(nil, &Welcome{Server: "again"})},
		{"Data from the server", Append(nil, &Data{ID: 1, Length: 0})},
	} {
		p.sendRaw(bad.raw)
		p.expectClosed(bad.name)
		p = session()
		good(p, 4)
	}
	if st, _, _ := c.State(cp.name); st != Pending {
		t.Fatalf("after the bad frames the flush is %v", st)
	}
	// The server's verdict reaches the client.
	p.send(&Status{Name: gone.name, State: Failed, Reason: "no such checkpoint"})
	if reason := waitFailed(t, c, gone.name); reason != "no such checkpoint" {
		t.Errorf("reason %q", reason)
	}
	p.send(&Status{Name: cp.name, State: Committed})
	waitState(t, c, cp.name, Committed)
}

// Fake clients misbehave in every way the server must not accept; it
// drops each of them and serves a real client meanwhile.
func TestServerAgainstFakeClients(t *testing.T) {
	shared := mem.New()
	good := makeCheckpoint(t, "ckpt.30", 30, 2, 1, []int{300000}, 30)
	cp := makeCheckpoint(t, "ckpt.31", 31, 2, 2, []int{100000}, 31) // rank 0 on node0, 1 on node1
	srv, addr := startServer(t, Config{Shared: shared, ChunkSize: 16 << 10, Rate: 4 << 20})
	real := startClient(t, addr, "node0", newSource(good, cp))
	if err := real.Announce(good.name, good.encoded, good.ranks("node0")); err != nil {
		t.Fatal(err)
	}
	announce := func(a *Announce) []byte { return Append(nil, a) }
	badManifest := bytes.Replace(cp.encoded, []byte(cp.name), []byte("ckpt.32"), 1)
	for _, tc := range []struct {
		name string
		node string
		raw  []byte
	}{
		{"Data never requested", "fake1", append(Append(nil, &Data{ID: 99, Length: 4}), 1, 2, 3, 4)},
		{"PullError never requested", "fake1", Append(nil, &PullError{ID: 99, Reason: "x"})},
		{"second Hello", "fake1", Append(nil, &Hello{Version: Version, Token: "tok", Node: "fake1"})},
		{"Status from a client", "fake1", Append(nil, &Status{Name: cp.name})},
		{"Welcome from a client", "fake1", Append(nil, &Welcome{})},
		{"frame beyond MaxFrame", "fake1", frame(TData, MaxFrame+1, nil)},
		{"Announce beyond its limit", "fake1", frame(TAnnounce, MaxManifest+MaxFrame+1, nil)},
		{"undecodable frame", "fake1", frame(TPullError, 2, []byte{0x80, 0x80})},
		{"unknown frame type", "fake1", frame(0, 0, nil)},
		{"manifest that does not decode", "node1", announce(&Announce{Name: cp.name, Manifest: []byte("{}"), Ranks: []int{1}})},
		{"manifest damaged", "node1", announce(&Announce{Name: cp.name, Manifest: badManifest, Ranks: []int{1}})},
		{"manifest of another name", "node1", announce(&Announce{Name: "ckpt.33", Manifest: cp.encoded, Ranks: []int{1}})},
		{"ranks of another node", "node1", announce(&Announce{Name: cp.name, Manifest: cp.encoded, Ranks: []int{0}})},
		{"rank out of range", "node1", announce(&Announce{Name: cp.name, Manifest: cp.encoded, Ranks: []int{1, 2}})},
	} {
		p := dialPeer(t, addr)
		p.hello("tok", tc.node)
		p.sendRaw(tc.raw)
		p.expectClosed(tc.name)
	}

	// A fake node1 announces its rank properly, then answers the pull
	// with Data of the wrong length.
	p := dialPeer(t, addr)
	p.hello("tok", "node1")
	p.send(&Announce{Name: cp.name, Manifest: cp.encoded, Ranks: []int{1}})
	var pull *Pull
	for pull == nil {
		if m, ok := p.recv().(*Pull); ok {
			pull = m
		}
	}
	p.sendRaw(append(Append(nil, &Data{ID: pull.ID, Length: pull.Length - 1}), make([]byte, pull.Length-1)...))
	p.expectClosed("Data of the wrong length")

	waitState(t, real, good.name, Committed)
	checkShared(t, shared, good)
	checkAbsent(t, shared, cp.name)
	if st := srv.Stats(); st.Failed != 0 || st.Committed != 1 {
		t.Errorf("stats %+v: the misbehaving clients failed flushes", st)
	}
	// The fake node1's flush waits for node1; a real node1 completes it.
	if p := srv.Pending(); !slices.Equal(p, []string{cp.name}) {
		t.Errorf("pending %v, want [%s]", p, cp.name)
	}
	n1 := startClient(t, addr, "node1", newSource(cp))
	real.Announce(cp.name, cp.encoded, cp.ranks("node0"))
	waitState(t, n1, cp.name, Committed)
	waitState(t, real, cp.name, Committed)
	checkShared(t, shared, cp)
}

// The handshake: a server refuses a wrong version, a wrong token, a bad
// node name and anything but a Hello, saying why, and closes.
func TestServerRefuses(t *testing.T) {
	_, addr := startServer(t, Config{Shared: mem.New()})
	for _, tc := range []struct {
		name string
		msg  Msg
		want string
	}{
		{"version", &Hello{Version: Version + 1, Token: "tok", Node: "node0"}, "protocol version"},
		{"version 0", &Hello{Version: 0, Token: "tok", Node: "node0"}, "protocol version"},
		{"token", &Hello{Version: Version, Token: "wrong", Node: "node0"}, "wrong job token"},
		{"empty token", &Hello{Version: Version, Node: "node0"}, "wrong job token"},
		{"no node", &Hello{Version: Version, Token: "tok"}, "node name"},
		{"bad node", &Hello{Version: Version, Token: "tok", Node: "../x"}, "node name"},
		{"not a Hello", &Announce{Name: "ckpt.1"}, "expected Hello"},
	} {
		p := dialPeer(t, addr)
		p.send(tc.msg)
		r, ok := p.recv().(*Refused)
		if !ok || !strings.Contains(r.Reason, tc.want) {
			t.Errorf("%s: got %+v, want Refused saying %q", tc.name, r, tc.want)
		}
		p.expectClosed(tc.name)
	}
	// Garbage or silence instead of a Hello: closed without a word.
	p := dialPeer(t, addr)
	p.sendRaw(frame(THello, MaxFrame+1, nil))
	p.expectClosed("oversized Hello")
}

// A client with the wrong job token is refused: its pending flushes fail
// saying so, and it accepts no more announcements.
func TestClientWrongToken(t *testing.T) {
	srv, err := NewServer(Config{Shared: mem.New(), Token: "right", Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cp := makeCheckpoint(t, "ckpt.40", 40, 1, 1, []int{1000}, 40)
	c := NewClient(ClientConfig{Addr: ln.Addr().String(), Token: "wrong", Node: "node0", Source: newSource(cp), Logf: t.Logf})
	defer c.Close()
	// Not served yet: the client waits for its Welcome with the flush
	// pending.
	if err := c.Announce(cp.name, cp.encoded, cp.ranks("node0")); err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	if reason := waitFailed(t, c, cp.name); !strings.Contains(reason, "wrong job token") {
		t.Errorf("reason %q, want the wrong token", reason)
	}
	if c.Busy() {
		t.Error("refused client still busy")
	}
	err = c.Announce("ckpt.41", cp.encoded, nil)
	if err == nil || !strings.Contains(err.Error(), "wrong job token") {
		t.Errorf("Announce after the refusal: %v", err)
	}
	if err := c.Announce(cp.name, []byte("not a manifest"), nil); err == nil {
		t.Error("Announce of a manifest that does not decode succeeded")
	}
	if p := srv.Pending(); len(p) != 0 {
		t.Errorf("server took the refused client's flushes: %v", p)
	}
}

// A client whose server speaks another protocol version is refused the
// same way: permanently, with the server's reason.
func TestClientWrongVersion(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cp := makeCheckpoint(t, "ckpt.42", 42, 1, 1, []int{1000}, 42)
	c := startClient(t, ln.Addr().String(), "node0", newSource(cp))
	c.Announce(cp.name, cp.encoded, cp.ranks("node0"))
	p := acceptPeer(t, ln)
	p.recv()
	p.send(&Refused{Reason: "protocol version 1, this server speaks 2"})
	if reason := waitFailed(t, c, cp.name); !strings.Contains(reason, "protocol version") {
		t.Errorf("reason %q", reason)
	}
	if err := c.Announce("ckpt.43", cp.encoded, nil); err == nil || !strings.Contains(err.Error(), "protocol version") {
		t.Errorf("Announce after the refusal: %v", err)
	}
	if err := c.WaitIdle(context.Background()); err != nil {
		t.Errorf("WaitIdle: %v", err)
	}
}

// A client that does not answer a pull is dropped after PullTimeout; the
// flush waits for the node and completes when a client serves it.
func TestPullTimeout(t *testing.T) {
	shared := mem.New()
	cp := makeCheckpoint(t, "ckpt.50", 50, 1, 1, []int{50000}, 50)
	srv, addr := startServer(t, Config{Shared: shared, ChunkSize: 8192, PullTimeout: 200 * time.Millisecond})
	p := dialPeer(t, addr)
	p.hello("tok", "node0")
	p.send(&Announce{Name: cp.name, Manifest: cp.encoded, Ranks: []int{0}})
	if _, ok := p.recv().(*Pull); !ok {
		t.Fatal("no pull")
	}
	p.expectClosed("silent client")
	if st := srv.Stats(); st.Failed != 0 {
		t.Fatalf("stats %+v: a silent client failed the flush", st)
	}
	c := startClient(t, addr, "node0", newSource(cp))
	waitState(t, c, cp.name, Committed)
	checkShared(t, shared, cp)
}

// Answers to pulls the server gave up (its flush failed meanwhile) are
// skipped, not taken for a protocol error: the connection goes on.
func TestAnswerAfterGivingUp(t *testing.T) {
	shared := mem.New()
	cp := makeCheckpoint(t, "ckpt.51", 51, 1, 1, []int{50000}, 51)
	next := makeCheckpoint(t, "ckpt.52", 52, 1, 1, []int{5000}, 52)
	srv, addr := startServer(t, Config{Shared: shared, ChunkSize: 8192, Depth: 3})
	p := dialPeer(t, addr)
	p.hello("tok", "node0")
	p.send(&Announce{Name: cp.name, Manifest: cp.encoded, Ranks: []int{0}})
	pulls := p.recvPulls(3)
	p.send(&PullError{ID: pulls[0].ID, Reason: "gone"})
	for {
		m := p.recv()
		if s, ok := m.(*Status); ok && s.Name == cp.name && s.State == Failed {
			if !strings.Contains(s.Reason, "gone") {
				t.Errorf("reason %q", s.Reason)
			}
			break
		}
	}
	// The late answers to the pulls given up.
	p.sendRaw(append(Append(nil, &Data{ID: pulls[1].ID, Length: pulls[1].Length}), make([]byte, pulls[1].Length)...))
	p.send(&PullError{ID: pulls[2].ID, Reason: "late"})
	// The connection is still up and in step: serve the next flush.
	p.send(&Announce{Name: next.name, Manifest: next.encoded, Ranks: []int{0}})
	for {
		switch m := p.recv().(type) {
		case *Pull:
			b := next.data["0/"+m.File][m.Offset : m.Offset+int64(m.Length)]
			p.sendRaw(append(Append(nil, &Data{ID: m.ID, Length: m.Length}), b...))
			continue
		case *Status:
			if m.Name != next.name || m.State == Pending || m.State == Durable {
				continue
			}
			if m.State != Committed {
				t.Fatalf("next flush %v: %s", m.State, m.Reason)
			}
		}
		break
	}
	checkShared(t, shared, next)
	if st := srv.Stats(); st.Failed != 1 || st.Committed != 1 {
		t.Errorf("stats %+v", st)
	}
}

// A pull given up while the connection's reader is still filling its
// buffer: the buffer must not go back to the pool, where another transfer
// would take it while the bytes still come in. (The race detector sees
// the two writers of the buffer; the flushes must be exact anyway.)
func TestAbandonedChunkBuffer(t *testing.T) {
	const chunk = 64 << 10
	shared := &faultBackend{Backend: mem.New()}
	bad := makeCheckpoint(t, "ckpt.60", 60, 2, 2, []int{2 * chunk}, 60) // rank 1 on node1
	good := makeCheckpoint(t, "ckpt.61", 61, 1, 1, []int{4 * chunk}, 61)
	// The first write of bad's object fails, a moment after the chunk
	// arrives: by then the reader is filling the next chunk's buffer.
	shared.set(faults{match: func(n string) bool { return strings.HasPrefix(n, bad.name+"/") },
		writeErr: syscall.ENOSPC, writeDelay: 50 * time.Millisecond})
	srv, addr := startServer(t, Config{Shared: shared, Writers: 1, Depth: 2, ChunkSize: chunk, Buffer: 2 * chunk})
	p := dialPeer(t, addr)
	p.hello("tok", "node1")
	p.send(&Announce{Name: bad.name, Manifest: bad.encoded, Ranks: []int{1}})
	pulls := p.recvPulls(2)
	data := bad.data["1/f0"]
	out := Append(nil, &Data{ID: pulls[0].ID, Length: chunk})
	out = append(out, data[:chunk]...)
	out = Append(out, &Data{ID: pulls[1].ID, Length: chunk})
	out = append(out, data[chunk:chunk+chunk/2]...)
	p.sendRaw(out)
	waitFor(t, "the flush to fail", func() bool { return srv.Stats().Failed == 1 })

	c := startClient(t, addr, "node0", newSource(good))
	c.Announce(good.name, good.encoded, good.ranks("node0"))
	waitState(t, c, good.name, Committed)
	// The rest of the abandoned chunk arrives now.
	p.sendRaw(bytes.Repeat([]byte{0xEE}, chunk/2))
	checkShared(t, shared, good)
	// And the next flush, into buffers the late bytes must not touch.
	again := makeCheckpoint(t, "ckpt.62", 62, 1, 1, []int{4 * chunk}, 62)
	c2 := startClient(t, addr, "node0", newSource(again))
	c2.Announce(again.name, again.encoded, again.ranks("node0"))
	waitState(t, c2, again.name, Committed)
	checkShared(t, shared, again)
}

// A checkpoint already on the shared tier is not pulled again: its
// announcement is answered Committed at once.
func TestAnnounceCommitted(t *testing.T) {
	shared := mem.New()
	cp := makeCheckpoint(t, "ckpt.70", 70, 2, 1, []int{20000}, 70)
	srv, addr := startServer(t, Config{Shared: shared})
	c := startClient(t, addr, "node0", newSource(cp))
	c.Announce(cp.name, cp.encoded, cp.ranks("node0"))
	waitState(t, c, cp.name, Committed)
	pulled := srv.Stats().BytesPulled
	c2 := startClient(t, addr, "node0", newSource(cp))
	c2.Announce(cp.name, cp.encoded, cp.ranks("node0"))
	waitState(t, c2, cp.name, Committed)
	if st := srv.Stats(); st.BytesPulled != pulled || st.Committed != 1 {
		t.Errorf("stats %+v: the committed checkpoint was pulled again", st)
	}
}

// NewServer refuses a configuration it cannot run and a journal it cannot
// list; records it cannot use are dropped, the others resumed oldest
// first.
func TestServerJournalAndConfig(t *testing.T) {
	for _, cfg := range []Config{
		{},
		{Shared: mem.New(), ChunkSize: MaxChunk + 1},
		{Shared: mem.New(), ChunkSize: 4096, Buffer: 4095},
		{Shared: mem.New(), Journal: listFails{mem.New()}},
	} {
		if s, err := NewServer(cfg); err == nil {
			s.Close()
			t.Errorf("NewServer(%+v) succeeded", cfg)
		}
	}

	journal := mem.New()
	save := func(obj string, b []byte) {
		if _, err := storage.Save(context.Background(), journal, obj, bytes.NewReader(b)); err != nil {
			t.Fatal(err)
		}
	}
	rec := func(cp *testCheckpoint, name string, nodes map[string][]int) []byte {
		b, err := json.Marshal(&record{Name: name, Manifest: cp.encoded, Nodes: nodes})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// IDs on both sides of 2^63.
	late := makeCheckpoint(t, "ckpt.late", 3<<62, 1, 1, []int{100}, 80)
	early := makeCheckpoint(t, "ckpt.early", 1, 1, 1, []int{100}, 81)
	save(journalObject(late.name), rec(late, late.name, map[string][]int{"node0": {0}}))
	save(journalObject(early.name), rec(early, early.name, map[string][]int{"node0": {0}}))
	save(journalObject("ckpt.junk"), []byte("{not json"))
	save(journalObject("ckpt.other"), rec(early, "ckpt.other", map[string][]int{"node0": {0}}))
	save(journalObject("ckpt.moved"), rec(early, early.name, map[string][]int{"node0": {0}}))
	wrongNode := makeCheckpoint(t, "ckpt.node", 2, 1, 1, []int{100}, 82)
	save(journalObject(wrongNode.name), rec(wrongNode, wrongNode.name, map[string][]int{"node9": {0}}))
	save(journalObject("ckpt.badman"), []byte(`{"Name":"ckpt.badman","Manifest":"e30="}`))
	srv, err := NewServer(Config{Shared: mem.New(), Journal: journal, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if p := srv.Pending(); !slices.Equal(p, []string{early.name, late.name}) {
		t.Errorf("resumed %v, want [%s %s]", p, early.name, late.name)
	}
	if left := objects(t, journal, ""); !slices.Equal(left, []string{journalObject(early.name), journalObject(late.name)}) {
		t.Errorf("journal holds %v after dropping the bad records", left)
	}
}

type listFails struct{ storage.Backend }

func (listFails) List(context.Context, string, func(storage.Info) error) error {
	return &storage.Error{Op: "list", Err: syscall.EIO}
}

// A client closing while it serves a pull (its rank's job ended, or the
// rank fails) cuts its cache read short: it must drop the connection, not
// answer with a PullError, which the server takes for a broken cache and
// fails the flush that a relaunched rank's client would have served.
// (Close also closes the connection, but a busy machine may run the
// answer first: the answer is driven here by hand, over a pipe.)
func TestClientClosingDropsThePull(t *testing.T) {
	cp := makeCheckpoint(t, "ckpt.30", 30, 1, 1, []int{4000}, 30)
	src := newSource(cp)
	src.holdOpen = make(chan struct{}, 1)
	c := NewClient(ClientConfig{Addr: "127.0.0.1:1", Token: "tok", Node: "node0", Source: src, Logf: t.Logf})
	if err := c.Announce(cp.name, cp.encoded, cp.ranks("node0")); err != nil {
		t.Fatal(err)
	}
	c.Close() // cancels the client's context: the cache read below fails
	server, client := net.Pipe()
	defer server.Close()
	c.mu.Lock()
	c.nc = client
	c.mu.Unlock()
	got := make(chan Msg, 1)
	go func() {
		m, err := ReadMsg(bufio.NewReader(server))
		if err != nil {
			m = nil
		}
		got <- m
	}()
	err := c.answer(client, &Pull{ID: 1, Name: cp.name, Rank: 0, File: "f0", Length: 1000})
	<-src.holdOpen
	if err == nil {
		t.Fatal("answer served a pull after Close")
	}
	client.Close()
	if m := <-got; m != nil {
		t.Fatalf("the closing client answered the pull with %s %+v; want the connection dropped", m.Type(), m)
	}
}
