// Package tcp holds what the job's TCP servers and clients share: the
// coordinator's driver (internal/coordnet), the staging service
// (internal/stage) and the peer transport (internal/peer). That is an
// accept loop that outlives transient errors, and the doubling back-off
// of its retries and of clients that dial again.
package tcp

import (
	"errors"
	"net"
	"time"
)

// Backoff is a delay between retries that doubles from First up to Max.
// The zero value of its state starts at First.
type Backoff struct {
	First, Max time.Duration
	next       time.Duration
}

// Next returns the delay before the next retry and doubles the one after.
// With jitter (rand.Int64N or a seeded source's), the delay d is drawn
// anywhere in [d/2, d], so that the clients of a job that lost their
// server at once do not retry in lockstep (002 §III-C).
func (b *Backoff) Next(jitter func(n int64) int64) time.Duration {
	if b.next == 0 {
		b.next = b.First
	}
	d := b.next
	b.next = min(2*b.next, b.Max)
	if jitter != nil {
		d = d/2 + time.Duration(jitter(int64(d/2)+1))
	}
	return d
}

// Reset makes the next delay First again, after a success.
func (b *Backoff) Reset() { b.next = 0 }

// Sleep waits d, or until done is closed: false then.
func Sleep(done <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-done:
		return false
	}
}

// Accept accepts connections on ln and hands each to serve, which must
// not block (it starts the connection's goroutine, or closes it), until
// done is closed or ln is. A transient error (out of file descriptors, a
// connection aborted before it was accepted) is reported to logf, if not
// nil, and retried after a back-off from 5ms doubling to 1s, as net/http
// does. Accept returns nil once done is closed, else the error of the
// listener closed under it.
func Accept(ln net.Listener, done <-chan struct{}, logf func(err error, retry time.Duration), serve func(net.Conn)) error {
	b := Backoff{First: 5 * time.Millisecond, Max: time.Second}
	for {
		nc, err := ln.Accept()
		if err != nil {
			select {
			case <-done:
				return nil
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return err
			}
			d := b.Next(nil)
			if logf != nil {
				logf(err, d)
			}
			if !Sleep(done, d) {
				return nil
			}
			continue
		}
		b.Reset()
		serve(nc)
	}
}

// NoDelay turns Nagle's algorithm off on a TCP connection: every message
// of the job's protocols is a turn someone waits for.
func NoDelay(nc net.Conn) {
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
}
