package rank

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ckpt/ckpt/internal/engine"
	"github.com/ckpt/ckpt/internal/jobenv"
	"github.com/ckpt/ckpt/internal/msglog/logstore"
	"github.com/ckpt/ckpt/internal/placement"
	"github.com/ckpt/ckpt/internal/policy"
	"github.com/ckpt/ckpt/internal/uncoord"
	"github.com/ckpt/ckpt/storage"
)

// The uncoordinated strategy (jobenv.StrategyUncoordinated,
// docs/MESSAGE-LOGGING.md): the rank's messages go through an
// uncoord.Rank, which logs every message it receives at the rank's
// protector before the application sees it; the rank checkpoints alone
// (uncoord.Checkpoints), decides alone when (policy.Own), and a rank
// restarted alone (Config.RecoverAlone) recovers from its own checkpoint
// and log while the others go on.
//
// None of it uses the coordinator's collectives: after a lone recovery
// the coordinator aborts any collective (a restarted process has no
// place in their sequence). The application's Barrier and AllGather are
// built from the rank's logged messages instead, on CollectiveTag
// (uncoord.AllGather), so that a rank recovering alone re-executes them
// against its log. The ranks meet only in the coordinator's key–value
// service, which has no sequence: each publishes its node, failure
// domain and cache (keyMember), from which every rank finds its
// protector (uncoord.ProtectorOf) without waiting for the others to do
// the same; and Finish waits for every rank's keyDone, then leaves.

// keyMember is where a rank publishes its node, failure domain and cache
// directory (encodeMember), keyDone where it says it finished.
func keyMember(rank int) string { return "ckpt/uncoord/member/" + strconv.Itoa(rank) }
func keyDone(rank int) string   { return "ckpt/uncoord/done/" + strconv.Itoa(rank) }

// member is a rank's place, as keyMember publishes it.
type member struct {
	placement.Member
	Cache string
}

func (m member) encode() []byte {
	return []byte(m.Node + "\n" + m.Domain + "\n" + m.Cache)
}

func decodeMember(rank int, b []byte) (member, error) {
	f := strings.Split(string(b), "\n")
	if len(f) != 3 || f[0] == "" || f[2] == "" {
		return member{}, fmt.Errorf("rank %d's place %q: want NODE, DOMAIN and CACHE on three lines", rank, b)
	}
	return member{Member: placement.Member{Rank: rank, Node: f[0], Domain: f[1]}, Cache: f[2]}, nil
}

// uncoordinated is a rank's state under the strategy.
type uncoordinated struct {
	// mu guards the driver's start, which Send and Recv, concurrent,
	// may both attempt (a rank restarted alone that did not call Restart).
	mu      sync.Mutex
	self    member
	members []member // every rank's, once learnt
	drv     *uncoord.Rank
	log     logstore.Store
	ckpts   uncoord.Checkpoints
	prot    uncoord.FileProtectors
	own     *policy.Own
	step    int64              // the step of the last NeedCheckpoint
	base    jobenv.MsgLogStats // the rank's earlier processes' in this launch
	load    time.Duration      // t_l of a lone recovery
	loaded  bool               // a lone recovery loaded a checkpoint
	restart bool               // Restart ran
	nCkpts  int64              // checkpoints this process took
	ckptDur time.Duration      // and their time (t_c)
	// unprotected: the rank's protector was lost with its log and
	// checkpoint copy (its node lost); its next checkpoint, which
	// NeedCheckpoint asks for at once, re-protects it.
	unprotected bool

	// peersMu guards the ranks this rank exchanged messages with: talk
	// since the start (its earlier processes' in the launch included),
	// stepTalk as it was at its last NeedCheckpoint (what it publishes:
	// the steps' pattern, not a gather after the last step); known is
	// false until there is a pattern to publish.
	peersMu  sync.Mutex
	talk     map[int]bool
	changed  bool
	stepTalk []int
	known    bool
}

