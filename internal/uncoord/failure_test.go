package uncoord

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"

	"github.com/ckpt/ckpt/internal/msglog"
	"github.com/ckpt/ckpt/internal/msglog/logstore"
	"github.com/ckpt/ckpt/internal/redundancy"
)

// The failures of issue 16's list that the tests of job_test.go do not
// make happen: a rank killed in the middle of an append to its log, and in
// the middle of its replay; a rank and its protector failing in a row;
// frames lost and reordered on the wire while a rank recovers.

var errKilled = errors.New("process killed (injected)")

// tearingLog is a rank's log at its protector, written by the rank's
// process: armed, the process dies in the middle of its next append, whose
// last frame is torn on disk (its first bytes written, not the rest).
// The dead process's handle appends nothing more.
type tearingLog struct {
	*logstore.File
	path string
	kill func()

	mu    sync.Mutex
	armed bool
	dead  bool
	torn  uint64 // the index of the torn record
}

func (l *tearingLog) arm() {
	l.mu.Lock()
	l.armed = true
	l.mu.Unlock()
}

func (l *tearingLog) tornIndex() (uint64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.torn, l.dead
}

func (l *tearingLog) Append(recs []msglog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.dead {
		return errKilled
	}
	if !l.armed {
		return l.File.Append(recs)
	}
	// The frames reach the file, and the process dies before the last
	// one is whole: cut it in its middle.
	if err := l.File.Append(recs); err != nil {
		return err
	}
	fi, err := os.Stat(l.path)
	if err != nil {
		return err
	}
	last := recs[len(recs)-1]
	frame := int64(32 + len(last.Data) + 8) // logstore.File: head, data, hash
	if err := os.Truncate(l.path, fi.Size()-frame/2); err != nil {
		return err
	}
	l.dead, l.torn = true, last.Index
	l.kill()
	return errKilled
}

// Truncate is refused once the process is dead.
func (l *tearingLog) Truncate(upTo uint64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.dead {
		return errKilled
	}
	return l.File.Truncate(upTo)
}

// A rank is killed in the middle of an append to its log: the record it
// was appending is torn on the protector's disk. Its restart finds the log
// cut back to the last whole frame: that record was never durable, so
// never delivered nor acknowledged, and its sender sends it again when the
// restarted rank says hello. The rank recovers alone, with the
// failure-free result.
func TestRankKilledMidLogWriteRecoversAlone(t *testing.T) {
	const victim = 4
	var (
		path    func(int) string
		logs    = map[int]*tearingLog{}
		reopens int
	)
	j := newJob(t, func(j *job, r, s int, w string, d *Rank) bool {
		if r == victim && s == 25 && w == midStep {
			j.mu.Lock()
			logs[victim].arm() // the next append is the one the failure interrupts
			j.mu.Unlock()
		}
		return false
	})
	path = fileLogs(t, j)
	open := j.newLog
	j.newLog = func(rank int) logstore.Store {
		l := open(rank)
		if rank != victim {
			return l
		}
		tl := &tearingLog{File: l.(*logstore.File), path: path(victim), kill: func() { j.killNow(victim) }}
		logs[victim] = tl
		return tl
	}
	j.afterKill = func(j *job, rank int) {
		torn, dead := logs[victim].tornIndex()
		if rank != victim || !dead {
			t.Errorf("rank %d killed, want rank %d mid-append", rank, victim)
			return
		}
		reopen(t, j, victim, path(victim), nil)
		reopens++
		j.mu.Lock()
		defer j.mu.Unlock()
		if _, last, err := j.logs[victim].Bounds(); err != nil || last != torn-1 {
			t.Errorf("the reopened log ends at record %d (%v), want %d: the torn record %d dropped, the whole ones before it kept", last, err, torn-1, torn)
		}
	}
	same(t, j.run(testCtx(t)), sequential())
	if reopens != 1 || j.whole != 0 || j.alone != 1 {
		t.Fatalf("%d kills mid-append, %d whole-job restarts (%v), %d recovered alone; want 1, 0, 1", reopens, j.whole, j.cannot, j.alone)
	}
	var resent uint64
	for r, st := range j.stats {
		if r != victim {
			resent += st.Resent
		}
	}
	if resent == 0 {
		t.Error("no peer sent anything again: the torn record's message was not lost")
	}
}

