package rank

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/ckpt/ckpt/internal/coordnet"
	"github.com/ckpt/ckpt/internal/engine"
	"github.com/ckpt/ckpt/internal/flush"
	"github.com/ckpt/ckpt/internal/flush/transfer"
	"github.com/ckpt/ckpt/internal/group"
	"github.com/ckpt/ckpt/internal/jobenv"
	"github.com/ckpt/ckpt/internal/jobtls"
	"github.com/ckpt/ckpt/internal/peer"
	"github.com/ckpt/ckpt/internal/policy"
	"github.com/ckpt/ckpt/internal/redundancy"
)

// Runtime is one rank's part in a job (see the package doc). It is not
// safe for concurrent use, except Send and Recv, as peer.Node allows.
type Runtime struct {
	cfg        Config
	rank, size int
	node       string
	client     *coordnet.Client // nil for a job of one rank
	peers      *peer.Node       // nil for a job of one rank
	eng        *engine.Engine   // the store's, from Attach
	local      *policy.Local    // nil until the first NeedCheckpoint
	solo       policy.State     // a job of one rank decides for itself
	interval   time.Duration    // the checkpoint interval of the last decision
	// sched decides the flushes and counts what they did; stager is this
	// node's staged transfer (its lowest rank only), blocking the ranks'
	// own copy.
	sched       *flush.Scheduler
	stager      *transfer.Staged
	blocking    *transfer.Blocking
	published   flush.Stats // what rank 0 last told the launcher
	lastCkptEnd time.Duration
	start       time.Time
	halting     bool
	finished    bool
	tls         *jobtls.Config // nil: plain TCP
	u           *uncoordinated // the uncoordinated strategy's state (StartStrategy)
}

// Join joins the job cfg describes and returns when every rank has
// joined; ctx and the coordinator's join timeout bound the wait. Without
// a coordinator the process is a job of one rank (an error if cfg.Size
// says more). The root then opens the store over Comm and calls Attach.
func Join(ctx context.Context, cfg Config) (*Runtime, error) {
	r := &Runtime{cfg: cfg, start: time.Now(), sched: flush.NewScheduler(cfg.Flush)}
	if cfg.Coord == "" {
		if cfg.Size > 1 {
			return nil, fmt.Errorf("ckpt: rank %d of %d: no coordinator (%s is not set): start the job with 'ckpt run'", cfg.Rank, cfg.Size, jobenv.VarCoord)
		}
		r.rank, r.size = 0, 1
		return r, nil
	}
	if cfg.Node == "" {
		cfg.Node, _ = os.Hostname()
		r.cfg.Node = cfg.Node
	}
	r.rank, r.size, r.node = cfg.Rank, cfg.Size, cfg.Node

	// The rank's endpoint listens before it joins, so that its address is
	// known; peers resolve each other's through the coordinator.
	resolve := peer.ResolverFunc(func(ctx context.Context, rank int) (string, error) {
		if r.client == nil {
			return "", errors.New("not joined yet")
		}
		v, ok, err := r.client.Lookup(ctx, peer.AddrKey(rank), true)
		if err != nil {
			return "", err
		}
		if !ok {
			return "", fmt.Errorf("rank %d published no address", rank)
		}
		return string(v), nil
	})
	listen, advertise := endpointFor(cfg.Coord, cfg.Advertise)
	var err error
	if r.tls, err = jobtls.Load(cfg.TLS); err != nil {
		return nil, fmt.Errorf("ckpt: rank %d: %w", cfg.Rank, err)
	}
	coordCfg := coordnet.ClientConfig{Addr: cfg.Coord, Token: cfg.Token, Incarnation: cfg.Incarnation,
		Node: cfg.Node, Rank: cfg.Rank, Size: cfg.Size}
	if r.tls != nil {
		coordCfg.TLS = r.tls.Client
	}
	if r.peers, err = peer.Listen(cfg.Rank, cfg.Size, cfg.Token, resolve, peer.WithListenAddr(listen), peer.WithTLS(r.tls)); err != nil {
		return nil, fmt.Errorf("ckpt: rank %d: %w", cfg.Rank, err)
	}
	r.client, err = coordnet.Dial(ctx, coordCfg)
	if err != nil {
		r.peers.Close()
		return nil, fmt.Errorf("ckpt: %w", err)
	}
	// The process the rank runs in, for a launcher that did not start it
	// itself (mpirun, srun) and must find it to inject failures.
	// Under srun, the node's name too: what --exclude takes to keep the
	// next launch off it.
	host, _ := os.Hostname()
	proc := jobenv.Proc{Host: host, PID: os.Getpid(), Node: os.Getenv(jobenv.VarSlurmNode)}
	if err := r.client.Publish(ctx, jobenv.KeyProc(cfg.Rank), proc.Encode()); err != nil {
		r.Close()
		return nil, fmt.Errorf("ckpt: rank %d: publish its process: %w", cfg.Rank, err)
	}
	myAddr := r.peers.Addr()
	if advertise != "" {
		_, port, _ := net.SplitHostPort(myAddr)
		myAddr = net.JoinHostPort(advertise, port)
	}
	if err := r.client.Publish(ctx, peer.AddrKey(cfg.Rank), []byte(myAddr)); err != nil {
		r.Close()
		return nil, fmt.Errorf("ckpt: rank %d: publish address: %w", cfg.Rank, err)
	}
	return r, nil
}

