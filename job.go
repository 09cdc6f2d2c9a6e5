package ckpt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/ckpt/ckpt/internal/coordnet"
	"github.com/ckpt/ckpt/internal/engine"
	"github.com/ckpt/ckpt/internal/flush"
	"github.com/ckpt/ckpt/internal/flush/transfer"
	"github.com/ckpt/ckpt/internal/group"
	"github.com/ckpt/ckpt/internal/jobenv"
	"github.com/ckpt/ckpt/internal/peer"
	"github.com/ckpt/ckpt/internal/policy"
)

// Job is one rank's part in a parallel job: who it is, how it reaches the
// other ranks, its checkpoint store, and the collective decision when to
// checkpoint. Under `ckpt run` (or a launcher that starts ckpt's
// coordinator) Join connects to the job's coordinator; a process started
// on its own is a job of one rank, and every call works the same.
//
// A rank's loop:
//
//	job, _ := ckpt.Join(ctx, ckpt.JobOptions{})
//	defer job.Close()
//	if res, err := job.Restart(ctx); err == nil {
//		// read the state from res, step = saved step
//	}
//	for ; step < steps; step++ {
//		compute(step) // job.Send, job.Recv, job.AllGather ...
//		if need, _ := job.NeedCheckpoint(ctx, step); need {
//			job.Checkpoint(ctx, name, func(c *ckpt.Checkpoint) error { ... })
//		}
//		if job.Halting() {
//			break
//		}
//	}
//	job.Finish(ctx, "result line")
type Job struct {
	rank, size int
	node       string
	inc        uint64
	client     *coordnet.Client // nil for a job of one rank
	peers      *peer.Node       // nil for a job of one rank
	store      *Store
	pol        policy.Policy
	local      *policy.Local // nil until the first NeedCheckpoint
	solo       policy.State  // a job of one rank decides for itself
	interval   time.Duration // the checkpoint interval of the last decision
	taken      int           // checkpoints taken by this launch
	token      string
	stageAddrs []string // staging servers: flushes are non-blocking
	// sched decides the flushes and counts what they did; stager is this
	// node's staged transfer (its lowest rank only), blocking the ranks'
	// own copy.
	sched       *flush.Scheduler
	stager      *transfer.Staged
	blocking    *transfer.Blocking
	published   flush.Stats   // what rank 0 last told the launcher
	lastCkptEnd time.Duration // when this launch's last checkpoint ended
	start       time.Time
	halting     bool
	finished    bool
}

// JobOptions configure Join. Zero fields take their defaults.
type JobOptions struct {
	// Store configures the checkpoint store; Join fills in the rank, the
	// size, the node and the Comm.
	Store Options
	// Interval is the checkpoint policy: "100steps", "30s", "auto",
	// "auto:6h" (with a known MTTI) or "none". Default CKPT_INTERVAL, else
	// "none" (the application decides itself).
	Interval string
	// FlushEvery: every FlushEvery-th checkpoint Checkpoint takes is also
	// flushed to the shared tier, if the store has one. Default
	// CKPT_FLUSH_EVERY ("K" or "auto:MTTI"), else 1.
	FlushEvery int
	// FlushAuto, if positive, lets the multi-level Markov model choose K
	// from the costs the job measures (SPEC-markov §4, §5): FlushAuto is
	// the mean time between failures the caches cannot survive.
	FlushAuto time.Duration
	// Coord, Token and Incarnation locate the job's coordinator and prove
	// membership (default CKPT_COORD, CKPT_TOKEN, CKPT_INCARNATION; Token
	// and Incarnation are read from the environment only when Coord is).
	// Without a coordinator the job is this one process.
	Coord, Token string
	Incarnation  uint64
	// Advertise is the host other ranks dial to reach this one (default
	// CKPT_ADVERTISE, else loopback when the coordinator is on loopback,
	// else this host's name).
	Advertise string
	// Staging lists staging servers (host:port, comma-separated; default
	// CKPT_STAGE). With them, flushes are non-blocking: each node's
	// lowest rank announces the checkpoint to its server, which pulls it
	// from the node's cache while the job goes on (paper 001). The store
	// still needs the shared tier, to restart from it.
	Staging string
	// FlushBusy says what a non-blocking flush that falls due does while
	// the previous one still runs: FlushSkip (default; every rank skips
	// it) or FlushWait (each node waits for its previous one). Default
	// CKPT_FLUSH_BUSY.
	FlushBusy string
}

