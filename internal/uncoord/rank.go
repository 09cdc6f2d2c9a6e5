package uncoord

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/ckpt/ckpt/internal/msglog"
	"github.com/ckpt/ckpt/internal/msglog/logstore"
	"github.com/ckpt/ckpt/internal/redundancy"
)

// Net carries frames between ranks: the application channel of
// internal/peer's Node, or MemNet in tests. It keeps the
// redundancy.Transport contract (FIFO per pair, failures as errors); calls
// for one peer and direction are never concurrent.
type Net interface {
	Send(ctx context.Context, to int, tag uint64, msg []byte) error
	Recv(ctx context.Context, from int, tag uint64, buf []byte) ([]byte, error)
}

// ErrCannotServe is wrapped by the errors that mean a failed rank cannot
// recover alone from its checkpoint and its log: the runtime must restart
// the whole job.
var ErrCannotServe = errors.New("uncoord: the message log cannot serve the recovery of one rank alone")

// Config is one rank's driver.
type Config struct {
	// Rank is this rank, in [0, Size).
	Rank, Size int
	// Net reaches the other ranks.
	Net Net
	// Log is this rank's message log at its protector. The Rank owns it
	// while it runs (Close does not close it).
	Log logstore.Store
	// Restarted says this rank failed before: Start replays its log after
	// Saved's point and tells the peers before it returns.
	Restarted bool
	// Saved is the snapshot (Snapshot.Bytes) the rank restarts from; nil
	// starts from the beginning.
	Saved []byte
	// Clock is the time msglog's statistics are measured in; default, the
	// time since Start.
	Clock func() time.Duration
	// Retry is how long a reader waits before it reads again from a peer
	// whose connection failed (the peer is being restarted); default 10ms.
	Retry time.Duration
	// HelloRetry is how long a restarted rank waits for a peer's answer
	// to its hello before it says hello again; default 1s. The peer's
	// connection to this rank's failed incarnation may have taken the
	// answer, and the messages the peer sent again with it, before the
	// peer noticed the failure: a TCP transport's send to a failed peer
	// may succeed and be lost (internal/peer's contract).
	HelloRetry time.Duration
}

// Stats are a rank's counters since Start.
type Stats struct {
	// LogProtect is the time messages waited for their record to be
	// durable at the protector before delivery (Δ_lp, Fialho et al. 2011
	// §3.2); LogReplay the time the restart's replay took (Δ_lr).
	LogProtect, LogReplay time.Duration
	// Logged and Replayed count records appended and replayed.
	Logged, Replayed uint64
	// Skipped counts messages a re-executing rank did not send because
	// their receiver had them; Resent the messages sent again to a peer
	// that restarted or answered this rank's hello.
	Skipped, Resent uint64
	// Duplicates counts messages the receiver dropped as already had.
	Duplicates uint64
}

// Rank drives one rank's message logging. Its methods are safe for
// concurrent use.
type Rank struct {
	cfg    Config
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	out    []*outbox

	// storeMu serialises the log's users: the persister's appends, the
	// replay's reads and truncations. It is never held while taking mu.
	storeMu sync.Mutex
	pwake   chan struct{} // records wait in persist

	mu      sync.Mutex
	persist []msglog.Record // records to append, in order
	// appending is the batch the persister is appending (or has
	// appended) and has not yet told the receiver is durable. logGen
	// counts the logs the rank was given (Reprotect), so that the
	// persister does not append a batch Reprotect already put in the new
	// one; it is written with mu and storeMu held.
	appending []msglog.Record
	logGen    uint64
	recv      *msglog.Receiver
	send      *msglog.Sender
	// delivered are the messages delivered and not yet received, in
	// delivery order: a receive from a rank takes its oldest, a receive
	// from any rank the oldest of all.
	delivered []Message
	err       error
	replied   map[int]bool
	resent    uint64
	changed   chan struct{} // closed and replaced at every change a waiter may want
}

