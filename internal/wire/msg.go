package wire

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"

	"github.com/ckpt/ckpt/internal/framing"
)

// Type is the one-byte message type of a frame.
type Type uint8

// Message types. The values are part of the protocol: never renumber.
const (
	TypeHello      Type = 1
	TypeWelcome    Type = 2
	TypeRefused    Type = 3
	TypeCollective Type = 4
	TypeResult     Type = 5
	TypePublish    Type = 6
	TypeLookup     Type = 7
	TypeValue      Type = 8
	TypeAck        Type = 9
	TypeHeartbeat  Type = 10
	TypeLeave      Type = 11
	TypeFail       Type = 12
	TypeAbort      Type = 13
	TypeError      Type = 14
)

var typeNames = [...]string{
	TypeHello: "Hello", TypeWelcome: "Welcome", TypeRefused: "Refused",
	TypeCollective: "Collective", TypeResult: "Result", TypePublish: "Publish",
	TypeLookup: "Lookup", TypeValue: "Value", TypeAck: "Ack",
	TypeHeartbeat: "Heartbeat", TypeLeave: "Leave", TypeFail: "Fail",
	TypeAbort: "Abort", TypeError: "Error",
}

func (t Type) String() string {
	if int(t) < len(typeNames) && typeNames[t] != "" {
		return typeNames[t]
	}
	return "Type(" + strconv.Itoa(int(t)) + ")"
}

// Kind is the kind of a collective.
type Kind uint8

// Collective kinds. The values are part of the protocol.
const (
	// Barrier returns no data.
	Barrier Kind = 1
	// AllGather returns every rank's contribution, indexed by rank.
	AllGather Kind = 2
	// Decide returns one answer computed by the coordinator's policy from
	// every rank's contribution.
	Decide Kind = 3
	// Commit collects checkpoint votes (see AppendVote): the coordinator
	// records the checkpoint if every rank voted yes for the same name,
	// and every rank gets that one outcome back as a vote.
	Commit Kind = 4
)

