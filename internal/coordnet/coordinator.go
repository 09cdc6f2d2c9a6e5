package coordnet

import (
	"errors"
	"net"
	"sync"

	"github.com/ckpt/ckpt/internal/coord"
)

// Coordinator is the coordinator of one incarnation of a job on a TCP
// listener, as the launcher uses it: it says when the job ends and how,
// and reads what ranks published.
type Coordinator struct {
	srv  *Server
	m    *coord.Machine
	done chan struct{}
	once sync.Once
	err  error
	// onNotice is the caller's notice hook, called in the loop.
	onNotice func(coord.Notice)
}

// StartCoordinator listens on addr ("127.0.0.1:0" for any port) and runs
// the coordinator configured by cfg.
func StartCoordinator(addr string, cfg coord.Config, opts Options) (*Coordinator, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return StartCoordinatorOn(ln, cfg, opts)
}

// StartCoordinatorOn runs the coordinator configured by cfg on ln (a
// listener made where the caller wants it: on a host of its own, package
// netns). It closes ln if cfg is refused.
func StartCoordinatorOn(ln net.Listener, cfg coord.Config, opts Options) (*Coordinator, error) {
	m, err := coord.New(cfg)
	if err != nil {
		ln.Close()
		return nil, err
	}
	c := &Coordinator{m: m, done: make(chan struct{}), onNotice: opts.OnNotice}
	opts.OnNotice = c.notice
	c.srv = Serve(ln, m, opts)
	return c, nil
}

func (c *Coordinator) notice(n coord.Notice) {
	switch n.Kind {
	case coord.NoticeFinished:
		c.end(nil)
	case coord.NoticeAborted:
		c.end(errors.New(n.Reason))
	}
	if c.onNotice != nil {
		c.onNotice(n)
	}
}

func (c *Coordinator) end(err error) {
	c.once.Do(func() {
		c.err = err
		close(c.done)
	})
}

// Addr is where ranks connect.
func (c *Coordinator) Addr() string { return c.srv.Addr() }

// Done is closed when every rank left or the job aborted.
func (c *Coordinator) Done() <-chan struct{} { return c.done }

// Err is nil if the job finished, else why it aborted; valid after Done.
func (c *Coordinator) Err() error {
	select {
	case <-c.done:
		return c.err
	default:
		return nil
	}
}

// Status reports the state machine's state.
func (c *Coordinator) Status() coord.Status {
	var st coord.Status
	c.srv.Do(func() { st = c.m.Status() })
	return st
}

// Value reads what a rank published under key.
func (c *Coordinator) Value(key string) ([]byte, bool) {
	var v []byte
	var ok bool
	c.srv.Do(func() { v, ok = c.m.Value(key) })
	return v, ok
}

// Do runs f in the coordinator's loop (for a Decide policy's state).
func (c *Coordinator) Do(f func()) bool { return c.srv.Do(f) }

// Close stops the coordinator; a job still running sees it vanish.
func (c *Coordinator) Close() error {
	c.end(errors.New("coordinator closed"))
	return c.srv.Close()
}
