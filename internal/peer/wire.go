package peer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/ckpt/ckpt/internal/fields"
)

// The wire format; doc.go describes it for humans.

const (
	helloMagic   = "ckpP"
	helloVersion = 1
	// maxHello bounds a handshake: a set of a million members fits.
	maxHello = 8 << 20
	// maxToken bounds the job token in a handshake.
	maxToken = 4096
	// maxRank bounds a rank on the wire (ranks are ints; this keeps
	// them positive ints on every platform).
	maxRank = math.MaxInt32

	replyLen = 1 + 4 + 8 + 8 // status, depth, window, max frame
	hdrLen   = 1 + 4 + 8     // type, a, b
)

// Channel kinds named in a handshake.
const (
	kindApp = 0 // the application channel: indices are job ranks
	kindSet = 1 // a redundancy set's channel: indices are members
)

// Handshake reply statuses.
const (
	statusOK      = 0
	statusRefused = 1 // wrong token, rank or channel: a configuration error
	statusClosed  = 2 // the channel was closed on the acceptor: the peer left
)

// Frame types. Data, marker and blocked frames go from the dialler to the
// acceptor; credit frames the other way.
const (
	frameData    = 1 // a: length, b: tag; then length bytes
	frameMarker  = 2 // a = b = 0: the drain marker
	frameBlocked = 3 // a = b = 0: the sender waits for credit
	frameCredit  = 4 // a: messages, b: bytes returned to the sender
)

// hello is the handshake a dialler sends.
type hello struct {
	kind    uint8
	token   string
	from    int // sender's job rank
	to      int // receiver's job rank
	epoch   uint64
	members []int // set channels: job ranks in member order
}

// appendHello appends the handshake, with its 4-byte length prefix.
func appendHello(b []byte, h hello) []byte {
	start := len(b)
	b = append(b, 0, 0, 0, 0)
	b = append(b, helloMagic...)
	b = append(b, helloVersion, h.kind)
	b = fields.AppendString(b, h.token)
	b = binary.AppendUvarint(b, uint64(h.from))
	b = binary.AppendUvarint(b, uint64(h.to))
	if h.kind == kindSet {
		b = binary.LittleEndian.AppendUint64(b, h.epoch)
		b = binary.AppendUvarint(b, uint64(len(h.members)))
		for _, m := range h.members {
			b = binary.AppendUvarint(b, uint64(m))
		}
	}
	binary.LittleEndian.PutUint32(b[start:], uint32(len(b)-start-4))
	return b
}

// parseHello decodes a handshake body (without its length prefix). It
// checks the encoding only; whether the token and ranks are right is the
// acceptor's business.
func parseHello(b []byte) (hello, error) {
	d := fields.NewDecoder(b)
	var h hello
	if string(d.Fixed("magic", len(helloMagic))) != helloMagic && d.Err() == nil {
		return h, fmt.Errorf("%w: bad handshake magic", ErrMalformed)
	}
	if v := d.Fixed("version", 2); d.Err() == nil {
		if v[0] != helloVersion {
			return h, fmt.Errorf("%w: handshake version %d, want %d", ErrMalformed, v[0], helloVersion)
		}
		h.kind = v[1]
		if h.kind != kindApp && h.kind != kindSet {
			return h, fmt.Errorf("%w: unknown channel kind %d", ErrMalformed, h.kind)
		}
	}
	h.token = d.String("token", maxToken)
	h.from = int(d.Uvarint("sender rank", maxRank))
	h.to = int(d.Uvarint("receiver rank", maxRank))
	if h.kind == kindSet {
		if e := d.Fixed("epoch", 8); e != nil {
			h.epoch = binary.LittleEndian.Uint64(e)
		}
		if n := d.Count("member count", 1); n > 0 {
			h.members = make([]int, n)
			for i := range h.members {
				h.members[i] = int(d.Uvarint("member rank", maxRank))
			}
		}
	}
	if err := d.End(); err != nil {
		return hello{}, fmt.Errorf("%w: handshake: %v", ErrMalformed, err)
	}
	return h, nil
}