// The job's environment, set by `ckpt run`.
const (
	envCoord       = jobenv.VarCoord
	envToken       = jobenv.VarToken
	envIncarnation = jobenv.VarIncarnation
	envInterval    = jobenv.VarInterval
	envFlushEvery  = jobenv.VarFlushEvery
	envFlushPrior  = jobenv.VarFlushPrior // FlushStats of the earlier launches, JSON
	envAdvertise   = jobenv.VarAdvertise
)

// messagesFile is the file of a checkpoint that holds the application
// messages in flight when it was taken.
const messagesFile = engine.MessagesFile

// Join joins this process to its job: it connects to the coordinator named
// by the environment, starts the rank's endpoint for messages from other
// ranks and publishes its address, and opens the checkpoint store. It
// returns when every rank of the job has joined, however far apart they
// started; ctx and the coordinator's join timeout bound the wait.
func Join(ctx context.Context, opts JobOptions) (*Job, error) {
	j := &Job{start: time.Now()}
	interval := opts.Interval
	if interval == "" {
		interval = os.Getenv(envInterval)
	}
	if interval == "" {
		interval = "none"
	}
	p, err := policy.Parse(interval)
	if err != nil {
		return nil, configError(fmt.Errorf("ckpt: checkpoint interval: %w", err))
	}
	j.pol = p
	if j.sched, j.stageAddrs, err = newFlushScheduler(opts, j.pol); err != nil {
		return nil, err
	}
	so := opts.Store
	if so.Size == 0 {
		so.Rank, so.Size = identityFromEnv()
	}
	addr, token, inc := opts.Coord, opts.Token, opts.Incarnation
	if addr == "" {
		addr, token = os.Getenv(envCoord), os.Getenv(envToken)
		if v := os.Getenv(envIncarnation); v != "" {
			if inc, err = strconv.ParseUint(v, 10, 64); err != nil {
				return nil, fmt.Errorf("ckpt: %s=%q: not a whole number", envIncarnation, v)
			}
		}
	}
	if addr == "" {
		if so.Size > 1 {
			return nil, fmt.Errorf("ckpt: rank %d of %d: no coordinator (%s is not set): start the job with 'ckpt run'", so.Rank, so.Size, envCoord)
		}
		if j.store, err = Open(so); err != nil {
			return nil, err
		}
		j.rank, j.size, j.node, j.inc = 0, 1, j.store.eng.Node, inc
		return j, nil
	}
	if so.Node == "" {
		so.Node = os.Getenv(jobenv.VarNode)
	}
	if so.Node == "" {
		so.Node, _ = os.Hostname()
	}
	j.inc, j.token = inc, token
	j.rank, j.size, j.node = so.Rank, so.Size, so.Node

	// The rank's endpoint listens before it joins, so that its address is
	// known; peers resolve each other's through the coordinator.
	resolve := peer.ResolverFunc(func(ctx context.Context, rank int) (string, error) {
		if j.client == nil {
			return "", errors.New("not joined yet")
		}
		v, ok, err := j.client.Lookup(ctx, peer.AddrKey(rank), true)
		if err != nil {
			return "", err
		}
		if !ok {
			return "", fmt.Errorf("rank %d published no address", rank)
		}
		return string(v), nil
	})
	listen, advertise := endpointFor(addr, opts.Advertise)
	if j.peers, err = peer.Listen(so.Rank, so.Size, token, resolve, peer.WithListenAddr(listen)); err != nil {
		return nil, fmt.Errorf("ckpt: rank %d: %w", so.Rank, err)
	}
	j.client, err = coordnet.Dial(ctx, coordnet.ClientConfig{Addr: addr, Token: token, Incarnation: inc,
		Node: so.Node, Rank: so.Rank, Size: so.Size})
	if err != nil {
		j.peers.Close()
		return nil, fmt.Errorf("ckpt: %w", err)
	}
	myAddr := j.peers.Addr()
	if advertise != "" {
		_, port, _ := net.SplitHostPort(myAddr)
		myAddr = net.JoinHostPort(advertise, port)
	}
	if err := j.client.Publish(ctx, peer.AddrKey(so.Rank), []byte(myAddr)); err != nil {
		j.Close()
		return nil, fmt.Errorf("ckpt: rank %d: publish address: %w", so.Rank, err)
	}
	so.Comm = &jobComm{Client: j.client, peers: j.peers}
	if j.store, err = Open(so); err != nil {
		j.Close()
		return nil, err
	}
	return j, nil
}

