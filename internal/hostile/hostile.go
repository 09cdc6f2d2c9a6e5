// Package hostile is a hostile client of the job's listeners — the
// coordinator, a node's relay, a rank's peer node, a staging server — for
// tests and `ckpt torture`. Each Attack plays one kind of
// misbehaviour against a Target: a wrong token, a replayed frame, frames
// that are oversized, malformed, truncated or random, and connections that
// say nothing or trickle bytes (slowloris). An attack holds when the
// listener drops the attacker within a bound: at once (Target.Prompt) for
// what it can judge from what it received, and within its timeout for a
// silent client (Target.Silent) for the others. Whether the listener still
// serves the job afterwards, and whether it leaked goroutines, is the
// caller's to check: only it knows a legitimate client.
//
// Every listener frames with a 4-byte little-endian length first (the
// coordinator's and the staging protocol through internal/framing, the
// peer handshake its own way); the attacks rely on that and on
// Target.Hello for the rest, so they know no protocol of their own.
package hostile

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"time"
)

// Target is a listener under attack and what the attacks need to know of
// its protocol.
type Target struct {
	// Name names the listener in verdicts ("coordinator", "stage0", ...).
	Name string
	Addr string
	// Hello returns a well-formed first frame, length prefix included,
	// that carries token and is otherwise one the listener would accept.
	Hello func(token string) []byte
	// Replays are valid frames captured from legitimate clients that the
	// listener must not accept again: a Hello of the job's previous
	// incarnation, a Hello of a rank that has joined already. Each is
	// sent on a connection of its own.
	Replays [][]byte
	// Prompt bounds how long the listener may take to drop a client whose
	// frames it can judge (wrong token, too large, malformed, cut short).
	// Default 5s.
	Prompt time.Duration
	// Silent is the listener's timeout for a client that completes no
	// frame (its Hello or heartbeat timeout); a silent or trickling client
	// must be dropped within Silent plus Prompt.
	Silent time.Duration
	// Dial, if set, opens the attacks' connections (default a TCP dial):
	// a caller that counts them, or reaches the listener from elsewhere
	// (another network namespace), dials its own way.
	Dial func(ctx context.Context, addr string) (net.Conn, error)
}

// Attack is one kind of misbehaviour. Run plays it against t and returns
// nil if the listener held: it dropped every connection of the attack
// within the bound. ctx bounds the attack as a whole.
type Attack struct {
	Name string
	Run  func(ctx context.Context, t Target) error
}

// Verdict is the outcome of one attack on one target.
type Verdict struct {
	Target, Attack string
	Took           time.Duration // from the attack's start to its end
	Err            error         // nil: the listener held
}

func (v Verdict) String() string {
	if v.Err != nil {
		return fmt.Sprintf("%s/%s: FAILED after %v: %v", v.Target, v.Attack, v.Took.Round(time.Millisecond), v.Err)
	}
	return fmt.Sprintf("%s/%s: held (%v)", v.Target, v.Attack, v.Took.Round(time.Millisecond))
}

// Run plays attacks against t one after the other.
func Run(ctx context.Context, t Target, attacks []Attack) []Verdict {
	vs := make([]Verdict, 0, len(attacks))
	for _, a := range attacks {
		start := time.Now()
		err := a.Run(ctx, t)
		vs = append(vs, Verdict{Target: t.Name, Attack: a.Name, Took: time.Since(start), Err: err})
	}
	return vs
}

// RunAtOnce plays attacks against t all at once, each on connections of
// its own, and returns their verdicts in attacks' order: the suite lasts
// as long as its longest attack (a silent one: Silent plus Prompt), not
// as long as all of them, for a caller that attacks a job while it runs.
func RunAtOnce(ctx context.Context, t Target, attacks []Attack) []Verdict {
	vs := make([]Verdict, len(attacks))
	var wg sync.WaitGroup
	for i, a := range attacks {
		wg.Go(func() { vs[i] = Run(ctx, t, []Attack{a})[0] })
	}
	wg.Wait()
	return vs
}

// Slowloris is the number of connections the slowloris attack holds open
// at once.
const Slowloris = 16

// wrongToken is the token the attacks present: no job's.
const wrongToken = "not-the-job-token"