// talked records an exchange with peer.
func (u *uncoordinated) talked(peer int) {
	u.peersMu.Lock()
	defer u.peersMu.Unlock()
	if u.talk == nil {
		u.talk = map[int]bool{}
	}
	if !u.talk[peer] {
		u.talk[peer], u.changed = true, true
	}
}

// inherit takes the pattern an earlier process of the rank published.
func (u *uncoordinated) inherit(peers []int) {
	for _, p := range peers {
		u.talked(p)
	}
	u.stepDone()
}

// stepDone takes the peers exchanged with so far as the steps' pattern
// (sorted again only when a peer was added).
func (u *uncoordinated) stepDone() {
	u.peersMu.Lock()
	defer u.peersMu.Unlock()
	u.known = true
	if !u.changed {
		return
	}
	u.changed = false
	u.stepTalk = u.stepTalk[:0]
	for p := range u.talk {
		u.stepTalk = append(u.stepTalk, p)
	}
	slices.Sort(u.stepTalk)
}

// peers is what stepDone took last; false before any.
func (u *uncoordinated) peers() ([]int, bool) {
	u.peersMu.Lock()
	defer u.peersMu.Unlock()
	return slices.Clone(u.stepTalk), u.known
}

// Uncoordinated reports that the rank runs under the uncoordinated
// strategy.
func (r *Runtime) Uncoordinated() bool { return r.cfg.Strategy == jobenv.StrategyUncoordinated }

// RecoveringAlone reports that this process restarts a rank alone
// (Config.RecoverAlone).
func (r *Runtime) RecoveringAlone() bool { return r.Uncoordinated() && r.cfg.RecoverAlone }

// StartStrategy sets up the strategy once the store is attached (the
// root's Join calls it): under the uncoordinated strategy the rank
// publishes its place and, in a new launch, starts from the beginning
// with a fresh log and no checkpoint of an earlier launch (a consistent
// set of uncoordinated checkpoints is not searched for). A rank
// restarted alone starts its driver in Restart.
func (r *Runtime) StartStrategy(ctx context.Context) error {
	if !r.Uncoordinated() {
		return nil
	}
	if r.client == nil {
		return fmt.Errorf("ckpt: the %s strategy needs a job of several processes: start it with 'ckpt run --strategy %[1]s'", jobenv.StrategyUncoordinated)
	}
	cache, ok := r.eng.Cache.(interface{ Root() string })
	if !ok {
		return fmt.Errorf("ckpt: the %s strategy needs the node's cache on a file system", jobenv.StrategyUncoordinated)
	}
	u := &uncoordinated{self: member{Member: placement.Member{Rank: r.rank, Node: r.eng.Node, Domain: r.eng.Domain}, Cache: cache.Root()}}
	u.ckpts = uncoord.Checkpoints{Dirs: func(rank int) ([]string, error) {
		own, prot, err := u.dirs(rank)
		if err != nil || own == prot {
			return []string{own}, err
		}
		return []string{own, prot}, nil
	}}
	u.prot = logProtectors(r.eng.Cache, func(rank int) (string, error) {
		_, prot, err := u.dirs(rank)
		return prot, err
	})
	r.u = u
	if err := r.client.Publish(ctx, keyMember(r.rank), u.self.encode()); err != nil {
		return fmt.Errorf("ckpt: rank %d: publish its place: %w", r.rank, err)
	}
	if err := r.learnMembers(ctx); err != nil {
		return err
	}
	if r.cfg.RecoverAlone {
		// The coordinator's key–value service lives as long as the launch:
		// without keyFresh, this rank's earlier process in the launch was
		// lost before its fresh start removed the checkpoint and the log of
		// an earlier launch, which its directories may still hold. Loaded,
		// they would resume it at a step its peers are not at and replay
		// messages they never sent in this launch: it starts from the
		// beginning instead, with a fresh log.
		_, fresh, err := r.client.Lookup(ctx, keyFresh(r.rank), false)
		if err != nil {
			return fmt.Errorf("ckpt: rank %d: its fresh start in this launch: %w", r.rank, err)
		}
		if fresh {
			return nil
		}
		return r.freshStart(ctx)
	}
	if err := r.freshStart(ctx); err != nil {
		return err
	}
	return r.startDriver(ctx, false, nil)
}