// endpointFor is where a rank listens for its peers and the host it
// advertises ("" for the listener's own address): loopback when the
// coordinator is on loopback (one machine), else every interface and the
// host's name.
func endpointFor(coordAddr, advertise string) (listen, host string) {
	if advertise == "" {
		advertise = os.Getenv(envAdvertise)
	}
	if h, _, err := net.SplitHostPort(coordAddr); err == nil && advertise == "" {
		if ip := net.ParseIP(h); ip != nil && ip.IsLoopback() || h == "localhost" {
			return "127.0.0.1:0", ""
		}
	}
	if advertise == "" {
		advertise, _ = os.Hostname()
	}
	return ":0", advertise
}

// jobComm is the store's Comm over the job's coordinator and peers.
type jobComm struct {
	*coordnet.Client
	peers *peer.Node
}

func (c *jobComm) SetTransport(ctx context.Context, members []int, epoch uint64) (Transport, io.Closer, error) {
	return c.peers.OpenSet(ctx, members, epoch)
}

// Rank is this rank; Size the number of ranks; Node the node it runs on.
func (j *Job) Rank() int    { return j.rank }
func (j *Job) Size() int    { return j.size }
func (j *Job) Node() string { return j.node }

// Incarnation counts the job's launches: 0 for the first, one more for
// each relaunch after a failure. Checkpoint names that include it never
// collide with one a failed launch left behind.
func (j *Job) Incarnation() uint64 { return j.inc }

// Store is the job's checkpoint store, for applications that manage
// checkpoints themselves.
func (j *Job) Store() *Store { return j.store }

// Barrier waits until every rank reached it.
func (j *Job) Barrier(ctx context.Context) error {
	if j.client == nil {
		return ctx.Err()
	}
	return j.client.Barrier(ctx)
}

// AllGather contributes data and returns every rank's, indexed by rank
// (collective). The result must not be modified.
func (j *Job) AllGather(ctx context.Context, data []byte) ([][]byte, error) {
	if j.client == nil {
		return group.Solo{}.AllGather(ctx, data)
	}
	return j.client.AllGather(ctx, data)
}

// Publish stores value under key in the job's key–value service.
func (j *Job) Publish(ctx context.Context, key string, value []byte) error {
	if j.client == nil {
		return errors.New("ckpt: a job of one rank has no key–value service")
	}
	return j.client.Publish(ctx, key, value)
}

// Lookup returns key's value, waiting until some rank publishes it.
func (j *Job) Lookup(ctx context.Context, key string) ([]byte, error) {
	if j.client == nil {
		return nil, errors.New("ckpt: a job of one rank has no key–value service")
	}
	v, _, err := j.client.Lookup(ctx, key, true)
	return v, err
}

