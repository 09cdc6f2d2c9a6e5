package coordnet

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ckpt/ckpt/internal/group"
	"github.com/ckpt/ckpt/internal/tcp"
	"github.com/ckpt/ckpt/internal/wire"
)

// Errors of a Client.
var (
	// ErrRefused: the coordinator refused to let the rank join (wrong
	// token, wrong incarnation, rank taken or out of range).
	ErrRefused = errors.New("refused by the coordinator")
	// ErrAborted wraps group.ErrFailed: the job was aborted, or the
	// connection to the coordinator was lost.
	ErrAborted = fmt.Errorf("%w: job aborted", group.ErrFailed)
)

// ClientConfig identifies a rank to its coordinator.
type ClientConfig struct {
	Addr        string // the coordinator, or this node's sub-coordinator
	Token       string
	Incarnation uint64
	Node        string
	Rank, Size  int
	// HeartbeatInterval is how often an idle client says it is alive; it
	// must be well under the coordinator's timeout. Default 2s.
	HeartbeatInterval time.Duration
	// ReadLimit bounds the frames read (results of all-gathers grow with
	// the job). Default 256 MiB.
	ReadLimit int
	// Rand jitters the connect back-off; default a random source.
	Rand *rand.Rand
	// TLS, if set, is the job's client TLS configuration
	// (jobtls.Config.Client): the coordinator must present the job's
	// certificate, and is shown it. nil: plain TCP.
	TLS *tls.Config
	// Dial, if set, connects to Addr (from the rank's host, when hosts
	// are network namespaces: package netns); default a plain TCP dial.
	Dial DialFunc
}

// Client is a rank's connection to the coordinator: it implements
// group.Group (collectives through the coordinator) and the key–value
// service. Collectives must be called from one goroutine at a time, as
// group.Group says; key–value calls may run concurrently with them and with
// each other.
type Client struct {
	cfg  ClientConfig
	nc   net.Conn
	wmu  sync.Mutex // serializes writes
	bw   *bufio.Writer
	size int

	lastSent atomic.Int64 // unix nanoseconds of the last write

	mu      sync.Mutex
	seq     uint64                       // the last collective started
	results map[uint64]chan *wire.Result // pending collectives
	reqs    map[uint64]chan wire.Msg     // pending key–value requests
	nextReq uint64
	err     error         // set once the client failed or left
	dead    chan struct{} // closed with err
	left    bool

	done chan struct{} // reader and heartbeat goroutines ended
	wg   sync.WaitGroup
}

var _ group.Group = (*Client)(nil)

// Dial connects to the coordinator with jittered exponential back-off,
// joins, and waits until every rank of the job has joined (Welcome). A
// refusal is final and wraps ErrRefused.
func Dial(ctx context.Context, cfg ClientConfig) (*Client, error) {
	if cfg.HeartbeatInterval <= 0 {
		cfg.HeartbeatInterval = 2 * time.Second
	}
	if cfg.ReadLimit <= 0 {
		cfg.ReadLimit = 256 << 20
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	if cfg.Size < 1 || cfg.Rank < 0 || cfg.Rank >= cfg.Size {
		return nil, fmt.Errorf("coordnet: rank %d of %d: the rank must lie in [0, size)", cfg.Rank, cfg.Size)
	}
	nc, err := dialBackoff(ctx, cfg.Dial, cfg.Addr, cfg.Rand)
	if err != nil {
		return nil, fmt.Errorf("coordnet: rank %d: %w", cfg.Rank, err)
	}
	tcp.NoDelay(nc)
	if cfg.TLS != nil {
		nc = tls.Client(nc, cfg.TLS) // handshakes at the Hello's write
	}
	c := &Client{
		cfg: cfg, nc: nc, bw: bufio.NewWriterSize(nc, connBuffer), size: cfg.Size,
		results: make(map[uint64]chan *wire.Result),
		reqs:    make(map[uint64]chan wire.Msg),
		dead:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	if err := c.write(&wire.Hello{Token: cfg.Token, Incarnation: cfg.Incarnation, Node: cfg.Node,
		Ranks: []int32{int32(cfg.Rank)}}); err != nil {
		nc.Close()
		return nil, fmt.Errorf("coordnet: rank %d: hello: %w", cfg.Rank, err)
	}
	br := bufio.NewReaderSize(nc, connBuffer)
	// The Welcome comes when every rank has joined: however long that
	// takes, ctx bounds it (and the coordinator's join timeout). The rank
	// heartbeats meanwhile, as the protocol asks, and skips Heartbeats:
	// coordinators before the join timeout sent them to waiting ranks.
	c.wg.Add(1)
	go c.heartbeat()
	stop := context.AfterFunc(ctx, func() { nc.SetReadDeadline(time.Now()) })
	var msg wire.Msg
	for {
		msg, err = wire.ReadFrame(br, cfg.ReadLimit)
		if _, ok := msg.(*wire.Heartbeat); !ok || err != nil {
			break
		}
	}
	stopped := stop()
	// failDial stops the heartbeats and closes the connection.
	failDial := func(err error) (*Client, error) {
		c.fail(err)
		c.wg.Wait()
		return nil, err
	}
	if err != nil {
		switch {
		case !stopped:
			err = ctx.Err()
		case errors.Is(err, io.EOF):
			err = fmt.Errorf("%s closed the connection without a reason (%w)", cfg.Addr, err)
		default:
			err = fmt.Errorf("connection to %s: %w", cfg.Addr, err)
		}
		return failDial(fmt.Errorf("coordnet: rank %d: waiting to be welcomed: %w", cfg.Rank, err))
	}
	switch m := msg.(type) {
	case *wire.Welcome:
		if int(m.Size) != cfg.Size {
			return failDial(fmt.Errorf("coordnet: rank %d: the coordinator runs a job of %d ranks, not %d", cfg.Rank, m.Size, cfg.Size))
		}
	case *wire.Refused:
		return failDial(fmt.Errorf("coordnet: rank %d: %w: %s", cfg.Rank, ErrRefused, m.Reason))
	case *wire.Abort:
		return failDial(fmt.Errorf("coordnet: rank %d: %w: %s", cfg.Rank, ErrAborted, m.Reason))
	default:
		return failDial(fmt.Errorf("coordnet: rank %d: expected Welcome, got %s", cfg.Rank, msg))
	}
	c.wg.Add(1)
	go c.read(br)
	go func() { c.wg.Wait(); close(c.done) }()
	return c, nil
}

func (c *Client) Rank() int { return c.cfg.Rank }
func (c *Client) Size() int { return c.size }

// Err is why the client stopped working (nil while it works).
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Dead is closed when the client stops working: the job aborted, the
// coordinator was lost, or the client left.
func (c *Client) Dead() <-chan struct{} { return c.dead }

func (c *Client) write(m wire.Msg) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := wire.WriteFrame(c.bw, m); err != nil {
		return err
	}
	c.lastSent.Store(time.Now().UnixNano())
	return c.bw.Flush()
}

// fail stops the client with err; the first reason stays.
func (c *Client) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return
	}
	c.err = err
	close(c.dead)
	c.nc.Close()
}