// keyFresh is where a rank says, once per launch, that its checkpoint and
// log of an earlier launch are gone (freshStart).
func keyFresh(rank int) string { return "ckpt/uncoord/fresh/" + strconv.Itoa(rank) }

// freshStart removes the rank's checkpoint and log of an earlier launch
// (a consistent set of uncoordinated checkpoints is not searched for)
// and then says so (keyFresh), before the rank receives anything.
func (r *Runtime) freshStart(ctx context.Context) error {
	u := r.u
	if err := errors.Join(u.ckpts.Remove(r.rank), u.prot.RemoveLog(r.rank)); err != nil {
		return fmt.Errorf("ckpt: rank %d: a fresh start: %w", r.rank, err)
	}
	if err := r.client.Publish(ctx, keyFresh(r.rank), []byte{1}); err != nil {
		return fmt.Errorf("ckpt: rank %d: a fresh start: %w", r.rank, err)
	}
	return nil
}

// learnMembers looks up every rank's place, waiting for those not
// published yet.
func (r *Runtime) learnMembers(ctx context.Context) error {
	u := r.u
	u.members = make([]member, r.size)
	for p := range r.size {
		if p == r.rank {
			u.members[p] = u.self
			continue
		}
		v, _, err := r.client.Lookup(ctx, keyMember(p), true)
		if err != nil {
			return fmt.Errorf("ckpt: rank %d: rank %d's place: %w", r.rank, p, err)
		}
		if u.members[p], err = decodeMember(p, v); err != nil {
			return fmt.Errorf("ckpt: rank %d: %w", r.rank, err)
		}
	}
	return nil
}

// dirs are the cache directories of rank's node and of its protector's
// (RADIC's ring over the failure domains: uncoord.ProtectorOf); its own
// twice when every rank shares its domain (nothing can protect it).
func (u *uncoordinated) dirs(rank int) (own, prot string, err error) {
	if rank < 0 || rank >= len(u.members) || u.members[rank].Cache == "" {
		return "", "", fmt.Errorf("rank %d's place is not known", rank)
	}
	ms := make([]placement.Member, len(u.members))
	for i, m := range u.members {
		ms[i] = m.Member
	}
	own = u.members[rank].Cache
	if p, ok := uncoord.ProtectorOf(ms, rank); ok {
		return own, u.members[p].Cache, nil
	}
	return own, own, nil
}

// startDriver opens the rank's log at its protector and starts its
// driver; restarted, from snapshot saved (nil: the beginning).
func (r *Runtime) startDriver(ctx context.Context, restarted bool, saved []byte) error {
	u := r.u
	log, err := u.prot.OpenLog(r.rank)
	if err != nil {
		if restarted {
			// A log that cannot be opened (damaged header) cannot serve.
			return fmt.Errorf("ckpt: rank %d: %w: its message log: %w", r.rank, uncoord.ErrCannotServe, err)
		}
		return fmt.Errorf("ckpt: rank %d: its message log: %w", r.rank, err)
	}
	drv, err := uncoord.Start(ctx, uncoord.Config{Rank: r.rank, Size: r.size, Net: r.peers, Log: log,
		Restarted: restarted, Saved: saved})
	if err != nil {
		log.Close()
		return fmt.Errorf("ckpt: rank %d: %w", r.rank, err)
	}
	u.drv, u.log = drv, log
	return nil
}