// maxHelloHead bounds the head of a handshake: its magic, version, kind
// and token, which is all of it an acceptor reads before it checks the
// token.
const maxHelloHead = len(helloMagic) + 2 + binary.MaxVarintLen64 + maxToken

// errWrongToken is readHello's error for a handshake whose token admit
// refused. It names no token: the job's is a secret, and a guess may be
// a near miss of it.
var errWrongToken = errors.New("wrong job token")

// readHello reads one length-prefixed handshake from r, and checks its
// prefix against maxHello first. If admit is not nil, it is asked about
// the handshake's token as soon as the token is in, before the rest (a
// set's member list, up to maxHello) is read: a dialler with the wrong
// token (errWrongToken) or a head that does not decode costs the acceptor
// maxHelloHead bytes at most, not its handshake limit, and is answered
// without waiting for bytes it only promised.
func readHello(r io.Reader, admit func(token string) bool) (hello, error) {
	var p [4]byte
	if _, err := io.ReadFull(r, p[:]); err != nil {
		return hello{}, fmt.Errorf("%w: handshake: %v", ErrMalformed, err)
	}
	n := int(binary.LittleEndian.Uint32(p[:]))
	if n > maxHello {
		return hello{}, fmt.Errorf("%w: handshake of %d bytes exceeds %d", ErrMalformed, n, maxHello)
	}
	var b []byte
	if admit != nil {
		head, token, err := readHelloHead(r, n)
		if err != nil {
			return hello{}, err
		}
		if !admit(token) {
			return hello{}, errWrongToken
		}
		b = head
	}
	if rest := n - len(b); rest > 0 {
		b = append(b, make([]byte, rest)...)
		if _, err := io.ReadFull(r, b[len(b)-rest:]); err != nil {
			return hello{}, fmt.Errorf("%w: handshake: %v", ErrMalformed, err)
		}
	}
	return parseHello(b)
}

// readHelloHead reads the head of a handshake of n bytes, up to and
// including its token, a field at a time, and returns it with the token.
func readHelloHead(r io.Reader, n int) (head []byte, token string, err error) {
	malformed := func(what string) error { return fmt.Errorf("%w: handshake: %s", ErrMalformed, what) }
	head = make([]byte, len(helloMagic)+2, maxHelloHead)
	if n < len(head) {
		return nil, "", malformed("shorter than its head")
	}
	if _, err := io.ReadFull(r, head); err != nil {
		return nil, "", malformed(err.Error())
	}
	if string(head[:len(helloMagic)]) != helloMagic {
		return nil, "", malformed("bad magic")
	}
	// The token's length, a uvarint read a byte at a time.
	var l uint64
	for shift := 0; ; shift += 7 {
		if len(head) == n || shift >= 64 {
			return nil, "", malformed("token length cut short")
		}
		var c [1]byte
		if _, err := io.ReadFull(r, c[:]); err != nil {
			return nil, "", malformed(err.Error())
		}
		head = append(head, c[0])
		l |= uint64(c[0]&0x7f) << shift
		if c[0] < 0x80 {
			break
		}
	}
	if l > maxToken || l > uint64(n-len(head)) {
		return nil, "", malformed(fmt.Sprintf("token of %d bytes (limit %d, %d left)", l, maxToken, n-len(head)))
	}
	start := len(head)
	head = head[:start+int(l)]
	if _, err := io.ReadFull(r, head[start:]); err != nil {
		return nil, "", malformed(err.Error())
	}
	return head, string(head[start:]), nil
}

// reply is the acceptor's answer to a handshake: the receive limits of
// the new stream, which the dialler's flow control honours.
type reply struct {
	status   uint8
	depth    uint32 // messages the receiver buffers
	window   uint64 // bytes the receiver buffers (a larger single message is allowed when nothing else is outstanding)
	maxFrame uint64 // the receiver's largest message
}

