package peer

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/redundancy"
)

func TestHelloRoundTrip(t *testing.T) {
	for _, h := range []hello{
		{kind: kindApp, token: "t", from: 3, to: 9},
		{kind: kindSet, token: "", from: 0, to: 1 << 30, epoch: 1<<64 - 1, members: []int{5, 0, 1 << 30}},
		{kind: kindSet, token: string(make([]byte, maxToken)), members: []int{}},
	} {
		b := appendHello(nil, h)
		got, err := readHello(bytes.NewReader(b), nil)
		if err != nil {
			t.Fatal(err)
		}
		if got.kind != h.kind || got.token != h.token || got.from != h.from || got.to != h.to ||
			got.epoch != h.epoch || !slices.Equal(got.members, h.members) {
			t.Fatalf("round trip: %+v, want %+v", got, h)
		}
		for i := range len(b) - 1 {
			if _, err := readHello(bytes.NewReader(b[:i]), nil); err == nil {
				t.Fatalf("truncated to %d bytes: accepted", i)
			}
		}
	}
}

func FuzzHello(f *testing.F) {
	f.Add(appendHello(nil, hello{kind: kindApp, token: "job", from: 1, to: 2})[4:])
	f.Add(appendHello(nil, hello{kind: kindSet, token: "job", from: 1, to: 2, epoch: 9, members: []int{2, 1, 0}})[4:])
	f.Add([]byte("ckpP\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\xff\xff\xff\xff\x0f"))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := parseHello(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error not wrapping ErrMalformed: %v", err)
			}
			return
		}
		if len(h.members) > len(b) || len(h.token) > maxToken {
			t.Fatalf("decoded %d members, %d token bytes from %d bytes", len(h.members), len(h.token), len(b))
		}
		again, err := parseHello(appendHello(nil, h)[4:])
		if err != nil || again.token != h.token || again.from != h.from || again.to != h.to ||
			again.kind != h.kind || again.epoch != h.epoch || !slices.Equal(again.members, h.members) {
			t.Fatalf("re-encoding %+v: %+v, %v", h, again, err)
		}
	})
}

// decodeFrames runs the inbound decoder over a byte stream as a reader
// does: headers checked before any allocation, data admitted by the flow
// control window, payloads read. It returns the data frames and the
// first error.
func decodeFrames(r io.Reader, maxFrame int, w *window) (frames [][]byte, err error) {
	var hb [hdrLen]byte
	for {
		if _, err := io.ReadFull(r, hb[:]); err != nil {
			if err == io.EOF {
				return frames, nil
			}
			return frames, err
		}
		h, err := parseInbound(hb[:], maxFrame)
		if err != nil {
			return frames, err
		}
		if h.typ != frameData {
			continue
		}
		if err := w.admit(int64(h.a)); err != nil {
			return frames, err
		}
		buf := make([]byte, h.a)
		if _, err := io.ReadFull(r, buf); err != nil {
			return frames, err
		}
		frames = append(frames, buf)
		if len(frames)%3 == 0 { // the application consumed some
			w.release(w.msgs, w.used)
		}
	}
}

// wireTimeout bounds each step of these tests that should take
// milliseconds: generous, for a busy machine under the race detector, and
// still a failure with a message rather than a hang.
const wireTimeout = 2 * time.Minute

func frame(typ uint8, a uint32, b uint64, payload []byte) []byte {
	p := make([]byte, hdrLen, hdrLen+len(payload))
	putHeader(p, header{typ: typ, a: a, b: b})
	return append(p, payload...)
}

func FuzzFrames(f *testing.F) {
	f.Add(slices.Concat(frame(frameData, 3, 7, []byte("abc")), frame(frameMarker, 0, 0, nil), frame(frameBlocked, 0, 0, nil)))
	f.Add(frame(frameData, 1<<31, 0, nil))
	f.Add(frame(frameCredit, 1, 1, nil))
	f.Add(frame(frameMarker, 1, 0, nil))
	f.Add(bytes.Repeat(frame(frameData, 1, 0, []byte{1}), 10))
	f.Fuzz(func(t *testing.T, b []byte) {
		const maxFrame = 1 << 10
		w := &window{depth: 4, bytes: 2048}
		frames, err := decodeFrames(bytes.NewReader(b), maxFrame, w)
		total := 0
		for _, fr := range frames {
			if len(fr) > maxFrame {
				t.Fatalf("a frame of %d bytes passed the limit", len(fr))
			}
			total += len(fr)
		}
		if total > len(b) {
			t.Fatalf("decoded %d payload bytes from %d", total, len(b))
		}
		_ = err
	})
}