// Start starts the driver of cfg.Rank. With cfg.Restarted it replays the
// log and exchanges with every peer what each holds of the other before it
// returns; its errors then wrap ErrCannotServe when the log cannot serve.
// ctx bounds Start only.
func Start(ctx context.Context, cfg Config) (*Rank, error) {
	if cfg.Size < 1 || cfg.Rank < 0 || cfg.Rank >= cfg.Size || cfg.Net == nil || cfg.Log == nil {
		return nil, fmt.Errorf("uncoord: bad config: rank %d of %d, net %v, log %v", cfg.Rank, cfg.Size, cfg.Net != nil, cfg.Log != nil)
	}
	if cfg.Clock == nil {
		t0 := time.Now()
		cfg.Clock = func() time.Duration { return time.Since(t0) }
	}
	if cfg.Retry <= 0 {
		cfg.Retry = 10 * time.Millisecond
	}
	if cfg.HelloRetry <= 0 {
		cfg.HelloRetry = time.Second
	}
	var snap Snapshot
	if cfg.Saved != nil {
		var err error
		if snap, err = DecodeSnapshot(cfg.Saved, cfg.Rank); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrCannotServe, err)
		}
	}
	rctx, cancel := context.WithCancel(context.Background())
	r := &Rank{cfg: cfg, ctx: rctx, cancel: cancel,
		recv: msglog.NewReceiver(snap.Point), send: msglog.NewSender(snap.Sender),
		delivered: snap.Pending, replied: map[int]bool{}, changed: make(chan struct{}), pwake: make(chan struct{}, 1)}
	r.out = make([]*outbox, cfg.Size)
	for p := range cfg.Size {
		if p != cfg.Rank {
			r.out[p] = &outbox{wake: make(chan struct{}, 1)}
		}
	}
	r.wg.Add(1)
	go r.persister()
	if cfg.Restarted {
		if err := r.replay(snap.Point.Index); err != nil {
			r.Close()
			return nil, err
		}
	}
	for p := range cfg.Size {
		if p != cfg.Rank {
			r.wg.Add(2)
			go r.write(p)
			go r.read(p)
		}
	}
	if cfg.Restarted {
		if err := r.hello(ctx); err != nil {
			r.Close()
			return nil, err
		}
	}
	return r, nil
}

// replay hands the log's records after index to the receiver (msglog's
// obligation 6). Only the persister runs yet, with nothing to append.
func (r *Rank) replay(after uint64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recv.BeginReplay(r.cfg.Clock())
	r.storeMu.Lock()
	err := r.cfg.Log.ReadAfter(after, func(rec msglog.Record) error {
		rd, err := r.recv.Replay(rec, r.cfg.Clock())
		r.deliver(rd)
		return err
	})
	r.storeMu.Unlock()
	if err != nil {
		return fmt.Errorf("%w: rank %d: replay: %w", ErrCannotServe, r.cfg.Rank, err)
	}
	rd, err := r.recv.EndReplay(r.cfg.Clock())
	if err != nil {
		return fmt.Errorf("%w: rank %d: replay: %w", ErrCannotServe, r.cfg.Rank, err)
	}
	r.apply(rd)
	return r.err
}

// hello tells every peer what this rank's log holds of its channel and
// waits for every answer (msglog's obligation 7): the re-execution may
// then skip what the receivers have. A peer that has not answered after
// HelloRetry is told again: its answer, and what it sent again with it,
// may have been lost on its connection to this rank's failed incarnation.
// A hello said again carries what the log holds then, never less than an
// acknowledgement sent before it, so the peer's Sender.Recovered accepts
// it; the messages it returns again are duplicates the receiver drops.
// It is not said again while the last one waits in the outbox (the peer
// unreachable, the writer retrying): each would be answered with all
// the peer holds unacknowledged once the peer is back.
func (r *Rank) hello(ctx context.Context) error {
	say := func() {
		r.mu.Lock()
		for p, o := range r.out {
			if o != nil && !r.replied[p] {
				o.pushHello(r.recv.Durable(p))
			}
		}
		r.mu.Unlock()
	}
	say()
	retry := time.NewTicker(r.cfg.HelloRetry)
	defer retry.Stop()
	for {
		r.mu.Lock()
		err, n, ch := r.err, len(r.replied), r.changed
		r.mu.Unlock()
		if err != nil {
			return err
		}
		if n == r.cfg.Size-1 {
			return nil
		}
		select {
		case <-ch:
		case <-retry.C:
			say()
		case <-ctx.Done():
			return fmt.Errorf("uncoord: rank %d waiting for its peers' answers (%d of %d): %w", r.cfg.Rank, n, r.cfg.Size-1, ctx.Err())
		}
	}
}