// Send sends msg to rank to. Messages between two ranks arrive in order;
// the tag must match the receiver's (it checks, it does not select). Ranks
// are virtual: after a relaunch on other hosts or ports they find each
// other again through the coordinator.
func (j *Job) Send(ctx context.Context, to int, tag uint64, msg []byte) error {
	if j.peers == nil {
		return fmt.Errorf("ckpt: send to rank %d: a job of one rank has no peers", to)
	}
	return j.peers.Send(ctx, to, tag, msg)
}

// Recv receives the next message from rank from into buf (if it fits).
func (j *Job) Recv(ctx context.Context, from int, tag uint64, buf []byte) ([]byte, error) {
	if j.peers == nil {
		return nil, fmt.Errorf("ckpt: receive from rank %d: a job of one rank has no peers", from)
	}
	return j.peers.Recv(ctx, from, tag, buf)
}

// NeedCheckpoint tells whether to checkpoint at step; every rank gets the
// same answer for the same step. Call it once per step, on every rank, with
// steps that increase. Most calls return at once without any
// communication; at decision steps (about once a second, at every step a
// checkpoint falls due, and at the step after a checkpoint, to report its
// cost) the ranks ask the coordinator together, which
// applies the job's policy to the slowest rank's measurements.
func (j *Job) NeedCheckpoint(ctx context.Context, step int64) (bool, error) {
	if j.pol.Kind == policy.None {
		return false, nil
	}
	now := time.Since(j.start)
	if j.stageAddrs != nil {
		j.timeStep()
	}
	if j.local == nil {
		j.local = policy.NewLocal(j.pol, step, now)
	}
	if !j.local.Need(step) {
		return false, nil
	}
	rep := j.local.Report(step, now)
	var d policy.Decision
	if j.client == nil {
		d, j.solo = policy.Decide(j.pol, j.solo, []policy.Report{rep})
	} else {
		b, err := rep.MarshalBinary()
		if err != nil {
			return false, err
		}
		ans, err := j.client.Decide(ctx, b)
		if err != nil {
			return false, fmt.Errorf("ckpt: checkpoint decision at step %d: %w", step, err)
		}
		if err := d.UnmarshalBinary(ans); err != nil {
			return false, fmt.Errorf("ckpt: checkpoint decision at step %d: %w", step, err)
		}
	}
	j.local.Apply(d)
	if d.Interval > 0 {
		j.interval = d.Interval
	}
	if j.sched.Stats().Mode != "" {
		// About once a second: flushes finish, and α's steps accumulate,
		// between the checkpoints that publish them.
		j.publishFlush(ctx)
	}
	if d.Halt {
		j.halting = true
	}
	return d.Checkpoint, nil
}

// Halting reports that the job was asked to halt: the checkpoint
// NeedCheckpoint just asked for is the last; after it, Finish.
func (j *Job) Halting() bool { return j.halting }

