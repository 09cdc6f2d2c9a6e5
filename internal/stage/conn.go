package stage

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// conn is the server's end of one staging client's connection.
type conn struct {
	s    *Server
	nc   net.Conn
	node string

	// out holds the frames to send, in order, for the connection's
	// writer goroutine: senders (some holding the server's lock) never
	// wait for the network.
	out  chan Msg
	done chan struct{} // closed when the connection is

	mu      sync.Mutex
	pulls   map[uint64]*pull
	discard map[uint64]bool // pulls given up whose Data may still come
	nextID  uint64
	err     error // set once closed
}

// sendQueue bounds the frames waiting to be sent on a connection: at most
// a status per flush and a pull per chunk in flight wait at once, so a
// client that lets this many pile up is not reading.
const sendQueue = 1024

func newConn(s *Server, nc net.Conn, node string) *conn {
	return &conn{s: s, nc: nc, node: node, out: make(chan Msg, sendQueue), done: make(chan struct{}),
		pulls: map[uint64]*pull{}, discard: map[uint64]bool{}}
}

// writeLoop sends the queued frames until the connection closes.
func (c *conn) writeLoop() {
	for {
		select {
		case m := <-c.out:
			c.nc.SetWriteDeadline(time.Now().Add(writeTimeout))
			if err := WriteMsg(c.nc, m); err != nil {
				c.close(err)
				return
			}
		case <-c.done:
			return
		}
	}
}

// pull is one chunk request in flight; its Data is read straight into buf.
type pull struct {
	id   uint64
	buf  []byte
	done chan error
}

// ClientError is a PullError: the client could not serve a chunk (its
// cache lost the file, say). The flush cannot complete from this node.
type ClientError struct{ Reason string }

func (e *ClientError) Error() string { return "the staging client: " + e.Reason }

const writeTimeout = 30 * time.Second

// send queues m. It never blocks: it fails if the connection is closed,
// and closes it if the client has let sendQueue frames pile up.
func (c *conn) send(m Msg) error {
	c.mu.Lock()
	closed, queued := c.err != nil, false
	if !closed {
		select {
		case c.out <- m:
			queued = true
		default:
		}
	}
	c.mu.Unlock()
	switch {
	case closed:
		return errDisconnected
	case !queued:
		c.close(fmt.Errorf("%d frames unsent: the client does not read", sendQueue))
		return errDisconnected
	}
	return nil
}

// pull sends a Pull whose answer lands in buf. A pull that could not be
// sent comes back with the error all the same (nil only if it was never
// registered): its buffer is freed as that of any pull given up (see
// Server.pullFile).
func (c *conn) pull(m *Pull, buf []byte) (*pull, error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return nil, errDisconnected
	}
	c.nextID++
	p := &pull{id: c.nextID, buf: buf, done: make(chan error, 1)}
	m.ID = p.id
	c.pulls[p.id] = p
	c.mu.Unlock()
	if err := c.send(m); err != nil {
		return p, errDisconnected
	}
	return p, nil
}

// forget gives up a pull; Data that still comes for it is skipped. It
// reports false if the pull was answered or taken by the reader already
// (whose answer then comes on p.done).
func (c *conn) forget(p *pull) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.pulls[p.id]; ok {
		delete(c.pulls, p.id)
		c.discard[p.id] = true
		return true
	}
	return false
}

// take removes pull id from the table for its answer: the pull, or skip if
// it was given up (its answer is read and dropped), or neither if the id
// was never sent or was answered already.
func (c *conn) take(id uint64) (p *pull, skip bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, skip = c.pulls[id], c.discard[id]
	delete(c.pulls, id)
	delete(c.discard, id)
	return p, skip
}

// read handles the client's frames until the connection ends.
func (c *conn) read(br *bufio.Reader) error {
	for {
		msg, err := ReadMsg(br)
		if err != nil {
			return err
		}
		switch m := msg.(type) {
		case *Announce:
			if err := c.s.announce(c, m); err != nil {
				return err
			}
		case *Data:
			p, skip := c.take(m.ID)
			switch {
			case skip:
				if _, err := io.CopyN(io.Discard, br, int64(m.Length)); err != nil {
					return err
				}
				continue
			case p == nil:
				return fmt.Errorf("%w: Data for pull %d, which was never sent or was answered already", ErrProtocol, m.ID)
			case m.Length != len(p.buf):
				p.done <- errDisconnected
				return fmt.Errorf("%w: Data of %d bytes for a pull of %d", ErrProtocol, m.Length, len(p.buf))
			}
			if _, err := io.ReadFull(br, p.buf); err != nil {
				p.done <- errDisconnected
				return err
			}
			p.done <- nil
		case *PullError:
			p, skip := c.take(m.ID)
			switch {
			case skip:
			case p == nil:
				return fmt.Errorf("%w: PullError for pull %d, which was never sent or was answered already", ErrProtocol, m.ID)
			default:
				p.done <- &ClientError{Reason: m.Reason}
			}
		default:
			return fmt.Errorf("%w: unexpected %s from a client", ErrProtocol, msg.Type())
		}
	}
}

// close ends the connection; pulls in flight fail as disconnected.
func (c *conn) close(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	if err == nil {
		err = io.EOF
	}
	c.err = err
	close(c.done)
	pulls := c.pulls
	c.pulls = map[uint64]*pull{}
	c.mu.Unlock()
	c.nc.Close()
	for _, p := range pulls {
		p.done <- errDisconnected
	}
}