func FuzzPending(f *testing.F) {
	f.Add(MarshalPending([]Pending{{From: 1, Tag: 2, Data: []byte("x")}, {From: 0, Tag: 0}}))
	f.Add(MarshalPending(nil))
	f.Add([]byte("ckpM\x01\xff\xff\xff\xff\x0f"))
	f.Fuzz(func(t *testing.T, b []byte) {
		msgs, err := UnmarshalPending(b)
		if err != nil {
			return
		}
		if !bytes.Equal(MarshalPending(msgs), b) {
			// Varints may be non-minimal; decoding again must agree.
			again, err := UnmarshalPending(MarshalPending(msgs))
			if err != nil || len(again) != len(msgs) {
				t.Fatalf("re-encoding: %v", err)
			}
		}
	})
}

// testNode starts a Node on loopback whose peers are in res.
func testNode(t *testing.T, rank, size int, res *MapResolver, opts ...Option) *Node {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	n, err := Listen(rank, size, "tok", res, append([]Option{WithLogger(quiet)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	res.Publish(rank, n.Addr())
	return n
}

// rawPeer connects to n as rank from of its application channel, by hand.
func rawPeer(t *testing.T, n *Node, from int) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", n.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(wireTimeout))
	if _, err := c.Write(appendHello(nil, hello{kind: kindApp, token: "tok", from: from, to: n.rank})); err != nil {
		t.Fatal(err)
	}
	var rb [replyLen]byte
	if _, err := io.ReadFull(c, rb[:]); err != nil {
		t.Fatal(err)
	}
	if r, err := parseReply(rb); err != nil || r.status != statusOK {
		t.Fatalf("handshake: %+v, %v", r, err)
	}
	return c
}

// A frame that breaks the protocol closes its connection: the receiver
// gets what came before it, then ErrPeerClosed wrapping ErrMalformed. The
// claimed size is never allocated.
func TestMalformedFrames(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), wireTimeout)
	defer cancel()
	for name, bad := range map[string][]byte{
		"oversized":       frame(frameData, 1<<30, 0, nil),
		"unknown type":    frame(9, 0, 0, nil),
		"credit inbound":  frame(frameCredit, 1, 1, nil),
		"marker fields":   frame(frameMarker, 0, 1, nil),
		"beyond window":   slices.Concat(frame(frameData, 1, 2, []byte{1}), frame(frameData, 1, 3, []byte{1})),
		"cut mid-message": frame(frameData, 100, 2, []byte("short")),
	} {
		t.Run(name, func(t *testing.T) {
			res := NewMapResolver()
			n := testNode(t, 0, 2, res, WithMaxFrame(1<<20), WithDepth(2))
			c := rawPeer(t, n, 1)
			c.Write(slices.Concat(frame(frameData, 2, 1, []byte("ok")), bad))
			if name == "cut mid-message" {
				c.(*net.TCPConn).CloseWrite()
			} else {
				// Receive only once the Node has read the bad frame: a
				// Recv before that grants credit, and "beyond window"
				// would then be within it.
				deadline := time.Now().Add(wireTimeout)
				for n.Stats().Malformed == 0 {
					if time.Now().After(deadline) {
						t.Fatalf("the bad frame was not counted within %v", wireTimeout)
					}
					time.Sleep(time.Millisecond)
				}
			}
			got, err := n.Recv(ctx, 1, 1, nil)
			if err != nil || string(got) != "ok" {
				t.Fatalf("the message before: %q, %v", got, err)
			}
			if name == "beyond window" {
				if _, err := n.Recv(ctx, 1, 2, nil); err != nil {
					t.Fatal(err)
				}
			}
			_, err = n.Recv(ctx, 1, 2, nil)
			if !errors.Is(err, redundancy.ErrPeerClosed) {
				t.Fatalf("after the bad frame: %v", err)
			}
			if name != "cut mid-message" && (!errors.Is(err, ErrMalformed) || n.Stats().Malformed != 1) {
				t.Fatalf("after the bad frame: %v, %d counted", err, n.Stats().Malformed)
			}
			// The connection is closed.
			c.SetReadDeadline(time.Now().Add(wireTimeout))
			if _, err := io.Copy(io.Discard, c); err != nil {
				t.Fatalf("connection not closed: %v", err)
			}
		})
	}
}

// A raw peer that ignores its credit and floods is cut off, and the
// Node's memory stays within the window.
func TestCreditEnforced(t *testing.T) {
	res := NewMapResolver()
	n := testNode(t, 0, 2, res, WithDepth(4), WithWindow(1000))
	c := rawPeer(t, n, 1)
	var b []byte
	for i := range 10 {
		b = append(b, frame(frameData, 300, uint64(i), make([]byte, 300))...)
	}
	c.Write(b)
	c.SetReadDeadline(time.Now().Add(wireTimeout))
	if _, err := io.Copy(io.Discard, c); err != nil {
		t.Fatalf("flooding connection not closed: %v", err)
	}
	if n.Stats().Malformed != 1 {
		t.Fatalf("%d protocol errors counted", n.Stats().Malformed)
	}
}

