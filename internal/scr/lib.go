package scr

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ckpt/ckpt/internal/cachetier"
	"github.com/ckpt/ckpt/internal/engine"
	"github.com/ckpt/ckpt/internal/jobenv"
	"github.com/ckpt/ckpt/internal/localcomm"
	"github.com/ckpt/ckpt/internal/manifest"
	"github.com/ckpt/ckpt/internal/sharedtier"
	"github.com/ckpt/ckpt/internal/storage/local"
	"github.com/ckpt/ckpt/storage"
)

// ErrDisabled is SCR_Init's failure under SCR_ENABLE=0.
var ErrDisabled = errors.New("SCR_ENABLE=0: SCR is disabled")

// Setup is what a rank's Lib is opened with.
type Setup struct {
	Rank, Size int
	// Node is the rank's node (its cache and failure domain); "" chooses
	// as the C API does: node<rank mod K> under CKPT_SCR_NODES=K, else
	// the host name.
	Node string
	// Comm reaches the other ranks (nil for a job of one rank).
	Comm engine.Comm
	// Params are the parameters, with what SCR_Config set before Init.
	Params *Params
	// Cwd resolves relative routed names and the default prefix.
	Cwd string
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Halting, if set, says the job was asked to halt (ckpt halt under
	// ckpt run, learnt at Decide's rounds).
	Halting func() bool
	// Decide, if set, is ckpt's own checkpoint policy (CKPT_INTERVAL,
	// "auto" for Daly's interval), asked at every Need_checkpoint with
	// the number of calls so far: its yes counts too.
	Decide func(ctx context.Context, step int64) (bool, error)
}

// Lib is one rank's SCR library: the state machine and the dataset
// being written or read, over the engine.
type Lib struct {
	rank, size int
	node       string
	comm       engine.Comm
	params     *Params
	cwd        string
	prefix     string
	now        func() time.Time
	halting    func() bool
	decide     func(ctx context.Context, step int64) (bool, error)
	needCalls  int64
	eng        *engine.Engine
	cache      storage.Backend
	index      Index
	indexPath  string
	// indexDirty: the index changed since rank 0 last wrote it (a
	// dataset of no files; see CompleteOutput).
	indexDirty bool
	flushEvery int
	bypass     bool
	debug      bool
	end        time.Time
	haltBefore time.Duration
	decider    Decider

	state State
	// The dataset of an open output or checkpoint phase.
	out  *engine.Checkpoint
	outE Entry
	// committing is the dataset being committed (engine.Eligible's
	// answer for it comes from its flags).
	committing *Entry
	// replacing is the older dataset of the open one's name, removed
	// once the open one is committed (see reuse).
	replacing *Entry
	routed    map[string]string // key → path in the cache
	lastCk    *Entry            // the newest checkpoint committed by this run, unflushed
	restart   *engine.Restored  // loaded by Have_restart
	resName   string
	// lastSource is where the last restart found its checkpoint (cache,
	// rebuild, shared).
	lastSource string
	done       bool // a restart completed, or a dataset was written: Have_restart says no
	// firstID is the first dataset id of this run: older ones were written
	// by earlier runs.
	firstID uint64
}

// Enabled says whether SCR_ENABLE lets SCR run.
func Enabled(p *Params) bool {
	v, _ := p.Int("SCR_ENABLE", 1)
	return v != 0
}

// NodeFor is the C API's node of rank of size: node<rank mod K> under
// CKPT_SCR_NODES=K (simulated nodes on one host), else the node ckpt run
// gave the rank (CKPT_NODE), else the node its rank falls on in the
// launch's node mapping (CKPT_NODES, which ckpt run --launcher mpirun or
// srun gives every rank alike: jobenv.NodeOf's blocks), else host.
func NodeFor(p *Params, rank, size int, host string) (string, error) {
	k, err := p.Int(jobenv.VarSCRNodes, 0)
	if err != nil {
		return "", err
	}
	if k > 0 {
		return fmt.Sprintf("node%d", rank%k), nil
	}
	if n, ok := p.Get(jobenv.VarNode); ok && n != "" {
		return n, nil
	}
	if v, ok := p.Get(jobenv.VarNodes); ok && v != "" {
		nodes := jobenv.ParseNodes(v)
		if nodes == nil || len(nodes) > size {
			return "", fmt.Errorf("%s=%q: want at most %d nodes (one per rank), as a count or NAME,NAME,...", jobenv.VarNodes, v, size)
		}
		return nodes[jobenv.NodeOf(rank, size, len(nodes))], nil
	}
	return host, nil
}

// JobID is SCR_JOB_ID, else the batch system's job id, else defjobid.
func JobID(p *Params) string {
	for _, k := range []string{"SCR_JOB_ID", "SLURM_JOBID", "PBS_JOBID", "LSB_JOBID", "FLUX_JOB_ID"} {
		if v, ok := p.Get(k); ok && v != "" {
			return v
		}
	}
	return "defjobid"
}

// CacheDir is node's cache: $SCR_CACHE_BASE/ckpt.$SCR_JOB_ID/node, or,
// under ckpt run, the node's cache it gave the rank (CKPT_CACHE), or the
// node's under the caches' root it gave every rank (CKPT_CACHE_ROOT/node,
// under --launcher mpirun or srun), so that its node failures are the SCR
// caches' too. Simulated nodes (CKPT_SCR_NODES) have caches of their own
// whatever CKPT_CACHE says.
func CacheDir(p *Params, node string) string {
	if k, _ := p.Int(jobenv.VarSCRNodes, 0); k <= 0 {
		if c, ok := p.Get(jobenv.VarCache); ok && c != "" {
			return c
		}
		if root, ok := p.Get(jobenv.VarCacheRoot); ok && root != "" {
			return filepath.Join(root, node)
		}
	}
	base, ok := p.Get("SCR_CACHE_BASE")
	if !ok || base == "" {
		base = os.TempDir()
	}
	return filepath.Join(base, "ckpt."+JobID(p), node)
}

// SharedDir is where ckpt's shared tier lives under the prefix; IndexFile
// the dataset index.
func SharedDir(prefix string) string { return filepath.Join(prefix, ".ckpt") }
func IndexFile(prefix string) string { return filepath.Join(prefix, ".ckpt", "scr-index.json") }

// HaltFile is the file whose existence halts the job: SCR_Should_exit and
// SCR_Need_checkpoint say yes (an operator's touch, or ckpt halt under
// ckpt run).
func HaltFile(prefix string) string { return filepath.Join(prefix, ".ckpt", "halt") }

// Open is SCR_Init's part in Go (collective): it reads the parameters,
// opens the node's cache and the prefix's shared tier, learns every rank's
// node and rank 0's index. It returns ErrDisabled under SCR_ENABLE=0.
func Open(ctx context.Context, s Setup) (*Lib, error) {
	p := s.Params
	if err := p.LoadFile(s.Cwd); err != nil {
		return nil, err
	}
	if !Enabled(p) {
		return nil, ErrDisabled
	}
	l := &Lib{rank: s.Rank, size: s.Size, node: s.Node, comm: s.Comm, params: p, cwd: s.Cwd,
		prefix: p.Prefix(s.Cwd), now: s.Now, halting: s.Halting, decide: s.Decide, routed: map[string]string{}}
	if l.now == nil {
		l.now = time.Now
	}
	if l.comm == nil {
		l.comm = localcomm.Solo{}
	}
	var err error
	if l.node == "" {
		host, _ := os.Hostname()
		if l.node, err = NodeFor(p, l.rank, l.size, host); err != nil {
			return nil, err
		}
	}
	if err := l.readParams(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(SharedDir(l.prefix), 0o755); err != nil {
		return nil, fmt.Errorf("the prefix: %w", err)
	}
	var opts []local.Option
	switch d, _ := p.Get(jobenv.VarCacheDurability); d {
	case "", "node":
	case "process":
		// Written and renamed, never synced: a committed checkpoint
		// survives the processes' crash, not the node's.
		opts = append(opts, local.WithoutSync())
	default:
		return nil, fmt.Errorf("%s=%q: want node or process", jobenv.VarCacheDurability, d)
	}
	cache, err := local.New(CacheDir(p, l.node), opts...)
	if err != nil {
		return nil, fmt.Errorf("the cache: %w", err)
	}
	shared, err := local.New(SharedDir(l.prefix))
	if err != nil {
		cache.Close()
		return nil, fmt.Errorf("the prefix: %w", err)
	}
	l.cache = cache
	l.indexPath = IndexFile(l.prefix)

	// Every rank learns every node (for the sets' width) and rank 0's
	// index (the prefix may be seen differently, or late, elsewhere).
	mine := hello{Node: l.node}
	if l.rank == 0 {
		b, err := os.ReadFile(l.indexPath)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			mine.Err = err.Error()
		}
		mine.Index = b
	}
	all, err := engine.GatherJSON(ctx, l.comm, mine)
	if err != nil {
		cache.Close()
		return nil, err
	}
	if all[0].Err != "" {
		cache.Close()
		return nil, fmt.Errorf("the dataset index: %s", all[0].Err)
	}
	if l.index, err = DecodeIndex(all[0].Index); err != nil {
		cache.Close()
		return nil, err
	}
	if cur, ok := p.Get("SCR_CURRENT"); ok && cur != "" {
		l.index.Current = cur
	}
	l.firstID = l.index.LastID + 1
	nodes := map[string]bool{}
	for _, h := range all {
		nodes[h.Node] = true
	}
	scheme, err := p.Scheme(len(nodes))
	if err != nil {
		cache.Close()
		return nil, err
	}
	l.eng = engine.New(engine.Config{Rank: l.rank, Size: l.size, Node: l.node, Cache: cache, Shared: shared,
		Scheme: scheme, KeepCache: 2, Comm: l.comm})
	l.eng.Eligible = func(obj string, _ uint64) bool {
		if l.committing != nil && l.committing.ObjectName() == obj {
			// Retention during its own commit: the index has it not yet.
			return l.committing.Flags&FlagCheckpoint != 0
		}
		return l.index.Eligible(l.index.NameOf(obj))
	}
	l.state = Idle
	return l, nil
}

type hello struct {
	Node  string `json:"node"`
	Index []byte `json:"index,omitempty"`
	Err   string `json:"err,omitempty"`
}

func (l *Lib) readParams() error {
	p := l.params
	var err error
	get := func(key string, def int) int {
		v, e := p.Int(key, def)
		err = errors.Join(err, e)
		return v
	}
	getf := func(key string) float64 {
		v, e := p.Float(key, 0)
		err = errors.Join(err, e)
		return v
	}
	l.flushEvery = get("SCR_FLUSH", 10)
	l.bypass = get("SCR_CACHE_BYPASS", 0) != 0
	l.debug = get("SCR_DEBUG", 0) > 0
	l.decider.Every = get("SCR_CHECKPOINT_INTERVAL", 0)
	l.decider.Seconds = time.Duration(getf("SCR_CHECKPOINT_SECONDS") * float64(time.Second))
	l.decider.Overhead = getf("SCR_CHECKPOINT_OVERHEAD")
	l.haltBefore = time.Duration(get("SCR_HALT_SECONDS", 0)) * time.Second
	end, _, e := jobenv.EndTime(p.Get, jobenv.VarSCREndTime, "SCR_END_TIME", jobenv.VarSlurmEndTime)
	if e != nil {
		return e
	}
	l.end = end
	return err
}

// State is the rank's state.
func (l *Lib) State() State { return l.state }

// Prefix is the prefix directory.
func (l *Lib) Prefix() string { return l.prefix }

// Debug says whether SCR_DEBUG asks for messages.
func (l *Lib) Debug() bool { return l.debug }

// Params are the parameters (SCR_Config queries them after Init).
func (l *Lib) Params() *Params { return l.params }

func (l *Lib) check(call string) error { return Check(call, l.state) }

// StartOutput opens a dataset (SCR_Start_output; SCR_Start_checkpoint is
// StartOutput("", FlagCheckpoint)).
func (l *Lib) StartOutput(ctx context.Context, call, name string, flags int) error {
	if err := l.check(call); err != nil {
		return err
	}
	if flags&^(FlagCheckpoint|FlagOutput) != 0 {
		return misuse(call, "unknown flags %#x", flags)
	}
	id, ck := l.index.Next(flags)
	e := Entry{ID: id, Ckpt: ck, Name: DatasetName(name, id), Flags: flags}
	replacing, err := l.reuse(ctx, call, e.Name)
	if err != nil {
		return err
	}
	if replacing != nil {
		e.Object = ObjectFor(e.Name, e.ID)
	}
	c, err := l.eng.Start(e.ObjectName())
	if err != nil {
		return misuse(call, "dataset %q: %v", e.Name, err)
	}
	l.replacing = replacing
	l.out, l.outE, l.routed = c, e, map[string]string{}
	l.state = Output
	if flags == FlagCheckpoint && call == "SCR_Start_checkpoint" {
		l.state = Checkpoint
	}
	if flags&FlagCheckpoint != 0 {
		l.decider.Started(l.now())
	}
	l.restart, l.done = nil, true
	return nil
}

// reuse makes way for a new dataset named name (collective): an older
// one of that name that was marked failed or dropped, or that an earlier
// run wrote, may be written again. Applications that restart compute
// their steps again and write their names anew (SCR's own examples do,
// from their first step on, whatever they restarted from). An older one
// that no tier holds any more is forgotten at once; one that a tier holds
// is returned: the new dataset is written beside it under a name of its
// own, and it goes only once the new one is committed, so that a run
// that dies in between still has it (it may be the checkpoint the run
// restarted from). A name this run wrote already is a misuse (SCR_Delete
// it first): that dataset is the application's present.
func (l *Lib) reuse(ctx context.Context, call, name string) (*Entry, error) {
	old := l.index.Find(name)
	if old == nil {
		return nil, nil
	}
	obj := old.ObjectName()
	_, err := l.cache.Stat(ctx, cachetier.ManifestObject(obj))
	held := err == nil
	if l.rank == 0 && !held {
		held, _ = sharedtier.Exists(ctx, l.eng.Shared, obj)
	}
	all, err := engine.GatherJSON(ctx, l.comm, held)
	if err != nil {
		return nil, err
	}
	anyHeld := false
	for _, h := range all {
		anyHeld = anyHeld || h
	}
	if anyHeld && !old.Failed && !old.Dropped && old.ID >= l.firstID {
		return nil, misuse(call, "dataset %q exists: SCR_Delete it before reusing its name", name)
	}
	if !anyHeld {
		return nil, l.remove(ctx, name)
	}
	e := *old
	return &e, nil
}

// takeRouted copies the files this rank wrote at the prefix (bypass) into
// dataset c, whose redundancy and verified restart need them in the
// cache. A file shared by several ranks is copied by each: its restart
// reads its own part from its own copy.
func (l *Lib) takeRouted(c *engine.Checkpoint) error {
	for key, p := range l.routed {
		dst, err := c.Path(Encode(key))
		if err != nil {
			return err
		}
		if err := copyFile(p, dst); err != nil {
			return fmt.Errorf("rank %d: %s: %w", l.rank, key, err)
		}
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// RouteFile is SCR_Route_file: the path to write name at in an output
// phase, to read it from in a restart phase, name itself otherwise.
func (l *Lib) RouteFile(name string) (string, error) {
	if name == "" {
		return "", errors.New("empty file name")
	}
	switch l.state {
	case Output, Checkpoint:
		key, err := OutputKey(l.prefix, l.cwd, name)
		if err != nil {
			return "", misuse("SCR_Route_file", "%v", err)
		}
		if p, ok := l.routed[key]; ok {
			return p, nil
		}
		if l.bypass {
			// Straight to the prefix, as SCR's bypass: several ranks
			// may route one shared file there. CompleteOutput takes
			// each rank's copy into the dataset.
			p := filepath.Join(l.prefix, key)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return "", err
			}
			l.routed[key] = p
			return p, nil
		}
		p, err := l.out.Path(Encode(key))
		if err != nil {
			return "", err
		}
		l.routed[key] = p
		return p, nil
	case Restart:
		var keys []string
		for _, f := range l.restart.Files() {
			keys = append(keys, Decode(f))
		}
		key, ok := RestartKey(l.prefix, l.cwd, name, keys)
		if !ok {
			return "", fmt.Errorf("checkpoint %q has no file %q for rank %d", l.resName, name, l.rank)
		}
		p, err := l.restart.Path(Encode(key))
		if err != nil {
			return "", err
		}
		if _, err := os.Stat(p); err != nil {
			return "", err
		}
		return p, nil
	}
	return name, nil
}

// CompleteOutput ends the open dataset (collective); valid is the AND
// over every rank, anyFiles whether any rank routed a file in it (the C
// layer learns both in one reduction). It reports whether the dataset
// was committed on every rank.
func (l *Lib) CompleteOutput(ctx context.Context, call string, valid, anyFiles bool) (bool, error) {
	if err := l.check(call); err != nil {
		return false, err
	}
	c, e := l.out, l.outE
	l.out, l.state = nil, Idle
	if e.Flags&FlagCheckpoint != 0 {
		defer l.decider.Ended(l.now())
	}
	replacing := l.replacing
	l.replacing = nil
	if !anyFiles && e.Flags&FlagCheckpoint == 0 && replacing == nil {
		// A dataset of no files on any rank has nothing to commit, flush
		// or later find: nothing records it but the ids it took, which
		// rank 0 writes with the next dataset that has files or at
		// SCR_Finalize. No collective beyond the C layer's one
		// reduction, and no I/O.
		l.indexDirty = true
		return valid, nil
	}
	if !valid {
		return false, c.Abort()
	}
	if l.bypass {
		if err := l.takeRouted(c); err != nil {
			// Every rank's Commit fails with it: the previous
			// checkpoint stays current.
			if err := c.Fail(ctx, err); !errors.Is(err, engine.ErrCheckpointFailed) {
				return false, err
			}
			return false, nil
		}
	}
	l.committing = &e
	err := c.Commit(ctx)
	l.committing = nil
	if err != nil {
		if errors.Is(err, engine.ErrCheckpointFailed) {
			return false, nil
		}
		return false, err
	}
	if replacing != nil {
		// The new dataset is committed: the older one of its name goes,
		// its plain files first (the new one's are written by the
		// flush below).
		if err := l.removeObject(ctx, replacing.ObjectName()); err != nil {
			return false, err
		}
		if l.lastCk != nil && l.lastCk.Name == e.Name {
			l.lastCk = nil
		}
	}
	flush := e.Flags&FlagOutput != 0 ||
		e.Flags&FlagCheckpoint != 0 && (l.bypass || l.flushEvery > 0 && e.Ckpt%uint64(l.flushEvery) == 0)
	ok := true
	if flush {
		var err error
		if ok, err = l.flush(ctx, &e); err != nil {
			return false, err
		}
	}
	l.index.Add(e)
	if e.Flags&FlagCheckpoint != 0 {
		l.lastCk = nil
		if !e.Flushed {
			l.lastCk = l.index.Find(e.Name)
		}
	}
	if err := l.saveIndex(ctx); err != nil {
		return false, err
	}
	if l.debug && l.rank == 0 {
		fmt.Fprintf(os.Stderr, "SCR: dataset %d %q committed (flags %d, flushed %v)\n", e.ID, e.Name, e.Flags, e.Flushed)
	}
	return ok, nil
}

// flush copies dataset e to the prefix (collective): ckpt's objects into
// its shared tier, and every rank's files at their own paths under the
// prefix (plain.go). It says whether every rank's copy succeeded; every
// rank returns the same.
func (l *Lib) flush(ctx context.Context, e *Entry) (bool, error) {
	enc := e.ObjectName()
	if err := l.eng.Flush(ctx, enc); err != nil {
		return false, err
	}
	// The plain copies are read back from the cache, where the engine
	// verified them.
	m, err := cachetier.Load(ctx, l.cache, enc)
	if err != nil {
		return false, err
	}
	ok, err := l.plainCopies(ctx, m)
	if err != nil || !ok {
		return false, err
	}
	e.Flushed = true
	return true, nil
}

// saveIndex has rank 0 write the index (atomically) and tells every rank
// whether it did.
func (l *Lib) saveIndex(ctx context.Context) error {
	var mine string
	if l.rank == 0 {
		tmp := l.indexPath + ".tmp"
		err := os.WriteFile(tmp, l.index.Encode(), 0o644)
		if err == nil {
			err = os.Rename(tmp, l.indexPath)
		}
		if err != nil {
			mine = err.Error()
		}
	}
	all, err := engine.GatherJSON(ctx, l.comm, mine)
	if err != nil {
		return err
	}
	if all[0] != "" {
		return fmt.Errorf("writing the dataset index: %s", all[0])
	}
	l.indexDirty = false
	return nil
}

// HaveRestart is SCR_Have_restart (collective): it loads the newest
// checkpoint the job can restart from, passing over those marked failed,
// dropped or newer than the current one, and returns its name.
func (l *Lib) HaveRestart(ctx context.Context) (string, bool, error) {
	if err := l.check("SCR_Have_restart"); err != nil {
		return "", false, err
	}
	if l.restart != nil {
		return l.resName, true, nil
	}
	if l.done {
		return "", false, nil
	}
	r, err := l.eng.Restart(ctx)
	if errors.Is(err, engine.ErrNoCheckpoint) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	l.restart, l.resName, l.lastSource = r, l.index.NameOf(r.Name()), string(r.Source)
	if l.debug && l.rank == 0 {
		fmt.Fprintf(os.Stderr, "SCR: restarting from %q (%s)\n", l.resName, r.Source)
	}
	return l.resName, true, nil
}

// StartRestart is SCR_Start_restart.
func (l *Lib) StartRestart() (string, error) {
	if err := l.check("SCR_Start_restart"); err != nil {
		return "", err
	}
	if l.restart == nil {
		return "", misuse("SCR_Start_restart", "no checkpoint to restart from (SCR_Have_restart must say there is one)")
	}
	l.state = Restart
	return l.resName, nil
}

// CompleteRestart is SCR_Complete_restart; valid is the AND over every
// rank. A checkpoint not valid is marked failed (kept on the tiers), and
// the next HaveRestart offers the one before.
func (l *Lib) CompleteRestart(ctx context.Context, valid bool) (bool, error) {
	if err := l.check("SCR_Complete_restart"); err != nil {
		return false, err
	}
	l.state = Idle
	name := l.resName
	l.restart = nil
	if valid {
		l.done = true
		l.decider.Ended(l.now())
		return true, nil
	}
	e := l.index.Find(name)
	if e == nil {
		l.index.Datasets = append(l.index.Datasets, Entry{Name: name, Flags: FlagCheckpoint})
		e = &l.index.Datasets[len(l.index.Datasets)-1]
	}
	e.Failed = true
	if l.index.Current == name {
		l.index.Current = ""
	}
	return false, l.saveIndex(ctx)
}

// NeedCheckpoint is SCR_Need_checkpoint's answer on this rank (the C
// layer hands every rank rank 0's, the only one that looks for the halt
// file).
func (l *Lib) NeedCheckpoint(ctx context.Context) (bool, error) {
	if err := l.check("SCR_Need_checkpoint"); err != nil {
		return false, err
	}
	l.needCalls++
	ckptSays := false
	if l.decide != nil {
		var err error
		if ckptSays, err = l.decide(ctx, l.needCalls); err != nil {
			return false, err
		}
	}
	return l.decider.Need(l.now(), l.halt()) || ckptSays, nil
}

// ShouldExit is SCR_Should_exit's answer on this rank (the C layer hands
// every rank rank 0's, the only one that looks for the halt file).
func (l *Lib) ShouldExit() (bool, error) {
	if err := l.check("SCR_Should_exit"); err != nil {
		return false, err
	}
	return l.halt(), nil
}

// halt says whether the job is to halt. Only rank 0 looks for the halt
// file: the C layer hands every rank rank 0's answer, and a stat per
// call on every rank is most of these calls' cost.
func (l *Lib) halt() bool {
	if l.halting != nil && l.halting() {
		return true
	}
	if HaltSoon(l.now(), l.end, l.haltBefore) {
		return true
	}
	if l.rank != 0 {
		return false
	}
	_, err := os.Stat(HaltFile(l.prefix))
	return err == nil
}

// Current is SCR_Current: name becomes the newest checkpoint a restart
// may use. It fails for a name the index does not know as a checkpoint.
func (l *Lib) Current(ctx context.Context, name string) error {
	if err := l.check("SCR_Current"); err != nil {
		return err
	}
	e := l.index.Find(name)
	if e == nil || e.Flags&FlagCheckpoint == 0 || e.Dropped {
		return fmt.Errorf("no checkpoint named %q", name)
	}
	l.index.Current = name
	l.restart = nil
	return l.saveIndex(ctx)
}

// Drop is SCR_Drop: the index forgets the dataset (its files stay). It
// succeeds for any name.
func (l *Lib) Drop(ctx context.Context, name string) error {
	if err := l.check("SCR_Drop"); err != nil {
		return err
	}
	if e := l.index.Find(name); e != nil {
		e.Dropped = true
		if l.index.Current == name {
			l.index.Current = ""
		}
		if l.restart != nil && l.resName == name {
			l.restart = nil
		}
		return l.saveIndex(ctx)
	}
	return nil
}

// Delete is SCR_Delete (collective): the dataset's files go from every
// cache, from ckpt's shared tier and from their paths under the prefix
// (with directories left empty), and the index forgets it.
func (l *Lib) Delete(ctx context.Context, name string) error {
	if err := l.check("SCR_Delete"); err != nil {
		return err
	}
	return l.remove(ctx, name)
}

// remove deletes dataset name from every tier and the prefix, and from
// the index (collective).
func (l *Lib) remove(ctx context.Context, name string) error {
	obj := Encode(name)
	if e := l.index.Find(name); e != nil {
		obj = e.ObjectName()
	}
	err := l.removeObject(ctx, obj)
	l.index.Remove(name)
	if l.restart != nil && l.resName == name {
		l.restart = nil
	}
	if l.lastCk != nil && l.lastCk.Name == name {
		l.lastCk = nil
	}
	return errors.Join(err, l.saveIndex(ctx))
}

// removeObject deletes dataset object enc from every cache, from ckpt's
// shared tier, and its files from their paths under the prefix
// (collective).
func (l *Lib) removeObject(ctx context.Context, enc string) error {
	var errs []error
	m, _ := cachetier.Load(ctx, l.cache, enc)
	if m == nil {
		if ms, err := sharedtier.List(ctx, l.eng.Shared); err == nil {
			for _, sm := range ms {
				if sm.Name == enc {
					m = sm
				}
			}
		}
	}
	if m != nil && l.rank < len(m.Parts) {
		l.removePlain(m.Parts[l.rank])
	}
	// Every rank removes its own files; the node's manifest goes last, in
	// the round below, once no rank of the node still needs it.
	cachetier.RemovePart(ctx, l.cache, enc, l.rank)
	if _, err := engine.GatherJSON(ctx, l.comm, ""); err != nil {
		return err
	}
	if err := cachetier.Remove(ctx, l.cache, enc); err != nil && !errors.Is(err, storage.ErrNotExist) {
		errs = append(errs, err)
	}
	if l.rank == 0 {
		if err := sharedtier.Remove(ctx, l.eng.Shared, enc); err != nil && !errors.Is(err, storage.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (l *Lib) removePlain(p manifest.Part) {
	for _, f := range p.Files {
		if f.Name == engine.MessagesFile {
			continue
		}
		path := filepath.Join(l.prefix, Decode(f.Name))
		os.Remove(path)
		for dir := filepath.Dir(path); dir != l.prefix && strings.HasPrefix(dir, l.prefix+"/"); dir = filepath.Dir(dir) {
			if os.Remove(dir) != nil {
				break
			}
		}
	}
}

// Finalize is SCR_Finalize (collective): the newest checkpoint this run
// wrote goes to the prefix if SCR_FLUSH is on and it is not there yet.
func (l *Lib) Finalize(ctx context.Context) error {
	if err := l.check("SCR_Finalize"); err != nil {
		return err
	}
	l.state = Uninit
	var err error
	if l.lastCk != nil && l.flushEvery > 0 {
		var e = *l.lastCk
		if _, err = l.flush(ctx, &e); err == nil && e.Flushed {
			l.index.Add(e)
			l.indexDirty = true
		}
	}
	if err == nil && l.indexDirty {
		err = l.saveIndex(ctx)
	}
	return errors.Join(err, l.cache.Close())
}

// Close releases the rank's cache without finalizing (an SCR_Init that
// failed on another rank).
func (l *Lib) Close() error { return l.cache.Close() }