// driver is the rank's driver, started (restarted alone, from the
// beginning) if Restart did not. From the beginning, not from the rank's
// checkpoint: a program that did not call Restart did not restore its
// state, so its driver must deliver every message again from the first
// (its log replays them, or cannot serve once truncated behind a
// checkpoint), never resume behind the checkpoint.
func (r *Runtime) driver(ctx context.Context) (*uncoord.Rank, error) {
	if r.u == nil {
		return nil, errors.New("ckpt: the uncoordinated strategy was not started (StartStrategy)")
	}
	r.u.mu.Lock()
	defer r.u.mu.Unlock()
	if r.u.drv == nil {
		if _, err := r.restartAlone(ctx, false); err != nil && !errors.Is(err, engine.ErrNoCheckpoint) {
			return nil, err
		}
		if r.u.drv == nil {
			return nil, errors.New("ckpt: the rank's message-logging driver did not start")
		}
	}
	return r.u.drv, nil
}

// restartAlone is Restart under the strategy: in a new launch, a start
// from the beginning; in a rank restarted alone, its own checkpoint
// loaded (uncoord.Checkpoints.Load) and its driver restarted from it,
// which replays its log and meets its peers. Its errors wrap
// uncoord.ErrCannotServe when the checkpoint or the log cannot serve
// (the rank then exits with jobenv.ExitCannotServe, and the launcher
// relaunches the whole job). Without fromCheckpoint a rank restarted
// alone ignores its checkpoint and restarts its driver from the
// beginning (driver).
func (r *Runtime) restartAlone(ctx context.Context, fromCheckpoint bool) ([]byte, error) {
	u := r.u
	if u.restart {
		return nil, errors.New("ckpt: Restart called twice")
	}
	u.restart = true
	if !r.cfg.RecoverAlone {
		if r.rank == 0 {
			r.client.Publish(ctx, jobenv.KeyRestored, jobenv.Restored{Source: jobenv.SourceNone}.Encode())
		}
		return nil, fmt.Errorf("%w: a new launch under the %s strategy starts every rank from the beginning", engine.ErrNoCheckpoint, jobenv.StrategyUncoordinated)
	}
	// What this rank's previous processes in the launch measured.
	if v, ok, err := r.client.Lookup(ctx, jobenv.KeyMsgLog(r.rank), false); err == nil && ok {
		u.base, _ = jobenv.DecodeMsgLogStats(v)
	}
	if v, ok, err := r.client.Lookup(ctx, jobenv.KeyPeers(r.rank), false); err == nil && ok {
		if peers, err := jobenv.DecodePeers(v); err == nil {
			u.inherit(peers)
		}
	}
	if !fromCheckpoint {
		return nil, r.startDriver(ctx, true, nil)
	}
	t0 := time.Now()
	state, snap, err := u.ckpts.Load(r.rank)
	none := errors.Is(err, uncoord.ErrNoCheckpoint)
	if err != nil && !none {
		return nil, fmt.Errorf("ckpt: rank %d: %w", r.rank, err)
	}
	u.load, u.loaded = time.Since(t0), !none
	if err := r.startDriver(ctx, true, snap); err != nil {
		return nil, err
	}
	if none {
		return nil, fmt.Errorf("%w: rank %d had taken none, it starts again from the beginning", engine.ErrNoCheckpoint, r.rank)
	}
	return state, nil
}

// RestartAlone is Restart under the uncoordinated strategy (see
// restartAlone): the state the application saved with CheckpointAlone,
// or an error wrapping engine.ErrNoCheckpoint for a start from the
// beginning.
func (r *Runtime) RestartAlone(ctx context.Context) ([]byte, error) {
	if r.u == nil {
		return nil, errors.New("ckpt: the uncoordinated strategy was not started (StartStrategy)")
	}
	r.u.mu.Lock()
	defer r.u.mu.Unlock()
	return r.restartAlone(ctx, true)
}

