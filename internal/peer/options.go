package peer

import (
	"context"
	"log/slog"
	"strconv"
	"time"

	"github.com/ckpt/ckpt/internal/jobtls"
)

// Defaults of a Node's options.
const (
	DefaultListenAddr = "127.0.0.1:0"
	DefaultDepth      = 16       // messages buffered per stream
	DefaultWindow     = 8 << 20  // bytes buffered per stream
	DefaultMaxFrame   = 64 << 20 // largest message accepted
	DefaultTimeout    = 10 * time.Second
	DefaultLinger     = 2 * time.Second
)

// Option configures a Node.
type Option func(*options)

type options struct {
	listen           string
	depth            int
	window           int
	maxFrame         int
	dialTimeout      time.Duration
	handshakeTimeout time.Duration
	linger           time.Duration
	log              *slog.Logger
	tls              *jobtls.Config
}

func defaults() options {
	return options{
		listen:           DefaultListenAddr,
		depth:            DefaultDepth,
		window:           DefaultWindow,
		maxFrame:         DefaultMaxFrame,
		dialTimeout:      DefaultTimeout,
		handshakeTimeout: DefaultTimeout,
		linger:           DefaultLinger,
	}
}

// WithListenAddr sets the TCP address the Node listens on (default
// DefaultListenAddr, an ephemeral loopback port). Node.Addr is what peers
// dial, so the host must be one they can reach.
func WithListenAddr(addr string) Option { return func(o *options) { o.listen = addr } }

// WithDepth sets how many messages each inbound stream buffers before its
// sender's Send blocks (≥ 1; default DefaultDepth).
func WithDepth(n int) Option { return func(o *options) { o.depth = n } }

// WithWindow sets how many bytes each inbound stream buffers before its
// sender's Send blocks (≥ 1; default DefaultWindow). A single message
// larger than the window still goes through when nothing else is
// outstanding, so a stream always buffers at least one message.
func WithWindow(bytes int) Option { return func(o *options) { o.window = bytes } }

// WithMaxFrame sets the largest message this Node accepts (≥ 0, < 4 GiB;
// default DefaultMaxFrame). Peers learn it in the handshake and refuse to
// send larger messages; a frame that claims more closes its connection.
func WithMaxFrame(bytes int) Option { return func(o *options) { o.maxFrame = bytes } }

// WithDialTimeout bounds connecting to a peer, not counting the Resolver's
// wait for its address (default DefaultTimeout).
func WithDialTimeout(d time.Duration) Option { return func(o *options) { o.dialTimeout = d } }

// WithHandshakeTimeout bounds a handshake, on both sides (default
// DefaultTimeout).
func WithHandshakeTimeout(d time.Duration) Option {
	return func(o *options) { o.handshakeTimeout = d }
}

// WithTLS makes the Node speak TLS with its peers, which must too:
// mutual authentication with the job's certificate (package jobtls)
// before the handshake, whose token is still checked. nil: plain TCP.
func WithTLS(c *jobtls.Config) Option { return func(o *options) { o.tls = c } }

// WithLinger bounds how long Close waits for peers to read what this Node
// sent before it closes the connections hard (default DefaultLinger).
func WithLinger(d time.Duration) Option { return func(o *options) { o.linger = d } }

// WithLogger sets where refused connections and protocol errors are
// logged (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// Resolver finds a rank's current address: the virtual rank address of
// the runtime. Lookup blocks until the rank has published one, the
// context is done, or the resolver fails; it may be called concurrently.
// The coordinator's key–value service implements it with the key
// AddrKey(rank), under which each Node's owner publishes Node.Addr().
type Resolver interface {
	Lookup(ctx context.Context, rank int) (addr string, err error)
}

// ResolverFunc adapts a function to Resolver.
type ResolverFunc func(ctx context.Context, rank int) (string, error)

// Lookup calls f.
func (f ResolverFunc) Lookup(ctx context.Context, rank int) (string, error) { return f(ctx, rank) }

// AddrKey is the key–value key under which a rank publishes its address.
func AddrKey(rank int) string { return "addr/" + strconv.Itoa(rank) }