func (r reply) encode() [replyLen]byte {
	var b [replyLen]byte
	b[0] = r.status
	binary.LittleEndian.PutUint32(b[1:], r.depth)
	binary.LittleEndian.PutUint64(b[5:], r.window)
	binary.LittleEndian.PutUint64(b[13:], r.maxFrame)
	return b
}

func parseReply(b [replyLen]byte) (reply, error) {
	r := reply{
		status:   b[0],
		depth:    binary.LittleEndian.Uint32(b[1:]),
		window:   binary.LittleEndian.Uint64(b[5:]),
		maxFrame: binary.LittleEndian.Uint64(b[13:]),
	}
	switch {
	case r.status > statusClosed:
		return r, fmt.Errorf("%w: handshake reply status %d", ErrMalformed, r.status)
	case r.status == statusOK && (r.depth < 1 || r.window < 1 || r.window > math.MaxInt64/2 || r.maxFrame > math.MaxUint32):
		return r, fmt.Errorf("%w: handshake reply limits depth %d, window %d, max frame %d", ErrMalformed, r.depth, r.window, r.maxFrame)
	}
	return r, nil
}

// header is a frame header: 1 byte type, 4 bytes a, 8 bytes b, little
// endian.
type header struct {
	typ uint8
	a   uint32
	b   uint64
}

func putHeader(p []byte, h header) {
	p[0] = h.typ
	binary.LittleEndian.PutUint32(p[1:], h.a)
	binary.LittleEndian.PutUint64(p[5:], h.b)
}

// parseInbound decodes the header of a frame on an inbound (data) stream
// and checks it: a known type, control frames with zero fields, and data
// no longer than maxFrame. Nothing is allocated here: the caller
// allocates the payload only after this check.
func parseInbound(p []byte, maxFrame int) (header, error) {
	h := header{typ: p[0], a: binary.LittleEndian.Uint32(p[1:]), b: binary.LittleEndian.Uint64(p[5:])}
	switch h.typ {
	case frameData:
		if int64(h.a) > int64(maxFrame) {
			return h, fmt.Errorf("%w: frame of %d bytes exceeds the limit of %d", ErrMalformed, h.a, maxFrame)
		}
	case frameMarker, frameBlocked:
		if h.a != 0 || h.b != 0 {
			return h, fmt.Errorf("%w: control frame %d with non-zero fields", ErrMalformed, h.typ)
		}
	default:
		return h, fmt.Errorf("%w: unknown frame type %d", ErrMalformed, h.typ)
	}
	return h, nil
}

// parseCredit decodes a frame on the return direction of an outbound
// stream, which carries only credit.
func parseCredit(p []byte) (header, error) {
	h := header{typ: p[0], a: binary.LittleEndian.Uint32(p[1:]), b: binary.LittleEndian.Uint64(p[5:])}
	if h.typ != frameCredit {
		return h, fmt.Errorf("%w: frame type %d on the credit stream", ErrMalformed, h.typ)
	}
	return h, nil
}

// window is the receiver's side of a stream's flow control: what it has
// received and not yet credited back. admit checks a data frame against
// the limits the receiver announced; a sender that honours its credit
// never fails it, so a failure is a protocol error.
type window struct {
	depth, bytes int64 // announced limits
	msgs, used   int64 // outstanding: received, not yet credited
}

func (w *window) admit(size int64) error {
	if w.msgs >= w.depth {
		return fmt.Errorf("%w: %d messages outstanding, the window is %d", ErrMalformed, w.msgs+1, w.depth)
	}
	if w.used > 0 && w.used+size > w.bytes {
		return fmt.Errorf("%w: %d bytes outstanding, the window is %d", ErrMalformed, w.used+size, w.bytes)
	}
	w.msgs++
	w.used += size
	return nil
}

// release marks msgs messages of bytes bytes as credited back.
func (w *window) release(msgs, bytes int64) {
	w.msgs -= msgs
	w.used -= bytes
}