// Checkpoint takes a checkpoint named name, collectively: every rank calls
// it at the same step, with no message sends in progress. Messages in
// flight between ranks are captured with it (and delivered again after a
// restart); save writes the rank's files.
func (j *Job) Checkpoint(ctx context.Context, name string, save func(c *Checkpoint) error) error {
	start := time.Since(j.start)
	j.sched.CheckpointBegins()
	var pending []peer.Pending
	if j.peers != nil {
		var err error
		if pending, err = j.peers.Drain(ctx, j.client); err != nil {
			return fmt.Errorf("ckpt: checkpoint %q: %w", name, err)
		}
		// The application goes on after the checkpoint and receives them.
		defer j.peers.Inject(pending)
	}
	c, err := j.store.Start(name)
	if err != nil {
		return err
	}
	err = save(c)
	if err == nil && len(pending) > 0 {
		err = c.writeReserved(messagesFile, peer.MarshalPending(pending))
	}
	if err != nil {
		c.Abort()
		return fmt.Errorf("ckpt: checkpoint %q: %w", name, err)
	}
	if err := c.Commit(ctx); err != nil {
		return err
	}
	j.sched.Committed()
	j.taken++
	if j.store.eng.Shared != nil && j.flushIsDue(ctx) {
		if err := j.flushDue(ctx, name); err != nil {
			return fmt.Errorf("ckpt: checkpoint %q: flush: %w", name, err)
		}
	}
	if j.client != nil {
		if ok, err := j.client.Commit(ctx, name, true); err != nil {
			return fmt.Errorf("ckpt: checkpoint %q: %w", name, err)
		} else if !ok {
			return fmt.Errorf("ckpt: checkpoint %q: the ranks disagree on the checkpoint committed", name)
		}
	}
	j.lastCkptEnd = time.Since(j.start)
	j.sched.CheckpointEnds()
	if j.local != nil {
		j.local.Checkpointed(start, j.lastCkptEnd)
	}
	return nil
}

// Restart restores the newest checkpoint the job can recover (see
// Store.Restart) and delivers again the messages that were in flight when
// it was taken. It returns ErrNoCheckpoint on a fresh start.
func (j *Job) Restart(ctx context.Context) (*Restored, error) {
	res, err := j.store.Restart(ctx)
	if err != nil {
		if errors.Is(err, ErrNoCheckpoint) && j.rank == 0 && j.client != nil {
			j.client.Publish(ctx, jobenv.KeyRestored, jobenv.Restored{Source: jobenv.SourceNone}.Encode())
		}
		return nil, err
	}
	if j.peers != nil && res.has(messagesFile) {
		rd, err := res.Open(messagesFile)
		if err != nil {
			return nil, err
		}
		b, err := io.ReadAll(rd)
		rd.Close()
		if err != nil {
			return nil, err
		}
		pending, err := peer.UnmarshalPending(b)
		if err != nil {
			return nil, fmt.Errorf("ckpt: restart from %q: messages in flight: %w", res.Name(), err)
		}
		if err := j.peers.Inject(pending); err != nil {
			return nil, err
		}
	}
	if j.rank == 0 && j.client != nil {
		if err := j.client.Publish(ctx, jobenv.KeyRestored, jobenv.Restored{Source: res.Source, Checkpoint: res.Name()}.Encode()); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// Finish ends the rank's part in the job cleanly; rank 0 reports result
// (one line) to the launcher. The job is finished when every rank has.
func (j *Job) Finish(ctx context.Context, result string) error {
	if j.finished {
		return nil
	}
	j.finished = true
	if j.client == nil {
		return nil
	}
	if j.rank == 0 && result != "" {
		if err := j.client.Publish(ctx, jobenv.KeyResult, []byte(result)); err != nil {
			return err
		}
	}
	if j.halting && j.stager != nil {
		// A halted job resumes later from its last checkpoint, maybe on
		// other nodes: its flush must be durable before the ranks go.
		if err := j.stager.Wait(ctx); err != nil {
			return fmt.Errorf("ckpt: halting: waiting for the last flush: %w", err)
		}
	}
	j.publishFlush(ctx)
	// Nobody leaves while a peer may still read what it sent.
	if err := j.client.Barrier(ctx); err != nil {
		return err
	}
	return j.client.Leave()
}

// Close releases the rank's resources. A rank that closes without Finish
// counts as failed.
func (j *Job) Close() error {
	var errs []error
	if j.stager != nil {
		// Flushes under way stay with their servers; a relaunched rank's
		// client takes them up again.
		errs = append(errs, j.stager.Cancel())
	}
	if j.client != nil {
		errs = append(errs, j.client.Close())
	}
	if j.peers != nil {
		errs = append(errs, j.peers.Close())
	}
	if j.store != nil {
		errs = append(errs, j.store.Close())
	}
	return errors.Join(errs...)
}