// replayFailingLog fails the first replay read from it after n records:
// the rank's process killed in the middle of its replay (kill), or its
// protector lost with the log then (kill nil: the read fails).
type replayFailingLog struct {
	logstore.Store
	n    int
	kill func()

	mu    sync.Mutex
	fired bool
}

var errProtectorLost = errors.New("protector lost (injected)")

func (l *replayFailingLog) ReadAfter(after uint64, fn func(msglog.Record) error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fired {
		return l.Store.ReadAfter(after, fn)
	}
	given := 0
	return l.Store.ReadAfter(after, func(rec msglog.Record) error {
		if given == l.n {
			l.fired = true
			if l.kill == nil {
				return errProtectorLost
			}
			l.kill()
			return errKilled
		}
		given++
		return fn(rec)
	})
}

func (l *replayFailingLog) hasFired() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fired
}

// A rank killed in the middle of its replay: its next incarnation replays
// again from the same checkpoint, the same records in the same order, and
// recovers alone.
func TestRankKilledMidReplayRecoversAlone(t *testing.T) {
	const victim = 4 // checkpoints every 7 steps: at 21, fails at 25
	var rl *replayFailingLog
	j := newJob(t, crashOnce(victim, 25, func(j *job, d *Rank) {
		j.mu.Lock()
		defer j.mu.Unlock()
		rl = &replayFailingLog{Store: j.logs[victim], n: 2, kill: func() { j.killNow(victim) }}
		j.logs[victim] = rl
	}))
	same(t, j.run(testCtx(t)), sequential())
	if rl == nil || !rl.hasFired() {
		t.Fatal("the victim was never killed mid-replay: its log held fewer than 3 records after its checkpoint")
	}
	if j.whole != 0 || j.alone != 1 || j.starts[victim] != 3 {
		t.Fatalf("%d whole-job restarts (%v), %d recovered alone, victim started %d times; want 0, 1, 3", j.whole, j.cannot, j.alone, j.starts[victim])
	}
	for r, n := range j.starts {
		if r != victim && n != 1 {
			t.Errorf("rank %d started %d times: only the failed rank may roll back", r, n)
		}
	}
}

// Two failures in a row in one protection pair: the victim fails, then
// its protector (here the next rank, as ProtectorOf picks on a job whose
// ranks each have a node). A protector's process that fails leaves the
// log on its node: both recover alone. A protector lost with the log,
// before the victim restarts or while it replays, is beyond what the
// pair tolerates: the victim cannot recover alone, and the job falls back
// to a whole-job restart — never a wrong byte: the result is the
// failure-free one.
func TestRankAndItsProtectorFailInARow(t *testing.T) {
	const victim, protector = 4, 5
	for _, tc := range []struct {
		name string
		// second makes the protector's failure happen, as the victim's
		// driver is closed.
		second       func(j *job)
		alone, whole int
		reason       error
	}{
		{"protector's process killed, its node lives", func(j *job) {
			j.killNow(protector)
		}, 2, 0, nil},
		{"protector lost with the log before the restart", func(j *job) {
			j.mu.Lock()
			j.logs[victim] = logstore.NewMem() // what a new protector finds
			j.mu.Unlock()
			j.killNow(protector)
		}, -1, 1, msglog.ErrAckedLost},
		{"protector lost with the log during the replay", func(j *job) {
			j.mu.Lock()
			j.logs[victim] = &replayFailingLog{Store: j.logs[victim], n: 1}
			j.mu.Unlock()
			j.killNow(protector)
		}, -1, 1, errProtectorLost},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fired := false
			j := newJob(t, crashOnce(victim, 25, func(j *job, d *Rank) {
				tc.second(j)
				fired = true
			}))
			same(t, j.run(testCtx(t)), sequential())
			if !fired {
				t.Fatal("the victim never failed")
			}
			if j.whole != tc.whole || tc.alone >= 0 && j.alone != tc.alone {
				t.Fatalf("%d whole-job restarts (%v), %d recovered alone; want %d and %d", j.whole, j.cannot, j.alone, tc.whole, tc.alone)
			}
			if tc.reason == nil {
				for r, n := range j.starts {
					if want := 1 + boolInt(r == victim || r == protector); n != want {
						t.Errorf("rank %d started %d times, want %d", r, n, want)
					}
				}
				return
			}
			found := false
			for _, err := range j.cannot {
				found = found || errors.Is(err, tc.reason)
			}
			if !found || !allCannotServe(j.cannot) {
				t.Errorf("fallback's reasons: %v, want one wrapping %v", j.cannot, tc.reason)
			}
		})
	}
}