// notify wakes the waiters; r.mu is held.
func (r *Rank) notify() {
	close(r.changed)
	r.changed = make(chan struct{})
}

// fail records the first error that stops the rank; r.mu is held.
func (r *Rank) fail(err error) {
	if r.err == nil {
		r.err = err
		r.notify()
	}
}

// apply carries out a Ready in msglog's order: persist (handed to the
// persister), acks, deliver, truncate. r.mu is held.
func (r *Rank) apply(rd msglog.Ready) {
	if len(rd.Persist) > 0 {
		r.persist = append(r.persist, rd.Persist...)
		select {
		case r.pwake <- struct{}{}:
		default:
		}
	}
	r.deliver(rd)
	if rd.Truncate > 0 {
		r.storeMu.Lock()
		err := r.cfg.Log.Truncate(rd.Truncate)
		r.storeMu.Unlock()
		if err != nil {
			r.fail(fmt.Errorf("uncoord: rank %d: truncating the log: %w", r.cfg.Rank, err))
		}
	}
}

// deliver carries out a Ready's acks and deliveries; r.mu is held.
func (r *Rank) deliver(rd msglog.Ready) {
	for _, a := range rd.Acks {
		if a.To >= 0 && a.To < len(r.out) && r.out[a.To] != nil {
			r.out[a.To].setAck(a.Seq)
		}
	}
	for _, rec := range rd.Deliver {
		r.delivered = append(r.delivered, Message{From: rec.From, Data: rec.Data})
	}
	if len(rd.Deliver) > 0 {
		r.notify()
	}
}

// persister appends the records waiting to the protector's log, all that
// came while the previous append ran in one (one sync for all: group
// commit), and then tells the receiver they are durable (msglog's
// obligation 2).
func (r *Rank) persister() {
	defer r.wg.Done()
	for {
		select {
		case <-r.pwake:
		case <-r.ctx.Done():
			return
		}
		r.mu.Lock()
		recs, gen := r.persist, r.logGen
		r.persist = nil
		if len(recs) == 0 {
			r.mu.Unlock()
			continue
		}
		r.appending = recs
		r.mu.Unlock()
		var err error
		r.storeMu.Lock()
		if r.logGen == gen {
			err = r.cfg.Log.Append(recs)
		}
		r.storeMu.Unlock()
		r.mu.Lock()
		r.appending = nil
		if err != nil {
			r.fail(fmt.Errorf("uncoord: rank %d: logging at the protector: %w", r.cfg.Rank, err))
		} else if r.err == nil {
			r.apply(r.recv.Persisted(recs[len(recs)-1].Index, r.cfg.Clock()))
			r.notify()
		}
		r.mu.Unlock()
	}
}

// read hands every frame from peer p to the receiver or the sender.
func (r *Rank) read(p int) {
	defer r.wg.Done()
	for {
		b, err := r.cfg.Net.Recv(r.ctx, p, Tag, nil)
		if err != nil {
			if r.ctx.Err() != nil || errors.Is(err, redundancy.ErrClosed) {
				return
			}
			// The peer failed: it is being restarted, and will be found
			// again at its new address.
			select {
			case <-r.ctx.Done():
				return
			case <-time.After(r.cfg.Retry):
			}
			continue
		}
		f, err := decodeFrame(b)
		r.mu.Lock()
		if err != nil {
			r.fail(fmt.Errorf("uncoord: rank %d: from rank %d: %w", r.cfg.Rank, p, err))
		} else {
			r.handle(p, f)
		}
		r.mu.Unlock()
	}
}