func TestReplyChecks(t *testing.T) {
	ok := reply{status: statusOK, depth: 1, window: 1, maxFrame: 10}
	if _, err := parseReply(ok.encode()); err != nil {
		t.Fatal(err)
	}
	for _, r := range []reply{{status: 3}, {status: statusOK}, {status: statusOK, depth: 1, window: 1, maxFrame: 1 << 40}} {
		if _, err := parseReply(r.encode()); err == nil {
			t.Errorf("%+v accepted", r)
		}
	}
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], maxHello+1)
	if _, err := readHello(bytes.NewReader(b[:]), nil); err == nil {
		t.Error("an oversized handshake accepted")
	}
}

// FuzzInboundStream feeds arbitrary bytes after a valid handshake to a
// live Node: whatever they are, the Node delivers the well-formed
// messages before the first bad frame, then ErrPeerClosed, and never
// hangs or crashes.
func FuzzInboundStream(f *testing.F) {
	f.Add(slices.Concat(frame(frameData, 3, 0, []byte("abc")), frame(frameMarker, 0, 0, nil), frame(frameData, 0, 1, nil)))
	f.Add(slices.Concat(frame(frameBlocked, 0, 0, nil), frame(frameData, 5000, 0, make([]byte, 5000))))
	f.Add(frame(frameData, 1<<31, 0, nil))
	f.Add(bytes.Repeat(frame(frameData, 1, 0, []byte{1}), 20))
	f.Fuzz(func(t *testing.T, b []byte) {
		ctx, cancel := context.WithTimeout(context.Background(), wireTimeout)
		defer cancel()
		n := testNode(t, 0, 2, NewMapResolver(), WithMaxFrame(1<<16), WithDepth(4), WithWindow(1<<15))
		c := rawPeer(t, n, 1)
		go func() {
			c.Write(b)
			c.(*net.TCPConn).CloseWrite()
		}()
		want, _ := decodeFrames(bytes.NewReader(b), 1<<16, &window{depth: 1 << 30, bytes: 1 << 62})
		buf := make([]byte, 0, 100)
		for i := 0; ; i++ {
			got, err := n.Recv(ctx, 1, 0, buf)
			if errors.Is(err, redundancy.ErrTagMismatch) {
				continue
			}
			if err != nil {
				if !errors.Is(err, redundancy.ErrPeerClosed) {
					t.Fatalf("message %d: %v", i, err)
				}
				break
			}
			if i >= len(want) || !bytes.Equal(got, want[i]) {
				t.Fatalf("message %d: %d bytes, not what was sent", i, len(got))
			}
		}
	})
}

// A Recv that gives up while its buffer is being filled gets it back at
// once, untouched from then on, and the message is not lost: it goes to
// the head of the queue as it completes.
func TestRecvWithdrawsMidMessage(t *testing.T) {
	n := testNode(t, 0, 2, NewMapResolver())
	c := rawPeer(t, n, 1)
	payload := bytes.Repeat([]byte("0123456789"), 100)
	buf := make([]byte, 0, 2000)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	go func() { // once Recv waits: the reader fills buf, then stalls
		time.Sleep(50 * time.Millisecond)
		c.Write(slices.Concat(frame(frameData, uint32(len(payload)), 5, nil), payload[:10]))
	}()
	if _, err := n.Recv(ctx, 1, 5, buf); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Recv of a stalled message: %v", err)
	}
	scribble := buf[:cap(buf)]
	for i := range scribble {
		scribble[i] = 0xee // the race detector objects if the reader still writes here
	}
	c.Write(payload[10:])
	ctx2, cancel2 := context.WithTimeout(context.Background(), wireTimeout)
	defer cancel2()
	got, err := n.Recv(ctx2, 1, 5, make([]byte, 0, 2000))
	if err != nil || !bytes.Equal(got, payload) {
		t.Fatalf("the message after the withdrawal: %d bytes, %v", len(got), err)
	}
	// The stream goes on, straight into waiting buffers again.
	c.Write(frame(frameData, 3, 6, []byte("abc")))
	if got, err := n.Recv(ctx2, 1, 6, buf); err != nil || string(got) != "abc" {
		t.Fatalf("next message: %q, %v", got, err)
	}
}