// Attacks returns every attack, in a fixed order.
func Attacks() []Attack {
	return []Attack{
		{"wrong-token", func(ctx context.Context, t Target) error {
			return sendExpectDrop(ctx, t, t.Hello(wrongToken), false, t.prompt())
		}},
		{"replay", replay},
		{"oversized-length", func(ctx context.Context, t Target) error {
			// The largest length there is, and a byte of what follows.
			return sendExpectDrop(ctx, t, []byte{0xff, 0xff, 0xff, 0xff, 1}, false, t.prompt())
		}},
		{"larger-than-hello", func(ctx context.Context, t Target) error {
			// A Hello whose length promises more than any Hello and less
			// than what the listener reads after one, never sent whole: a
			// listener that waits for it before judging it holds a large
			// buffer for a client that has shown nothing.
			h := t.Hello(wrongToken)
			binary.LittleEndian.PutUint32(h, 1<<20-64)
			return sendExpectDrop(ctx, t, h, false, t.prompt())
		}},
		{"malformed", func(ctx context.Context, t Target) error {
			// A frame of the length it says, whose body decodes as nothing.
			f := binary.LittleEndian.AppendUint32(nil, 8)
			f = append(f, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)
			return sendExpectDrop(ctx, t, f, false, t.prompt())
		}},
		{"truncated", func(ctx context.Context, t Target) error {
			h := t.Hello(wrongToken)
			return sendExpectDrop(ctx, t, h[:len(h)/2], true, t.prompt())
		}},
		{"garbage", func(ctx context.Context, t Target) error {
			b := make([]byte, 4096)
			r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 18))
			for i := range b {
				b[i] = byte(r.Uint32())
			}
			return sendExpectDrop(ctx, t, b, true, t.prompt())
		}},
		{"silent", func(ctx context.Context, t Target) error {
			return sendExpectDrop(ctx, t, nil, false, t.Silent+t.prompt())
		}},
		{"slowloris", slowloris},
	}
}

func (t Target) prompt() time.Duration {
	if t.Prompt <= 0 {
		return 5 * time.Second
	}
	return t.Prompt
}

func replay(ctx context.Context, t Target) error {
	if len(t.Replays) == 0 {
		return errors.New("no frame to replay: the target names none")
	}
	for i, f := range t.Replays {
		if err := sendExpectDrop(ctx, t, f, false, t.prompt()); err != nil {
			return fmt.Errorf("replay %d: %w", i, err)
		}
	}
	return nil
}

// sendExpectDrop dials t, sends b (then half-closes if closeWrite) and
// waits, within bound, for the listener to close the connection; what it
// answers first does not matter.
func sendExpectDrop(ctx context.Context, t Target, b []byte, closeWrite bool, bound time.Duration) error {
	nc, err := t.dial(ctx)
	if err != nil {
		return err
	}
	defer nc.Close()
	start := time.Now()
	if len(b) > 0 {
		// The listener may drop us before it has read all of b: a failed
		// write is a drop too, which the read below sees.
		nc.SetWriteDeadline(start.Add(bound))
		nc.Write(b)
	}
	if closeWrite {
		if tc, ok := nc.(*net.TCPConn); ok {
			tc.CloseWrite()
		}
	}
	return expectDrop(ctx, nc, start.Add(bound))
}

// expectDrop reads nc until the listener closes it (EOF or a reset), and
// fails if it is still open at deadline.
func expectDrop(ctx context.Context, nc net.Conn, deadline time.Time) error {
	stop := context.AfterFunc(ctx, func() { nc.SetReadDeadline(time.Now()) })
	defer stop()
	nc.SetReadDeadline(deadline)
	start := time.Now()
	_, err := io.Copy(io.Discard, nc)
	var ne net.Error
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.As(err, &ne) && ne.Timeout():
		return fmt.Errorf("connection still open after %v", time.Since(start).Round(time.Millisecond))
	}
	return nil // EOF, or reset by the listener
}

// slowloris opens Slowloris connections that trickle the bytes of a
// Hello, one every 100ms, never completing it; while they are open, a
// wrong-token client must still be answered promptly (the listener goes
// on accepting), and every trickler must be dropped within the
// listener's silent timeout.
func slowloris(ctx context.Context, t Target) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	hello := t.Hello(wrongToken)
	conns := make([]net.Conn, 0, Slowloris)
	defer func() {
		for _, nc := range conns {
			nc.Close()
		}
	}()
	for range Slowloris {
		nc, err := t.dial(ctx)
		if err != nil {
			return err
		}
		conns = append(conns, nc)
	}
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, len(conns))
	for i, nc := range conns {
		wg.Add(2)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for _, b := range hello[:len(hello)-1] {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				if _, err := nc.Write([]byte{b}); err != nil {
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			errs[i] = expectDrop(ctx, nc, start.Add(t.Silent+t.prompt()))
		}()
	}
	probe := sendExpectDrop(ctx, t, t.Hello(wrongToken), false, t.prompt())
	wg.Wait()
	if probe != nil {
		return fmt.Errorf("a wrong token beside %d slow connections: %w", Slowloris, probe)
	}
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("slow connection %d: %w", i, err)
		}
	}
	return nil
}

func (t Target) dial(ctx context.Context) (net.Conn, error) {
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	dial := t.Dial
	if dial == nil {
		var d net.Dialer
		dial = func(ctx context.Context, addr string) (net.Conn, error) { return d.DialContext(ctx, "tcp", addr) }
	}
	nc, err := dial(dctx, t.Addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", t.Addr, err)
	}
	return nc, nil
}