// handle handles frame f from peer p; r.mu is held.
func (r *Rank) handle(p int, f frame) {
	switch f.kind {
	case kData:
		r.apply(r.recv.Receive(msglog.Msg{From: p, Seq: f.seq, Data: f.data}, r.cfg.Clock()))
	case kAck:
		r.send.Ack(p, f.seq)
		r.notify()
	case kHello:
		// p restarted and holds our channel up to f.seq: answer with what
		// we hold of its channel, and send again what it lost.
		ms, err := r.send.Recovered(p, f.seq)
		if err != nil {
			r.out[p].push(frame{kind: kRefuse})
			r.fail(fmt.Errorf("%w: rank %d restarted: %w", ErrCannotServe, p, err))
			return
		}
		r.out[p].push(frame{kind: kReply, seq: r.recv.Durable(p)})
		r.resendAll(p, ms)
		if r.cfg.Restarted && !r.replied[p] {
			// This rank's own hello to p may have gone to p's previous
			// incarnation: say it again (unless one waits to be sent).
			r.out[p].pushHello(r.recv.Durable(p))
		}
	case kReply:
		r.send.Ack(p, f.seq)
		r.resendAll(p, r.send.Resend(p))
		r.replied[p] = true
		r.notify()
	case kRefuse:
		r.fail(fmt.Errorf("%w: rank %d found that this rank's log lost messages it had acknowledged", ErrCannotServe, p))
	}
}

func (r *Rank) resendAll(p int, ms []msglog.Msg) {
	for _, m := range ms {
		r.out[p].push(frame{kind: kData, seq: m.Seq, data: m.Data})
	}
	r.resent += uint64(len(ms))
}

// write sends peer p's outbox.
func (r *Rank) write(p int) {
	defer r.wg.Done()
	o := r.out[p]
	for {
		fs, ok := o.take()
		if !ok {
			select {
			case <-o.wake:
				continue
			case <-r.ctx.Done():
				return
			}
		}
		for _, f := range fs {
			b := f.append(nil)
			for {
				err := r.cfg.Net.Send(r.ctx, p, Tag, b)
				if err == nil {
					break
				}
				if r.ctx.Err() != nil || errors.Is(err, redundancy.ErrClosed) {
					return
				}
				// The peer failed: the first send after a failure reports
				// it, the next ones dial the peer's address again, which
				// works once its new incarnation has published it. Frames
				// wait for it rather than being dropped: a hello or its
				// answer is sent only once.
				select {
				case <-r.ctx.Done():
					return
				case <-time.After(r.cfg.Retry):
				}
			}
		}
		o.done(len(fs))
	}
}

// Send sends data to rank to: logged by its receiver before it is
// delivered. It returns once the message is queued; data is copied. A
// message the receiver already has (this rank re-executing after a
// restart) is not sent.
func (r *Rank) Send(ctx context.Context, to int, data []byte) error {
	if to < 0 || to >= r.cfg.Size || to == r.cfg.Rank {
		return fmt.Errorf("uncoord: rank %d: send to rank %d of %d", r.cfg.Rank, to, r.cfg.Size)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return r.err
	}
	m, wire := r.send.Send(r.cfg.Rank, to, bytes.Clone(data))
	if wire {
		r.out[to].push(frame{kind: kData, seq: m.Seq, data: m.Data})
	}
	return nil
}

// Recv returns the next message from rank from, once its record is
// durable at the protector.
func (r *Rank) Recv(ctx context.Context, from int) ([]byte, error) {
	if from < 0 || from >= r.cfg.Size || from == r.cfg.Rank {
		return nil, fmt.Errorf("uncoord: rank %d: receive from rank %d of %d", r.cfg.Rank, from, r.cfg.Size)
	}
	m, err := r.take(ctx, from)
	return m.Data, err
}

// RecvAny returns the oldest message delivered from any rank: a replay
// gives the same sequence (MPI_ANY_SOURCE).
func (r *Rank) RecvAny(ctx context.Context) (Message, error) { return r.take(ctx, -1) }

// take removes and returns the oldest delivered message from rank from
// (any rank if from < 0), waiting for one.
func (r *Rank) take(ctx context.Context, from int) (Message, error) {
	for {
		r.mu.Lock()
		if r.err != nil {
			err := r.err
			r.mu.Unlock()
			return Message{}, err
		}
		i := 0
		for i < len(r.delivered) && from >= 0 && r.delivered[i].From != from {
			i++
		}
		if i < len(r.delivered) {
			m := r.delivered[i]
			r.delivered = slices.Delete(r.delivered, i, i+1)
			r.mu.Unlock()
			return m, nil
		}
		ch := r.changed
		r.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return Message{}, fmt.Errorf("uncoord: rank %d: receive from rank %d: %w", r.cfg.Rank, from, ctx.Err())
		}
	}
}