func (k Kind) String() string {
	switch k {
	case Barrier:
		return "barrier"
	case AllGather:
		return "allgather"
	case Decide:
		return "decide"
	case Commit:
		return "commit"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

func (k Kind) valid() bool { return k >= Barrier && k <= Commit }

// Limits of fields, checked by Append and by Decode.
const (
	MaxToken  = 256      // Hello.Token
	MaxNode   = 256      // Hello.Node
	MaxKey    = 256      // keys of the key–value service
	MaxValue  = 64 << 10 // values of the key–value service
	MaxReason = 1024     // reasons of Refused, Fail, Abort, Error

	// MaxHelloRanks bounds the ranks one Hello speaks for: a client's, or
	// a node's relay's, all the ranks of the node.
	MaxHelloRanks = 1 << 16
	// HelloLimit is the payload limit of the frames a server reads from a
	// connection before its Hello, whose client has not yet shown the
	// job's token: a Hello of MaxHelloRanks ranks fits, and nothing
	// larger than that costs the server before the token is checked.
	HelloLimit = 4*binary.MaxVarintLen64 + MaxToken + MaxNode + MaxHelloRanks*binary.MaxVarintLen32

	// HeaderSize is the size of a frame header: length and type.
	HeaderSize = framing.HeaderSize
	// DefaultLimit is the default payload limit of a frame, for requests.
	DefaultLimit = 1 << 20
)

// Msg is one protocol message. The concrete types are the pointer types of
// this package (*Hello, *Welcome, ...); the interface is sealed.
type Msg interface {
	Type() Type
	String() string
	appendPayload(b []byte) ([]byte, error)
}

// Hello is a client's first message: it joins the ranks it speaks for.
type Hello struct {
	Token       string // shared secret of the job
	Incarnation uint64 // the job's incarnation the client belongs to
	Node        string // the node the ranks run on
	Ranks       []int32
}

// Welcome tells a joined client that every rank of the job has joined.
type Welcome struct {
	Size        int32 // ranks in the job
	Incarnation uint64
	Nodes       int32 // distinct nodes the ranks run on
}

// Refused answers a Hello that cannot be accepted; the connection is closed
// after it.
type Refused struct{ Reason string }

// Contrib is one rank's contribution to a collective.
type Contrib struct {
	Rank int32
	Data []byte
}

// Collective carries contributions of some of the sender's ranks to the
// collective with sequence number Seq.
type Collective struct {
	Seq      uint64
	Kind     Kind
	Contribs []Contrib
}

// Result completes collective Seq. Data is empty for a barrier, holds one
// entry per rank (indexed by rank) for an all-gather, and holds the single
// answer for a decide or a commit.
type Result struct {
	Seq  uint64
	Kind Kind
	Data [][]byte
}

// Publish stores Value under Key, replacing any earlier value; answered by
// Ack.
type Publish struct {
	Req   uint64
	Key   string
	Value []byte
}

// Lookup asks for Key's value; answered by Value. With Wait, the answer is
// held back until the key has been published.
type Lookup struct {
	Req  uint64
	Key  string
	Wait bool
}

// Value answers Lookup Req. Value is empty when Found is false.
type Value struct {
	Req   uint64
	Key   string
	Value []byte
	Found bool
}

// Ack answers Publish Req once the value is stored.
type Ack struct{ Req uint64 }

// Heartbeat says the sender is alive; any frame does, Heartbeat is what an
// idle side sends.
type Heartbeat struct{}

// Leave ends the part of Ranks in the job cleanly.
type Leave struct{ Ranks []int32 }

// Fail reports that Ranks failed (a sub-coordinator reporting one of its
// local ranks, or a rank reporting a fatal error of its own); the job
// aborts.
type Fail struct {
	Ranks  []int32
	Reason string
}

// Abort says the job was aborted; the connection is closed after it.
type Abort struct{ Reason string }

// Error reports a protocol error of the receiving side (Req is the request
// it concerns, or 0); the connection is closed after it.
type Error struct {
	Req    uint64
	Reason string
}

func (*Hello) Type() Type      { return TypeHello }
func (*Welcome) Type() Type    { return TypeWelcome }
func (*Refused) Type() Type    { return TypeRefused }
func (*Collective) Type() Type { return TypeCollective }
func (*Result) Type() Type     { return TypeResult }
func (*Publish) Type() Type    { return TypePublish }
func (*Lookup) Type() Type     { return TypeLookup }
func (*Value) Type() Type      { return TypeValue }
func (*Ack) Type() Type        { return TypeAck }
func (*Heartbeat) Type() Type  { return TypeHeartbeat }
func (*Leave) Type() Type      { return TypeLeave }
func (*Fail) Type() Type       { return TypeFail }
func (*Abort) Type() Type      { return TypeAbort }
func (*Error) Type() Type      { return TypeError }

// String forms are for logs and test transcripts: the token is never
// printed, and data is quoted and cut short.

func (m *Hello) String() string {
	return fmt.Sprintf("Hello{inc=%d node=%s ranks=%s}", m.Incarnation, m.Node, FormatRanks(m.Ranks))
}
func (m *Welcome) String() string {
	return fmt.Sprintf("Welcome{size=%d inc=%d nodes=%d}", m.Size, m.Incarnation, m.Nodes)
}
func (m *Refused) String() string { return fmt.Sprintf("Refused{%s}", m.Reason) }
func (m *Collective) String() string {
	return formatRound("Collective", m.Seq, m.Kind, len(m.Contribs), func(i int) string {
		return fmt.Sprintf("%d:%s", m.Contribs[i].Rank, quote(m.Contribs[i].Data))
	})
}
func (m *Result) String() string {
	return formatRound("Result", m.Seq, m.Kind, len(m.Data), func(i int) string { return quote(m.Data[i]) })
}

// formatRound prints a Collective or a Result: its round and the first
// eight of its n entries.
func formatRound(name string, seq uint64, k Kind, n int, entry func(int) string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s{seq=%d %s", name, seq, k)
	for i := range n {
		if i == 8 {
			fmt.Fprintf(&b, " …%d more", n-i)
			break
		}
		b.WriteString(" " + entry(i))
	}
	b.WriteString("}")
	return b.String()
}
func (m *Publish) String() string {
	return fmt.Sprintf("Publish{req=%d %s=%s}", m.Req, m.Key, quote(m.Value))
}
func (m *Lookup) String() string {
	w := ""
	if m.Wait {
		w = " wait"
	}
	return fmt.Sprintf("Lookup{req=%d %s%s}", m.Req, m.Key, w)
}
func (m *Value) String() string {
	if !m.Found {
		return fmt.Sprintf("Value{req=%d %s not found}", m.Req, m.Key)
	}
	return fmt.Sprintf("Value{req=%d %s=%s}", m.Req, m.Key, quote(m.Value))
}
func (m *Ack) String() string     { return fmt.Sprintf("Ack{req=%d}", m.Req) }
func (*Heartbeat) String() string { return "Heartbeat{}" }
func (m *Leave) String() string   { return fmt.Sprintf("Leave{ranks=%s}", FormatRanks(m.Ranks)) }
func (m *Fail) String() string {
	return fmt.Sprintf("Fail{ranks=%s %s}", FormatRanks(m.Ranks), m.Reason)
}
func (m *Abort) String() string { return fmt.Sprintf("Abort{%s}", m.Reason) }
func (m *Error) String() string { return fmt.Sprintf("Error{req=%d %s}", m.Req, m.Reason) }

func quote(b []byte) string {
	if len(b) > 16 {
		return strconv.Quote(string(b[:16])) + "…"
	}
	return strconv.Quote(string(b))
}

// FormatRanks prints ranks compactly, runs of consecutive ranks as ranges
// ("[0-3 7 9-10]"), keeping the order given. Jobs of thousands of ranks
// name them in logs and abort reasons, so long lists are cut after 16 runs.
func FormatRanks(ranks []int32) string {
	var b strings.Builder
	b.WriteByte('[')
	runs := 0
	for i := 0; i < len(ranks); {
		j := i
		for j+1 < len(ranks) && ranks[j+1] == ranks[j]+1 {
			j++
		}
		if runs == 16 {
			fmt.Fprintf(&b, " …%d more", len(ranks)-i)
			break
		}
		if runs > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.Itoa(int(ranks[i])))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(int(ranks[j])))
		}
		runs++
		i = j + 1
	}
	b.WriteByte(']')
	return b.String()
}