func (c *Client) read(br *bufio.Reader) {
	defer c.wg.Done()
	for {
		msg, err := wire.ReadFrame(br, c.cfg.ReadLimit)
		if err != nil {
			c.mu.Lock()
			left := c.left
			c.mu.Unlock()
			if left {
				c.fail(errLeft)
			} else if errors.Is(err, io.EOF) {
				c.fail(fmt.Errorf("%w: the coordinator closed the connection", ErrAborted))
			} else {
				c.fail(fmt.Errorf("%w: lost the coordinator: %v", ErrAborted, err))
			}
			return
		}
		switch m := msg.(type) {
		case *wire.Result:
			c.mu.Lock()
			ch := c.results[m.Seq]
			delete(c.results, m.Seq)
			c.mu.Unlock()
			if ch == nil {
				c.fail(fmt.Errorf("%w: result of collective %d, which is not pending", ErrAborted, m.Seq))
				return
			}
			ch <- m
		case *wire.Value:
			c.answer(m.Req, m)
		case *wire.Ack:
			c.answer(m.Req, m)
		case *wire.Heartbeat:
		case *wire.Abort:
			c.fail(fmt.Errorf("%w: %s", ErrAborted, m.Reason))
			return
		case *wire.Error:
			c.fail(fmt.Errorf("%w: the coordinator reports a protocol error: %s", ErrAborted, m.Reason))
			return
		default:
			c.fail(fmt.Errorf("%w: unexpected %s from the coordinator", ErrAborted, msg))
			return
		}
	}
}

var errLeft = errors.New("coordnet: the rank left the job")

func (c *Client) answer(req uint64, m wire.Msg) {
	c.mu.Lock()
	ch := c.reqs[req]
	delete(c.reqs, req)
	c.mu.Unlock()
	if ch != nil {
		ch <- m
	}
}

// heartbeat says the rank is alive whenever it has said nothing for an
// interval. It runs on its own goroutine, so a rank busy computing still
// heartbeats; one stopped (SIGSTOP, a hung machine) does not.
func (c *Client) heartbeat() {
	defer c.wg.Done()
	t := time.NewTicker(c.cfg.HeartbeatInterval / 2)
	defer t.Stop()
	hb := &wire.Heartbeat{}
	for {
		select {
		case <-t.C:
			if time.Since(time.Unix(0, c.lastSent.Load())) >= c.cfg.HeartbeatInterval/2 {
				if err := c.write(hb); err != nil {
					return // the reader reports the failure
				}
			}
		case <-c.dead:
			return
		}
	}
}

