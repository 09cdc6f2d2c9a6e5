package stage

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"unicode/utf8"

	"github.com/ckpt/ckpt/internal/fields"
	flushtr "github.com/ckpt/ckpt/internal/flush"
	"github.com/ckpt/ckpt/internal/framing"
)

// The staging protocol. A staging client on a compute node connects to its
// staging server and announces the checkpoints it holds; the server pulls
// them chunk by chunk: it sends Pull, the client answers with Data (a
// header frame followed by exactly Length raw bytes, so the client can
// send straight from the file with sendfile(2) and the server can receive
// straight into one of its chunk buffers) or PullError.
//
// Every frame: 4 bytes little-endian payload length, 1 byte type, payload
// (internal/framing's framing, which the coordinator's protocol shares).
// Payload fields are uvarints and length-prefixed strings. Decoders refuse
// anything out of bounds; the reader of a malformed frame drops the
// connection, since the stream is out of step.

// Version is the protocol version a Hello carries.
const Version = 1

// Limits of the protocol; a frame beyond them is refused before it is read.
const (
	MaxFrame    = 1 << 16  // any frame but an Announce
	MaxManifest = 64 << 20 // an Announce's manifest
	MaxChunk    = 64 << 20 // one Pull's length
	maxString   = 4096
	maxRanks    = 1 << 20
	headerSize  = framing.HeaderSize
)

// ErrProtocol wraps every decoding error: the peer sent something this side
// cannot accept, and the connection must be closed.
var ErrProtocol = errors.New("stage: protocol error")

// Type identifies a frame.
type Type uint8

const (
	THello     Type = iota + 1 // client → server
	TWelcome                   // server → client
	TRefused                   // server → client, then close
	TAnnounce                  // client → server
	TPull                      // server → client
	TData                      // client → server, followed by Length bytes
	TPullError                 // client → server
	TStatus                    // server → client
)

func (t Type) String() string {
	switch t {
	case THello:
		return "Hello"
	case TWelcome:
		return "Welcome"
	case TRefused:
		return "Refused"
	case TAnnounce:
		return "Announce"
	case TPull:
		return "Pull"
	case TData:
		return "Data"
	case TPullError:
		return "PullError"
	case TStatus:
		return "Status"
	}
	return fmt.Sprintf("Type(%d)", uint8(t))
}

// Msg is one protocol message.
type Msg interface {
	Type() Type
	appendPayload([]byte) []byte
}

// Hello opens a client's connection: the job's token proves membership and
// Node names the compute node whose cache the client serves.
type Hello struct {
	Version uint64
	Token   string
	Node    string
}

// Welcome accepts a Hello. Pending lists the checkpoints of this node the
// server still has to pull (from its journal): the client keeps them in
// its cache until they are durable.
type Welcome struct {
	Server  string
	Pending []string
}

// Refused rejects a Hello; the server closes the connection after it.
type Refused struct{ Reason string }

// Announce tells the server that checkpoint Name is committed in the
// node's cache, with its manifest (manifest.Encode), and that this node
// serves the files of Ranks.
type Announce struct {
	Name     string
	Manifest []byte
	Ranks    []int
}

// Pull asks for Length bytes of one file of a rank's part of a checkpoint,
// from Offset.
type Pull struct {
	ID     uint64
	Name   string
	Rank   int
	File   string
	Offset int64
	Length int
}

// Data answers Pull ID; exactly Length raw bytes follow the frame.
type Data struct {
	ID     uint64
	Length int
}

// PullError answers Pull ID when the client cannot serve it.
type PullError struct {
	ID     uint64
	Reason string
}

// State is what a Status reports about a checkpoint: the flush's own
// transfer state, so a staged flush reports it without translation. Its
// byte on the wire is the flush.State value; flush.State keeps its values
// in that order for this reason (Decode refuses any above Failed).
type State = flushtr.State

const (
	Pending   = flushtr.Pending   // announced, not yet durable
	Durable   = flushtr.Durable   // every file this node serves is durable on the shared tier
	Committed = flushtr.Committed // the shared-tier manifest is written: the checkpoint exists there
	Failed    = flushtr.Failed    // abandoned; Reason says why
)

// Status reports progress of a checkpoint the client announced.
type Status struct {
	Name   string
	State  State
	Reason string
}

func (*Hello) Type() Type     { return THello }
func (*Welcome) Type() Type   { return TWelcome }
func (*Refused) Type() Type   { return TRefused }
func (*Announce) Type() Type  { return TAnnounce }
func (*Pull) Type() Type      { return TPull }
func (*Data) Type() Type      { return TData }
func (*PullError) Type() Type { return TPullError }
func (*Status) Type() Type    { return TStatus }

func (m *Hello) appendPayload(b []byte) []byte {
	b = binary.AppendUvarint(b, m.Version)
	b = fields.AppendString(b, m.Token)
	return fields.AppendString(b, m.Node)
}

func (m *Welcome) appendPayload(b []byte) []byte {
	b = fields.AppendString(b, m.Server)
	b = binary.AppendUvarint(b, uint64(len(m.Pending)))
	for _, p := range m.Pending {
		b = fields.AppendString(b, p)
	}
	return b
}

func (m *Refused) appendPayload(b []byte) []byte { return fields.AppendString(b, clip(m.Reason)) }

func (m *Announce) appendPayload(b []byte) []byte {
	b = fields.AppendString(b, m.Name)
	b = fields.AppendBytes(b, m.Manifest)
	b = binary.AppendUvarint(b, uint64(len(m.Ranks)))
	for _, r := range m.Ranks {
		b = binary.AppendUvarint(b, uint64(r))
	}
	return b
}