func allCannotServe(errs []error) bool {
	for _, err := range errs {
		if !errors.Is(err, ErrCannotServe) {
			return false
		}
	}
	return len(errs) > 0
}

// staleNet models what a TCP transport does to frames in flight when a
// rank fails (peer.Node's contract: a Send made before a peer's failure
// has reached this node may succeed and be lost; the next one fails): each
// peer's connection to the failed rank goes on taking frames after the
// rank's new incarnation started — through its replay and past its hello,
// up to and including the peer's reply to that hello — and then fails
// once, after which the peer reaches the new incarnation. With delay, the
// frames the stale connection took are not lost but arrive after the
// first frame sent on the new connection, in reverse order; and the
// first data frames a restarted rank sends on each channel are swapped by
// pairs, each arriving after the next one: reordered on the wire.
type staleNet struct {
	*MemNet
	delay bool

	mu     sync.Mutex
	stale  map[[2]int]*staleConn // from, to
	lost   int                   // frames the stale connections took (lost or delayed)
	kinds  map[kind]int
	killed map[int]bool
	swaps  map[[2]int]int // data frames of a restarted rank swapped, per channel
}

type staleConn struct {
	replied bool     // the peer's reply went into it: the next send fails
	held    [][]byte // delay: the frames it took
}

func newStaleNet(delay bool) *staleNet {
	return &staleNet{MemNet: NewMemNet(), delay: delay, stale: map[[2]int]*staleConn{}, kinds: map[kind]int{},
		killed: map[int]bool{}, swaps: map[[2]int]int{}}
}

func (n *staleNet) endpoint(rank int) (Net, error) {
	n.mu.Lock()
	reborn := n.killed[rank]
	n.mu.Unlock()
	return &staleEndpoint{n: n, from: rank, reborn: reborn, held: map[int][]byte{}, MemEndpoint: n.Endpoint(rank)}, nil
}

func (n *staleNet) kill(rank int) {
	n.mu.Lock()
	n.killed[rank] = true
	for p := range gridW * gridH {
		if p != rank {
			n.stale[[2]int{p, rank}] = &staleConn{}
		}
	}
	n.mu.Unlock()
	n.Kill(rank)
}

type staleEndpoint struct {
	*MemEndpoint
	n      *staleNet
	from   int
	reborn bool           // a restarted incarnation
	held   map[int][]byte // per receiver, a data frame held to be swapped
}

// swapsPerChannel is how many pairs of a restarted rank's first data
// frames on a channel are swapped: few enough that every frame held is
// released by a later one (the application sends on every channel at
// every step).
const swapsPerChannel = 3

var errStale = fmt.Errorf("connection to a failed rank: %w", redundancy.ErrPeerClosed)