// CheckpointAlone takes the rank's own checkpoint: the driver's snapshot
// (its delivery point, its sender's state and the messages delivered and
// not yet received), the state save returns, both saved in the rank's
// node's cache and its protector's (Checkpoints.Save), and only then the
// log truncated behind the snapshot (Protected). No barrier, no drain,
// no vote. save must not send or receive.
func (r *Runtime) CheckpointAlone(ctx context.Context, save func() ([]byte, error)) error {
	drv, err := r.driver(ctx)
	if err != nil {
		return err
	}
	if r.protectorLost() {
		// Seen by NeedCheckpoint, or now (a program that checkpoints
		// without asking).
		return r.reprotect(ctx, drv, save)
	}
	start := time.Since(r.start)
	snap := drv.Checkpoint()
	state, err := save()
	if err != nil {
		return err
	}
	if err := r.u.ckpts.Save(r.rank, state, snap.Bytes()); err != nil {
		return fmt.Errorf("ckpt: rank %d: %w", r.rank, err)
	}
	if err := drv.Protected(snap); err != nil {
		if lost, _ := r.u.prot.Lost(r.rank); lost {
			// Its protector's node was lost between the look above
			// and the truncation: the driver stopped on the log,
			// and the rank cannot go on. The whole job must be
			// relaunched (jobenv.ExitCannotServe), not given up on.
			return fmt.Errorf("ckpt: rank %d: %w: its protector was lost with its log during its checkpoint: %w", r.rank, uncoord.ErrCannotServe, err)
		}
		return fmt.Errorf("ckpt: rank %d: %w", r.rank, err)
	}
	end := time.Since(r.start)
	r.ownPolicy().Checkpointed(r.u.step, start, end)
	r.u.nCkpts++
	r.u.ckptDur += end - start
	r.publishMsgLog(ctx)
	return nil
}

// ownPolicy is the rank's own checkpoint policy, made at its first use.
func (r *Runtime) ownPolicy() *policy.Own {
	u := r.u
	if u.own == nil {
		failures := int64(0)
		if r.cfg.RecoverAlone {
			failures = 1
		}
		// -1: the first step may checkpoint, even the one a restarted rank
		// resumes at (a checkpoint more, never one lost).
		u.own = policy.NewOwn(r.cfg.Policy, -1, time.Since(r.start), failures)
		if u.drv != nil && r.cfg.RecoverAlone {
			u.own.Recovered(u.load, u.drv.Stats().LogReplay)
		}
	}
	return u.own
}

// needAlone is NeedCheckpoint under the strategy: the rank decides alone
// (policy.Own), without a round.
func (r *Runtime) needAlone(step int64) bool {
	r.u.step = step
	need := r.ownPolicy().Need(step, time.Since(r.start))
	return r.protectorLost() || need
}

// protectorLost reports that the rank must re-protect: its log is gone
// from its protector's cache, lost with the protector's node. Until it
// re-protects a failure of the rank cannot be served (its log is gone:
// the restarted process exits with jobenv.ExitCannotServe and the whole
// job is relaunched), so it re-protects at its next checkpoint, which
// NeedCheckpoint asks for at once. One stat of the log's file a step.
func (r *Runtime) protectorLost() bool {
	u := r.u
	if u.unprotected {
		return true
	}
	if u.drv == nil {
		return false
	}
	own, prot, err := u.dirs(r.rank)
	if err != nil || own == prot {
		// One failure domain: the log is in the rank's own cache, lost
		// only with the rank.
		return false
	}
	lost, err := u.prot.Lost(r.rank)
	u.unprotected = err == nil && lost
	return u.unprotected
}