// A Send stuck in a write to a peer that does not read returns when its
// context ends; the stream it cut is reported by the next Send, and the
// one after dials again.
//
// The context is cancelled only once the peer has seen the big frame
// begin, so the Send is in its write whatever the machine's speed: a
// deadline instead (200 ms once) could expire before the Send had even
// dialled, and then no connection ever came.
func TestSendCancelledMidWrite(t *testing.T) {
	const bound = wireTimeout // every wait below fails after it instead of hanging
	res := NewMapResolver()
	n := testNode(t, 0, 2, res)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	res.Publish(1, ln.Addr().String())
	accepted := make(chan net.Conn, 2)
	// writing is closed when the first frame's header has arrived.
	writing := make(chan struct{})
	go func() { // a peer that shakes hands, reads that header and nothing more
		first := true
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if _, err := readHello(c, nil); err != nil {
				t.Error(err)
			}
			r := reply{status: statusOK, depth: 4, window: 1 << 30, maxFrame: 1 << 30}.encode()
			c.Write(r[:])
			accepted <- c
			if first {
				first = false
				var hb [hdrLen]byte
				if _, err := io.ReadFull(c, hb[:]); err != nil {
					t.Errorf("the big frame's header: %v", err)
				}
				close(writing)
			}
		}
	}()
	recvConn := func(what string) net.Conn {
		t.Helper()
		select {
		case c := <-accepted:
			return c
		case <-time.After(bound):
			t.Fatalf("%s: no connection reached the peer in %v", what, bound)
			return nil
		}
	}
	msg := make([]byte, 64<<20) // far beyond the socket buffers: the write blocks
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	watchdog := time.AfterFunc(bound, cancel) // a Send that never starts writing still returns
	defer watchdog.Stop()
	go func() {
		select {
		case <-writing:
			cancel()
		case <-ctx.Done():
		}
	}()
	if err := n.Send(ctx, 1, 1, msg); !errors.Is(err, context.Canceled) {
		t.Fatalf("Send to a peer that does not read: %v", err)
	}
	if !watchdog.Stop() {
		t.Fatalf("the peer never saw the message begin in %v", bound)
	}
	c := recvConn("the first Send")
	defer c.Close()
	ctx2, cancel2 := context.WithTimeout(context.Background(), bound)
	defer cancel2()
	if err := n.Send(ctx2, 1, 2, []byte("x")); !errors.Is(err, errCut) {
		t.Fatalf("Send after the cut: %v", err)
	}
	if err := n.Send(ctx2, 1, 3, []byte("x")); err != nil {
		t.Fatalf("Send on a new connection: %v", err)
	}
	recvConn("the Send after the cut").Close()
}

// An acceptor checks the token from a handshake's head: a wrong one is
// refused having read no more than maxHelloHead bytes of a handshake
// that claims maxHello, and the error does not carry the token.
func TestReadHelloChecksTokenFirst(t *testing.T) {
	full := appendHello(nil, hello{kind: kindSet, token: "guess-of-the-secret", from: 1, to: 0, members: make([]int, 1<<20)})
	binary.LittleEndian.PutUint32(full, maxHello)
	r := bytes.NewReader(full)
	_, err := readHello(r, func(tok string) bool { return tok == "the secret" })
	if !errors.Is(err, errWrongToken) {
		t.Fatalf("readHello = %v, want errWrongToken", err)
	}
	if strings.Contains(err.Error(), "guess") {
		t.Errorf("the error %q carries the token", err)
	}
	if read := len(full) - r.Len(); read > 4+maxHelloHead {
		t.Errorf("read %d bytes before refusing the token, limit %d", read, 4+maxHelloHead)
	}
	// The right token reads the whole handshake.
	good := appendHello(nil, hello{kind: kindSet, token: "the secret", from: 1, to: 0, epoch: 3, members: []int{0, 1, 5000}})
	h, err := readHello(bytes.NewReader(good), func(tok string) bool { return tok == "the secret" })
	if err != nil || h.epoch != 3 || len(h.members) != 3 || h.members[2] != 5000 {
		t.Fatalf("readHello = %+v, %v", h, err)
	}
	// A head that cannot hold a token is malformed, and refused unread.
	bad := binary.LittleEndian.AppendUint32(nil, maxHello)
	bad = append(bad, helloMagic...)
	bad = append(bad, helloVersion, kindSet)
	bad = binary.AppendUvarint(bad, maxToken+1)
	bad = append(bad, make([]byte, maxHelloHead)...)
	if _, err := readHello(bytes.NewReader(bad), func(string) bool { return true }); !errors.Is(err, ErrMalformed) {
		t.Fatalf("readHello of an overlong token = %v, want ErrMalformed", err)
	}
}