func (m *Pull) appendPayload(b []byte) []byte {
	b = binary.AppendUvarint(b, m.ID)
	b = fields.AppendString(b, m.Name)
	b = binary.AppendUvarint(b, uint64(m.Rank))
	b = fields.AppendString(b, m.File)
	b = binary.AppendUvarint(b, uint64(m.Offset))
	return binary.AppendUvarint(b, uint64(m.Length))
}

func (m *Data) appendPayload(b []byte) []byte {
	b = binary.AppendUvarint(b, m.ID)
	return binary.AppendUvarint(b, uint64(m.Length))
}

func (m *PullError) appendPayload(b []byte) []byte {
	b = binary.AppendUvarint(b, m.ID)
	return fields.AppendString(b, clip(m.Reason))
}

func (m *Status) appendPayload(b []byte) []byte {
	b = fields.AppendString(b, m.Name)
	b = append(b, byte(m.State))
	return fields.AppendString(b, clip(m.Reason))
}

// clip cuts a reason to the protocol's longest string, on a character
// boundary, marking the cut.
func clip(reason string) string {
	if len(reason) <= maxString {
		return reason
	}
	const mark = " [...]"
	cut := maxString - len(mark)
	for cut > 0 && !utf8.RuneStart(reason[cut]) {
		cut--
	}
	return reason[:cut] + mark
}

// Append appends m's frame to buf. Reasons longer than the protocol
// allows are cut to fit (a reason quotes errors of any length); names and
// tokens are the caller's to keep within it, and the peer refuses them
// otherwise (as it refuses a manifest over MaxManifest: one beyond the
// 4 GiB a frame's length can say gets the largest length, which a reader
// refuses unread).
func Append(buf []byte, m Msg) []byte {
	start := len(buf)
	buf = framing.Begin(buf, uint8(m.Type()))
	buf = m.appendPayload(buf)
	framing.End(buf, start) // false over 4 GiB: see above
	return buf
}

// WriteMsg writes m's frame in one Write.
func WriteMsg(w io.Writer, m Msg) error {
	_, err := w.Write(Append(nil, m))
	return err
}

// ReadMsg reads one frame. An Announce (its manifest) and a Welcome (its
// list of pending flushes) may carry up to MaxManifest bytes more than
// MaxFrame, every other frame up to MaxFrame; a larger one is refused
// before it is read. A Data frame's raw bytes are not read: the caller
// reads exactly Data.Length bytes next.
func ReadMsg(r *bufio.Reader) (Msg, error) { return readMsg(r, msgLimit) }

// ReadHello reads the first frame of a connection, whose peer is not known
// yet: at most the largest Hello's bytes, of any type, so that no peer can
// make the server hold a large buffer before it has shown the job's token.
func ReadHello(r *bufio.Reader) (Msg, error) { return readMsg(r, helloLimit) }

// maxHelloFrame is the payload of the largest Hello: its version and two
// strings (token and node) at their limit.
const maxHelloFrame = 3*binary.MaxVarintLen64 + 2*maxString

func msgLimit(t Type) int {
	if t == TAnnounce || t == TWelcome {
		return MaxManifest + MaxFrame
	}
	return MaxFrame
}

func helloLimit(Type) int { return maxHelloFrame }

func readMsg(r *bufio.Reader, limit func(Type) int) (Msg, error) {
	t, p, err := framing.Read(r, limit)
	if err != nil {
		if errors.Is(err, framing.ErrTooLarge) {
			err = fmt.Errorf("%w: %w", ErrProtocol, err)
		}
		return nil, err
	}
	return Decode(t, p)
}

// Decode decodes one frame's payload.
func Decode(t Type, p []byte) (Msg, error) {
	d := fields.NewDecoder(p)
	str := func(field string) string { return d.String(field, maxString) }
	var m Msg
	switch t {
	case THello:
		m = &Hello{Version: d.Uvarint("version", math.MaxUint32), Token: str("token"), Node: str("node")}
	case TWelcome:
		w := &Welcome{Server: str("server")}
		n := d.Count("pending", 1)
		for i := 0; i < n && d.Err() == nil; i++ {
			w.Pending = append(w.Pending, str("pending"))
		}
		m = w
	case TRefused:
		m = &Refused{Reason: str("reason")}
	case TAnnounce:
		a := &Announce{Name: str("name")}
		a.Manifest = d.Bytes("manifest", MaxManifest)
		n := d.Count("ranks", 1)
		if n > maxRanks {
			d.Failf("ranks", "%d ranks, limit %d", n, maxRanks)
		}
		for i := 0; i < n && d.Err() == nil; i++ {
			a.Ranks = append(a.Ranks, int(d.Uvarint("rank", maxRanks-1)))
		}
		m = a
	case TPull:
		m = &Pull{ID: d.Uvarint("id", math.MaxUint64), Name: str("name"), Rank: int(d.Uvarint("rank", maxRanks-1)),
			File: str("file"), Offset: int64(d.Uvarint("offset", math.MaxInt64)), Length: int(d.Uvarint("length", MaxChunk))}
	case TData:
		m = &Data{ID: d.Uvarint("id", math.MaxUint64), Length: int(d.Uvarint("length", MaxChunk))}
	case TPullError:
		m = &PullError{ID: d.Uvarint("id", math.MaxUint64), Reason: str("reason")}
	case TStatus:
		s := &Status{Name: str("name")}
		st := d.Byte("state")
		if st > byte(Failed) {
			d.Failf("state", "unknown state %d", st)
		}
		s.State = State(st)
		s.Reason = str("reason")
		m = s
	default:
		return nil, fmt.Errorf("%w: unknown frame type %d", ErrProtocol, uint8(t))
	}
	if err := d.End(); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrProtocol, t, err)
	}
	return m, nil
}