// Checkpoint returns the driver's part of a checkpoint taken now, to be
// saved with the application's state; call Protected once it is saved.
func (r *Rank) Checkpoint() Snapshot {
	r.mu.Lock()
	defer r.mu.Unlock()
	return Snapshot{Point: r.recv.Point(), Sender: r.send.State(), Pending: slices.Clone(r.delivered)}
}

// Protected says s is saved where a restart finds it: the log behind its
// point is truncated.
func (r *Rank) Protected(s Snapshot) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return r.err
	}
	r.apply(r.recv.Protected(s.Point))
	return r.err
}

// Err returns the error that stopped the rank, if any.
func (r *Rank) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// Stats returns the rank's counters.
func (r *Rank) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.recv.Stats()
	return Stats{LogProtect: s.PersistWait, LogReplay: s.ReplayTime, Logged: s.RecordsLogged,
		Replayed: s.Replayed, Skipped: r.send.Skipped(), Resent: r.resent, Duplicates: s.Duplicates}
}

// Flush waits until every frame queued so far was handed to the network.
func (r *Rank) Flush(ctx context.Context) error {
	for p, o := range r.out {
		if o == nil {
			continue
		}
		if err := o.flush(ctx, r.ctx); err != nil {
			return fmt.Errorf("uncoord: rank %d: flushing to rank %d: %w", r.cfg.Rank, p, err)
		}
	}
	return nil
}

// Close stops the rank's goroutines; frames not yet sent are dropped (call
// Flush first for a clean finish). It does not close the log.
func (r *Rank) Close() {
	r.cancel()
	r.wg.Wait()
}

// outbox is the frames waiting to go to one peer, and the latest ack,
// which replaces an older one not yet sent.
type outbox struct {
	mu       sync.Mutex
	frames   []frame
	ack      uint64
	ackDirty bool
	inflight int           // frames taken and not yet done
	idle     chan struct{} // closed when the outbox empties, if someone waits
	wake     chan struct{}
}

func (o *outbox) kick() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

func (o *outbox) push(f frame) {
	o.mu.Lock()
	o.frames = append(o.frames, f)
	o.mu.Unlock()
	o.kick()
}

// pushHello queues a hello unless one is queued and not yet taken by
// the writer: that one goes first, and its seq is never less than an ack
// sent before it (acks follow the frames of their batch).
func (o *outbox) pushHello(seq uint64) {
	o.mu.Lock()
	for _, f := range o.frames {
		if f.kind == kHello {
			o.mu.Unlock()
			return
		}
	}
	o.frames = append(o.frames, frame{kind: kHello, seq: seq})
	o.mu.Unlock()
	o.kick()
}

func (o *outbox) setAck(seq uint64) {
	o.mu.Lock()
	if seq > o.ack {
		o.ack, o.ackDirty = seq, true
	}
	o.mu.Unlock()
	o.kick()
}

func (o *outbox) take() ([]frame, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	fs := o.frames
	o.frames = nil
	if o.ackDirty {
		fs = append(fs, frame{kind: kAck, seq: o.ack})
		o.ackDirty = false
	}
	o.inflight = len(fs)
	if len(fs) == 0 && o.idle != nil {
		close(o.idle)
		o.idle = nil
	}
	return fs, len(fs) > 0
}

func (o *outbox) done(int) {
	o.mu.Lock()
	o.inflight = 0
	o.mu.Unlock()
	o.kick() // take again: it reports idle if nothing came meanwhile
}

func (o *outbox) flush(ctx, run context.Context) error {
	o.mu.Lock()
	if len(o.frames) == 0 && !o.ackDirty && o.inflight == 0 {
		o.mu.Unlock()
		return nil
	}
	if o.idle == nil {
		o.idle = make(chan struct{})
	}
	ch := o.idle
	o.mu.Unlock()
	o.kick()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-run.Done():
		return errors.New("closed")
	}
}