func (e *staleEndpoint) Send(ctx context.Context, to int, tag uint64, msg []byte) error {
	n := e.n
	n.mu.Lock()
	c := n.stale[[2]int{e.from, to}]
	k := [2]int{e.from, to}
	switch {
	case c == nil && n.delay && e.reborn && kind(msg[0]) == kData && n.swaps[k] < swapsPerChannel:
		prev := e.held[to]
		if prev == nil {
			e.held[to] = msg // sent after the next data frame
			n.mu.Unlock()
			return nil
		}
		delete(e.held, to)
		n.swaps[k]++
		n.mu.Unlock()
		if err := e.MemEndpoint.Send(ctx, to, tag, msg); err != nil {
			return err
		}
		return e.MemEndpoint.Send(ctx, to, tag, prev)
	case c == nil:
		n.mu.Unlock()
		return e.MemEndpoint.Send(ctx, to, tag, msg)
	case c.replied:
		// The failure has reached this node: reported once.
		delete(n.stale, [2]int{e.from, to})
		n.mu.Unlock()
		if !n.delay {
			return errStale
		}
		// The frames held arrive behind the next one, last first.
		if err := e.MemEndpoint.Send(ctx, to, tag, msg); err != nil {
			return err
		}
		for _, m := range slices.Backward(c.held) {
			if err := e.MemEndpoint.Send(ctx, to, tag, m); err != nil {
				return err
			}
		}
		return nil
	}
	n.lost++
	n.kinds[kind(msg[0])]++
	c.replied = kind(msg[0]) == kReply
	if n.delay {
		c.held = append(c.held, msg)
	}
	n.mu.Unlock()
	return nil // taken by the stale connection
}

// Frames lost, or delayed and reordered, on the connections to a failed
// rank while it recovers — its peers' replies to its hello among them —
// change nothing: the restarted rank says hello again to a peer whose
// reply does not come, the peer sends again what it lost, and the rank
// recovers alone with the failure-free result.
func TestFramesLostOrReorderedOnTheWireDuringRecovery(t *testing.T) {
	const victim = 4
	for _, delay := range []bool{false, true} {
		t.Run(map[bool]string{false: "lost", true: "reordered"}[delay], func(t *testing.T) {
			j := newJob(t, crashOnce(victim, 25, nil))
			var sn *staleNet
			j.newNet = func(*testing.T) testNet {
				sn = newStaleNet(delay)
				return sn
			}
			same(t, j.run(testCtx(t)), sequential())
			if j.whole != 0 || j.alone != 1 {
				t.Fatalf("%d whole-job restarts (%v), %d recovered alone; want 0 and 1", j.whole, j.cannot, j.alone)
			}
			sn.mu.Lock()
			defer sn.mu.Unlock()
			// Every peer replied to the victim's hello into its stale
			// connection.
			if sn.kinds[kReply] != j.n-1 || len(sn.stale) != 0 {
				t.Errorf("the stale connections took %d frames (%v), %d of them replies, and %d never failed; want %d replies, none left", sn.lost, sn.kinds, sn.kinds[kReply], len(sn.stale), j.n-1)
			}
			if st := j.stats[victim]; st.Replayed == 0 || st.Skipped == 0 {
				t.Errorf("victim replayed %d and skipped %d re-sends, want some of each", st.Replayed, st.Skipped)
			}
			if delay {
				// The victim re-executes steps 21 to 39 and sends new
				// messages to its right and lower neighbours from step
				// 26 on: each channel's first pairs swapped.
				right, down, _, _ := neighbours(victim)
				for _, q := range []int{right, down} {
					if got := sn.swaps[[2]int{victim, q}]; got != swapsPerChannel {
						t.Errorf("%d pairs of data frames swapped from rank %d to %d, want %d", got, victim, q, swapsPerChannel)
					}
				}
			}
			t.Logf("stale connections took %d frames: %v; swapped %v", sn.lost, sn.kinds, sn.swaps)
		})
	}
}