// reprotect is CheckpointAlone for a rank whose protector was lost: the
// ring is re-formed over the placement now (uncoord.ProtectorOf over the
// places the ranks published: the lost ranks' new processes published
// theirs), and the driver takes the checkpoint, saved at the rank's node
// and its new protector, and starts the new log there from its point
// (uncoord.Rank.Reprotect); the lost log is not needed any more.
func (r *Runtime) reprotect(ctx context.Context, drv *uncoord.Rank, save func() ([]byte, error)) error {
	u := r.u
	start := time.Since(r.start)
	if err := r.learnMembers(ctx); err != nil {
		return err
	}
	state, err := save()
	if err != nil {
		return err
	}
	var log logstore.Store
	err = drv.Reprotect(func(base uint64) (logstore.Store, error) {
		l, err := u.prot.NewLog(r.rank, base)
		log = l
		return l, err
	}, func(s uncoord.Snapshot) error { return u.ckpts.Save(r.rank, state, s.Bytes()) })
	if err != nil {
		return fmt.Errorf("ckpt: rank %d: %w", r.rank, err)
	}
	u.log, u.unprotected = log, false
	_, prot, _ := u.dirs(r.rank)
	// Said, as a flush's trouble is: a node loss's consequence a user
	// wants to see.
	fmt.Fprintf(os.Stderr, "rank %d: its protector's node was lost with its log: re-protected at step %d (checkpoint and new log in %s)\n", r.rank, u.step, prot)
	end := time.Since(r.start)
	r.ownPolicy().Checkpointed(u.step, start, end)
	u.nCkpts++
	u.ckptDur += end - start
	r.publishMsgLog(ctx)
	return nil
}

// msgLog is what the rank's message logging cost so far, its earlier
// processes' in the launch included.
func (r *Runtime) msgLog() jobenv.MsgLogStats {
	s := r.u.base
	if r.u.drv != nil {
		st := r.u.drv.Stats()
		s = s.Add(jobenv.MsgLogStats{Protect: st.LogProtect, Replay: st.LogReplay})
	}
	s = s.Add(jobenv.MsgLogStats{Checkpoints: r.u.nCkpts, CheckpointTime: r.u.ckptDur})
	if r.u.loaded {
		s = s.Add(jobenv.MsgLogStats{Loads: 1, LoadTime: r.u.load})
	}
	return s
}

// MsgLogStats is what the rank's message logging cost so far (zero under
// the coordinated strategy).
func (r *Runtime) MsgLogStats() jobenv.MsgLogStats {
	if r.u == nil {
		return jobenv.MsgLogStats{}
	}
	return r.msgLog()
}

// publishMsgLog tells the launcher what the rank's logging cost
// (jobenv.KeyMsgLog); best effort, as the flush statistics.
func (r *Runtime) publishMsgLog(ctx context.Context) {
	// Before its first step a rank has no pattern: it publishes none
	// rather than "nobody", and φ stays unmeasured.
	if peers, ok := r.u.peers(); ok {
		r.client.Publish(ctx, jobenv.KeyPeers(r.rank), jobenv.EncodePeers(peers))
	}
	r.client.Publish(ctx, jobenv.KeyMsgLog(r.rank), r.msgLog().Encode())
}

// logProtectors keeps the logs in the directories dir names, as durable
// as the job's cache (JobOptions' Store CacheDurability,
// CKPT_CACHE_DURABILITY): synced under node durability, in the protector's
// page cache under process durability (uncoord.FileProtectors says why
// that keeps the pessimistic guarantee).
func logProtectors(cache storage.Backend, dir func(rank int) (string, error)) uncoord.FileProtectors {
	return uncoord.FileProtectors{Dir: dir, NoSync: !storage.PropertiesOf(cache).SyncsFiles}
}

// CollectiveTag is the tag of the messages of the collectives under the
// strategy (Barrier, AllGather: uncoord.AllGather). It is reserved: an
// application's Send or Recv with it is refused, so that a collective's message
// is never taken for the application's (the tag checks, it does not
// select).
const CollectiveTag = math.MaxUint64

// collectiveP2P is the rank's logged messages on CollectiveTag.
type collectiveP2P struct{ r *Runtime }