// collective runs one collective of kind with this rank's data.
func (c *Client) collective(ctx context.Context, kind wire.Kind, data []byte) (*wire.Result, error) {
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return nil, err
	}
	c.seq++
	seq := c.seq
	ch := make(chan *wire.Result, 1)
	c.results[seq] = ch
	c.mu.Unlock()
	if data == nil {
		data = []byte{}
	}
	err := c.write(&wire.Collective{Seq: seq, Kind: kind, Contribs: []wire.Contrib{{Rank: int32(c.cfg.Rank), Data: data}}})
	if err != nil {
		c.fail(fmt.Errorf("%w: %v", ErrAborted, err))
		return nil, c.Err()
	}
	select {
	case r := <-ch:
		return r, nil
	case <-c.dead:
		return nil, c.Err()
	case <-ctx.Done():
		// A collective cannot be withdrawn: the rank gives up on the job,
		// as group.Group requires.
		c.fail(fmt.Errorf("%w: collective %d: %v", ErrAborted, seq, ctx.Err()))
		c.write(&wire.Fail{Ranks: []int32{int32(c.cfg.Rank)}, Reason: "gave up waiting: " + ctx.Err().Error()})
		return nil, c.Err()
	}
}

// AllGather implements group.Group.
func (c *Client) AllGather(ctx context.Context, data []byte) ([][]byte, error) {
	r, err := c.collective(ctx, wire.AllGather, data)
	if err != nil {
		return nil, err
	}
	if len(r.Data) != c.size {
		c.fail(fmt.Errorf("%w: all-gather result of %d entries for %d ranks", ErrAborted, len(r.Data), c.size))
		return nil, c.Err()
	}
	return r.Data, nil
}

// Barrier waits until every rank reached it.
func (c *Client) Barrier(ctx context.Context) error {
	_, err := c.collective(ctx, wire.Barrier, nil)
	return err
}

// Decide contributes data to a decide collective and returns the answer
// the coordinator's policy computed from every rank's contribution.
func (c *Client) Decide(ctx context.Context, data []byte) ([]byte, error) {
	r, err := c.collective(ctx, wire.Decide, data)
	if err != nil {
		return nil, err
	}
	if len(r.Data) != 1 {
		c.fail(fmt.Errorf("%w: decide result of %d entries", ErrAborted, len(r.Data)))
		return nil, c.Err()
	}
	return r.Data[0], nil
}

// Commit votes for checkpoint name (ok: this rank committed it) and returns
// whether every rank did; the coordinator records it as the job's newest.
func (c *Client) Commit(ctx context.Context, name string, ok bool) (bool, error) {
	r, err := c.collective(ctx, wire.Commit, wire.AppendVote(nil, name, ok))
	if err != nil {
		return false, err
	}
	if len(r.Data) != 1 {
		c.fail(fmt.Errorf("%w: commit result of %d entries", ErrAborted, len(r.Data)))
		return false, c.Err()
	}
	n, all, err := wire.ParseVote(r.Data[0])
	return err == nil && all && n == name, nil
}

// request sends a key–value request and waits for its answer.
func (c *Client) request(ctx context.Context, mk func(req uint64) wire.Msg) (wire.Msg, error) {
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return nil, err
	}
	c.nextReq++
	req := c.nextReq
	ch := make(chan wire.Msg, 1)
	c.reqs[req] = ch
	c.mu.Unlock()
	if err := c.write(mk(req)); err != nil {
		c.fail(fmt.Errorf("%w: %v", ErrAborted, err))
		return nil, c.Err()
	}
	select {
	case m := <-ch:
		return m, nil
	case <-c.dead:
		return nil, c.Err()
	case <-ctx.Done():
		c.mu.Lock()
		delete(c.reqs, req)
		c.mu.Unlock()
		return nil, ctx.Err()
	}
}

// Publish stores value under key in the coordinator's key–value service.
func (c *Client) Publish(ctx context.Context, key string, value []byte) error {
	_, err := c.request(ctx, func(req uint64) wire.Msg { return &wire.Publish{Req: req, Key: key, Value: value} })
	return err
}

// Lookup returns key's value; with wait it waits until the key is
// published (or ctx is done).
func (c *Client) Lookup(ctx context.Context, key string, wait bool) ([]byte, bool, error) {
	m, err := c.request(ctx, func(req uint64) wire.Msg { return &wire.Lookup{Req: req, Key: key, Wait: wait} })
	if err != nil {
		return nil, false, err
	}
	v, ok := m.(*wire.Value)
	if !ok {
		return nil, false, fmt.Errorf("coordnet: lookup %q answered by %s", key, m)
	}
	return v.Value, v.Found, nil
}

// Leave ends the rank's part in the job cleanly and closes the connection.
func (c *Client) Leave() error {
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return err
	}
	c.left = true
	c.mu.Unlock()
	err := c.write(&wire.Leave{Ranks: []int32{int32(c.cfg.Rank)}})
	// Half-close: the coordinator reads the Leave, then the end of stream.
	if tc, ok := c.nc.(*net.TCPConn); ok && err == nil {
		tc.CloseWrite()
		select {
		case <-c.dead:
		case <-time.After(5 * time.Second):
		}
	}
	c.fail(errLeft)
	<-c.done
	return err
}

// Close drops the connection without leaving: the coordinator sees the
// rank fail.
func (c *Client) Close() error {
	c.fail(fmt.Errorf("%w: closed", ErrAborted))
	<-c.done
	return nil
}