// endpointFor is where a rank listens for its peers and the host it
// advertises ("" for the listener's own address): loopback when the
// coordinator is on loopback (one machine), else every interface and the
// host's name.
func endpointFor(coordAddr, advertise string) (listen, host string) {
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

// Comm is the job's communicator for the rank's store: the coordinator's
// collectives and the peers' transports; nil for a job of one rank (the
// store then has its own).
func (r *Runtime) Comm() engine.Comm {
	if r.client == nil {
		return nil
	}
	return jobComm{r.client, r.peers}
}

// jobComm is the store's Comm over the job's coordinator and peers.
type jobComm struct {
	*coordnet.Client
	peers *peer.Node
}

func (c jobComm) SetTransport(ctx context.Context, members []int, epoch uint64) (redundancy.Transport, io.Closer, error) {
	return c.peers.OpenSet(ctx, members, epoch)
}

// Attach gives the runtime the engine of the store opened over Comm.
func (r *Runtime) Attach(e *engine.Engine) {
	r.eng = e
	if r.client == nil {
		r.node = e.Node
	}
}

// Rank, Size and Node are the rank's identity; Node is "" for a job of
// one rank until Attach.
func (r *Runtime) Rank() int    { return r.rank }
func (r *Runtime) Size() int    { return r.size }
func (r *Runtime) Node() string { return r.node }

// Incarnation is the launch's number.
func (r *Runtime) Incarnation() uint64 { return r.cfg.Incarnation }

// Halting reports that the job was asked to halt.
func (r *Runtime) Halting() bool { return r.halting }

// Barrier waits until every rank reached it: the coordinator's, or under
// the uncoordinated strategy an all-gather of the rank's logged messages.
func (r *Runtime) Barrier(ctx context.Context) error {
	if r.client == nil {
		return ctx.Err()
	}
	if r.u != nil {
		_, err := r.allGatherAlone(ctx, nil)
		return err
	}
	return r.client.Barrier(ctx)
}

// AllGather contributes data and returns every rank's: the coordinator's,
// or under the uncoordinated strategy built from the rank's logged
// messages (allGatherAlone).
func (r *Runtime) AllGather(ctx context.Context, data []byte) ([][]byte, error) {
	if r.client == nil {
		return group.Solo{}.AllGather(ctx, data)
	}
	if r.u != nil {
		return r.allGatherAlone(ctx, data)
	}
	return r.client.AllGather(ctx, data)
}

// Publish stores value under key in the coordinator's key–value service.
func (r *Runtime) Publish(ctx context.Context, key string, value []byte) error {
	if r.client == nil {
		return errors.New("ckpt: a job of one rank has no key–value service")
	}
	return r.client.Publish(ctx, key, value)
}

// Lookup returns key's value, waiting until some rank publishes it.
func (r *Runtime) Lookup(ctx context.Context, key string) ([]byte, error) {
	if r.client == nil {
		return nil, errors.New("ckpt: a job of one rank has no key–value service")
	}
	v, _, err := r.client.Lookup(ctx, key, true)
	return v, err
}

// Send sends msg to rank to.
func (r *Runtime) Send(ctx context.Context, to int, tag uint64, msg []byte) error {
	if r.peers == nil {
		return fmt.Errorf("ckpt: send to rank %d: a job of one rank has no peers", to)
	}
	if r.u != nil {
		if tag == CollectiveTag {
			return fmt.Errorf("ckpt: send to rank %d: tag %d is reserved for the collectives under the %s strategy", to, tag, jobenv.StrategyUncoordinated)
		}
		return r.sendAlone(ctx, to, tag, msg)
	}
	return r.peers.Send(ctx, to, tag, msg)
}

// Recv receives the next message from rank from into buf (if it fits).
func (r *Runtime) Recv(ctx context.Context, from int, tag uint64, buf []byte) ([]byte, error) {
	if r.peers == nil {
		return nil, fmt.Errorf("ckpt: receive from rank %d: a job of one rank has no peers", from)
	}
	if r.u != nil {
		// A Recv on the collectives' tag would pass the tag check on a
		// collective's message and take it from the collective.
		if tag == CollectiveTag {
			return nil, fmt.Errorf("ckpt: receive from rank %d: tag %d is reserved for the collectives under the %s strategy", from, tag, jobenv.StrategyUncoordinated)
		}
		return r.recvAlone(ctx, from, tag, buf)
	}
	return r.peers.Recv(ctx, from, tag, buf)
}

// NeedCheckpoint tells whether to checkpoint at step; every rank gets the
// same answer. Most calls return at once; at decision steps the ranks ask
// the coordinator together, which applies the job's policy to the slowest
// rank's measurements (a job of one rank decides for itself).
func (r *Runtime) NeedCheckpoint(ctx context.Context, step int64) (bool, error) {
	pol := r.cfg.Policy
	if r.u != nil {
		// The peers exchanged with up to here are the steps' pattern
		// (jobenv.KeyPeers), whatever the policy.
		r.u.stepDone()
	}
	if pol.Kind == policy.None {
		return false, nil
	}
	if r.u != nil {
		// Each rank decides alone: no round with the coordinator.
		return r.needAlone(step), nil
	}
	now := time.Since(r.start)
	// Every step is timed, in every mode: the idle steps' mean is the
	// job's speed measured in the run itself (flushstats.StepSeconds),
	// which ckpt demo sets against its failure-free reference run.
	r.timeStep()
	if r.local == nil {
		r.local = policy.NewLocal(pol, step, now)
	}
	if !r.local.Need(step) {
		return false, nil
	}
	rep := r.local.Report(step, now)
	var d policy.Decision
	if r.client == nil {
		d, r.solo = policy.Decide(pol, r.solo, []policy.Report{rep})
	} else {
		b, err := rep.MarshalBinary()
		if err != nil {
			return false, err
		}
		ans, err := r.client.Decide(ctx, b)
		if err != nil {
			return false, fmt.Errorf("ckpt: checkpoint decision at step %d: %w", step, err)
		}
		if err := d.UnmarshalBinary(ans); err != nil {
			return false, fmt.Errorf("ckpt: checkpoint decision at step %d: %w", step, err)
		}
	}
	r.local.Apply(d)
	if d.Interval > 0 {
		r.interval = d.Interval
	}
	// About once a second: flushes finish, and the timed steps accumulate,
	// between the checkpoints that publish them (publishFlush sends
	// nothing when nothing changed).
	r.publishFlush(ctx)
	if d.Halt {
		r.halting = true
	}
	return d.Checkpoint, nil
}

// Checkpoint takes checkpoint name collectively (see ckpt.Job.Checkpoint):
// it captures the messages in flight, save writes the rank's files, the
// engine commits, the flush goes if due, and the coordinator checks that
// every rank committed the same checkpoint. Errors of the engine's commit
// are returned as they are (engine.ErrConfig among them).
func (r *Runtime) Checkpoint(ctx context.Context, name string, save func(c *engine.Checkpoint) error) error {
	if r.Uncoordinated() {
		return errors.New("ckpt: under the uncoordinated strategy a rank checkpoints alone (CheckpointAlone)")
	}
	start := time.Since(r.start)
	r.sched.CheckpointBegins()
	var pending []peer.Pending
	if r.peers != nil {
		var err error
		if pending, err = r.peers.Drain(ctx, r.client); err != nil {
			return fmt.Errorf("ckpt: checkpoint %q: %w", name, err)
		}
		// The application goes on after the checkpoint and receives them.
		defer r.peers.Inject(pending)
	}
	c, err := r.eng.Start(name)
	if err != nil {
		return err
	}
	err = save(c)
	if err == nil && len(pending) > 0 {
		err = c.WriteReserved(engine.MessagesFile, peer.MarshalPending(pending))
	}
	if err != nil {
		// Every rank fails this checkpoint together (none is left waiting
		// in Commit), and the previous one stays current.
		return c.Fail(ctx, fmt.Errorf("ckpt: checkpoint %q: %w", name, err))
	}
	if err := c.Commit(ctx); err != nil {
		return err
	}
	r.sched.Committed()
	if r.eng.Shared != nil && r.flushIsDue(ctx) {
		if err := r.flushDue(ctx, name); err != nil {
			return fmt.Errorf("ckpt: checkpoint %q: flush: %w", name, err)
		}
	}
	if r.client != nil {
		if ok, err := r.client.Commit(ctx, name, true); err != nil {
			return fmt.Errorf("ckpt: checkpoint %q: %w", name, err)
		} else if !ok {
			return fmt.Errorf("ckpt: checkpoint %q: the ranks disagree on the checkpoint committed", name)
		}
	}
	r.lastCkptEnd = time.Since(r.start)
	r.sched.CheckpointEnds()
	if r.local != nil {
		r.local.Checkpointed(start, r.lastCkptEnd)
	}
	return nil
}

// Restart restores the newest checkpoint the job can recover (the
// engine's Restart, whose errors it returns as they are) and delivers
// again the messages that were in flight when it was taken; rank 0 tells
// the launcher where it restored from.
func (r *Runtime) Restart(ctx context.Context) (*engine.Restored, error) {
	if r.Uncoordinated() {
		return nil, errors.New("ckpt: under the uncoordinated strategy a rank restarts alone (RestartAlone)")
	}
	res, err := r.eng.Restart(ctx)
	if err != nil {
		if errors.Is(err, engine.ErrNoCheckpoint) && r.rank == 0 && r.client != nil {
			r.client.Publish(ctx, jobenv.KeyRestored, jobenv.Restored{Source: jobenv.SourceNone}.Encode())
		}
		return nil, err
	}
	if r.peers != nil && res.Has(engine.MessagesFile) {
		rd, err := res.Open(engine.MessagesFile)
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
		if err := r.peers.Inject(pending); err != nil {
			return nil, err
		}
	}
	if r.rank == 0 && r.client != nil {
		if err := r.client.Publish(ctx, jobenv.KeyRestored, jobenv.Restored{Source: string(res.Source), Checkpoint: res.Name()}.Encode()); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// Finish ends the rank's part in the job cleanly; rank 0 publishes result
// (one line) for the launcher.
func (r *Runtime) Finish(ctx context.Context, result string) error {
	if r.finished {
		return nil
	}
	r.finished = true
	if r.client == nil {
		return nil
	}
	if r.u != nil {
		return r.finishAlone(ctx, result)
	}
	if r.rank == 0 && result != "" {
		if err := r.client.Publish(ctx, jobenv.KeyResult, []byte(result)); err != nil {
			return err
		}
	}
	if r.halting {
		// A halted job resumes later from its last checkpoint, maybe on
		// other nodes: its flush must be durable before the ranks go.
		if err := r.WaitFlushes(ctx); err != nil {
			return fmt.Errorf("ckpt: halting: waiting for the last flush: %w", err)
		}
	}
	r.publishFlush(ctx)
	// Nobody leaves while a peer may still read what it sent.
	if err := r.client.Barrier(ctx); err != nil {
		return err
	}
	return r.client.Leave()
}

// Close releases the rank's connections (not the store, which the root
// closes). A rank that closes without Finish counts as failed.
func (r *Runtime) Close() error {
	var errs []error
	// The driver first: its readers and writers use the peers' node.
	errs = append(errs, r.u.close())
	if r.stager != nil {
		// Flushes under way stay with their servers; a relaunched rank's
		// client takes them up again.
		errs = append(errs, r.stager.Cancel())
	}
	if r.client != nil {
		errs = append(errs, r.client.Close())
	}
	if r.peers != nil {
		errs = append(errs, r.peers.Close())
	}
	return errors.Join(errs...)
}