func (c collectiveP2P) Send(ctx context.Context, to int, data []byte) error {
	return c.r.sendAlone(ctx, to, CollectiveTag, data)
}

func (c collectiveP2P) Recv(ctx context.Context, from int) ([]byte, error) {
	return c.r.recvAlone(ctx, from, CollectiveTag, nil)
}

// allGatherAlone is AllGather under the strategy, from the rank's logged
// messages. A collective makes every rank depend on every other: each
// counts as a peer exchanged with (φ, jobenv.KeyPeers), not only rank 0
// whom the messages go through.
func (r *Runtime) allGatherAlone(ctx context.Context, data []byte) ([][]byte, error) {
	if _, err := r.driver(ctx); err != nil {
		return nil, err
	}
	for p := range r.size {
		if p != r.rank {
			r.u.talked(p)
		}
	}
	all, err := uncoord.AllGather(ctx, collectiveP2P{r}, r.rank, r.size, data)
	if err != nil {
		return nil, fmt.Errorf("ckpt: rank %d: %w", r.rank, err)
	}
	return all, nil
}

// appTag prefixes a message with the application's tag: the driver has
// one channel per pair of ranks, and the tag checks, as the Transport
// contract says, it does not select.
func appTag(tag uint64, msg []byte) []byte {
	b := make([]byte, 8, 8+len(msg))
	binary.LittleEndian.PutUint64(b, tag)
	return append(b, msg...)
}

func (r *Runtime) sendAlone(ctx context.Context, to int, tag uint64, msg []byte) error {
	drv, err := r.driver(ctx)
	if err != nil {
		return err
	}
	r.u.talked(to)
	return drv.Send(ctx, to, appTag(tag, msg))
}

func (r *Runtime) recvAlone(ctx context.Context, from int, tag uint64, buf []byte) ([]byte, error) {
	drv, err := r.driver(ctx)
	if err != nil {
		return nil, err
	}
	r.u.talked(from)
	m, err := drv.Recv(ctx, from)
	if err != nil {
		return nil, err
	}
	if len(m) < 8 {
		return nil, fmt.Errorf("ckpt: rank %d: a message from rank %d without its tag", r.rank, from)
	}
	if got := binary.LittleEndian.Uint64(m); got != tag {
		return nil, fmt.Errorf("ckpt: rank %d: the next message from rank %d has tag %d, not %d", r.rank, from, got, tag)
	}
	m = m[8:]
	if len(m) <= cap(buf) {
		return append(buf[:0], m...), nil
	}
	return append([]byte(nil), m...), nil
}

// finishAlone is Finish under the strategy: the rank's frames all handed
// to the network, its result and statistics published, and then it waits
// for every rank to say it finished — its driver still answering a peer
// that restarts — before it leaves. No collective: a lone recovery may
// have happened.
func (r *Runtime) finishAlone(ctx context.Context, result string) error {
	drv, err := r.driver(ctx)
	if err != nil {
		return err
	}
	if err := drv.Flush(ctx); err != nil {
		return err
	}
	if r.rank == 0 && result != "" {
		if err := r.client.Publish(ctx, jobenv.KeyResult, []byte(result)); err != nil {
			return err
		}
	}
	r.publishMsgLog(ctx)
	if err := r.client.Publish(ctx, keyDone(r.rank), []byte{1}); err != nil {
		return err
	}
	for p := range r.size {
		if _, _, err := r.client.Lookup(ctx, keyDone(p), true); err != nil {
			return fmt.Errorf("ckpt: rank %d: waiting for rank %d to finish: %w", r.rank, p, err)
		}
	}
	return r.client.Leave()
}

// closeAlone stops the driver and closes the log.
func (u *uncoordinated) close() error {
	if u == nil || u.drv == nil {
		return nil
	}
	u.drv.Close()
	return u.log.Close()
}
