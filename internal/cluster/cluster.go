package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/cachetier"
	"github.com/ckpt/ckpt/internal/engine"
	"github.com/ckpt/ckpt/internal/localcomm"
	"github.com/ckpt/ckpt/internal/storage/local"
	"github.com/ckpt/ckpt/internal/storage/mem"
	"github.com/ckpt/ckpt/internal/testwait"
	"github.com/ckpt/ckpt/storage"
)

// Config describes a cluster.
type Config struct {
	Ranks, Nodes int
	// Scheme is the redundancy scheme of the engines ("xor:4", ...).
	Scheme string
	// BlockSize is the engines' redundancy block (default 4096, small so
	// that small test files span several blocks).
	BlockSize int
	// Shared gives the cluster a shared tier, in Rank.Shared.
	Shared bool
	// Mem keeps caches and the shared tier in memory instead of temp
	// directories (Checkpoint.Path then has no file system to route to).
	Mem bool
	// NoSync opens directory caches without syncing (process durability).
	NoSync bool
	// Dir is the directory of the caches and the shared tier (default: a
	// temp directory of the test). A test names it to hand the caches to
	// another process, or to take them over from one.
	Dir string
	// KeepCache and KeepShared go to the engines (≤ 0: keep all).
	KeepCache, KeepShared int
}

// ErrNodeLost is wrapped by the errors of a lost node's ranks and cache.
var ErrNodeLost = errors.New("cluster: node lost")

// Cluster is a job's ranks on simulated nodes in this process.
type Cluster struct {
	t    testing.TB
	cfg  Config
	root string // temp directory of the caches and shared tier ("" with Mem)

	mu          sync.Mutex
	hosts       []*host // by slot
	spares      int     // spare hosts taken so far
	shared      storage.Backend
	net         *localcomm.Network
	ranks       []*Rank
	side        []int // nodes on one side of the cut; nil: whole
	incarnation int
}

// host is the machine that holds a node slot, with its cache.
type host struct {
	name  string
	dir   string // "" with Mem
	cache *nodeCache
}

// Rank is one rank of the current incarnation.
type Rank struct {
	ID       int
	Node     int    // the node slot
	NodeName string // its host's name: the engine's Node
	Comm     *localcomm.Comm
	Cache    storage.Backend // the node's cache (refuses calls once the node is lost)
	CacheDir string          // its directory ("" with Mem)
	Shared   storage.Backend // nil without Config.Shared
	// Engine is the rank's engine over Comm, Cache and Shared. Tests of
	// the root open a Store over the same instead and leave it unused.
	Engine *engine.Engine
}

// New makes a cluster and launches its first incarnation. Everything it
// opens is closed when the test ends.
func New(t testing.TB, cfg Config) *Cluster {
	t.Helper()
	if cfg.Ranks < 1 || cfg.Nodes < 1 || cfg.Nodes > cfg.Ranks {
		t.Fatalf("cluster.New: need 1 ≤ Nodes ≤ Ranks, have %d ranks on %d nodes", cfg.Ranks, cfg.Nodes)
	}
	if cfg.BlockSize == 0 {
		cfg.BlockSize = 4096
	}
	c := &Cluster{t: t, cfg: cfg}
	switch {
	case cfg.Mem:
	case cfg.Dir != "":
		c.root = cfg.Dir
	default:
		c.root = t.TempDir()
	}
	for n := range cfg.Nodes {
		c.hosts = append(c.hosts, c.newHost(fmt.Sprintf("node%d", n)))
	}
	if cfg.Shared {
		c.shared = c.open("shared")
	}
	t.Cleanup(func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, h := range c.hosts {
			h.cache.Close()
		}
		if c.shared != nil {
			c.shared.Close()
		}
	})
	c.Relaunch()
	return c
}

// open opens a tier: a directory below the cluster's root, or memory.
func (c *Cluster) open(name string) storage.Backend {
	c.t.Helper()
	if c.cfg.Mem {
		return mem.New()
	}
	var opts []local.Option
	if c.cfg.NoSync && name != "shared" {
		opts = append(opts, local.WithoutSync())
	}
	b, err := local.New(filepath.Join(c.root, name), opts...)
	if err != nil {
		c.t.Fatal(err)
	}
	return b
}

func (c *Cluster) newHost(name string) *host {
	h := &host{name: name, cache: &nodeCache{Backend: c.open(name)}}
	if !c.cfg.Mem {
		h.dir = filepath.Join(c.root, name)
	}
	return h
}

// Relaunch starts the next incarnation: the ranks of the current one are
// gone (their Comms fail), every rank gets a fresh Comm and engine over
// its node's cache, and each slot whose host was lost is held by a spare
// with an empty cache. A partition that is not healed holds for the new
// incarnation too.
func (c *Cluster) Relaunch() {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.net != nil {
		for r := range c.ranks {
			c.net.Fail(r, errors.New("cluster: relaunched"))
		}
	}
	for n, h := range c.hosts {
		if h.cache.isLost() {
			c.hosts[n] = c.newHost(fmt.Sprintf("spare%d", c.spares))
			c.spares++
		}
	}
	c.incarnation++
	c.net = localcomm.NewNetwork(c.cfg.Ranks)
	c.ranks = make([]*Rank, c.cfg.Ranks)
	for r, comm := range c.net.Comms() {
		n := r % c.cfg.Nodes
		h := c.hosts[n]
		rk := &Rank{ID: r, Node: n, NodeName: h.name, Comm: comm, Cache: h.cache, CacheDir: h.dir, Shared: c.shared}
		rk.Engine = engine.New(engine.Config{Rank: r, Size: c.cfg.Ranks, Node: h.name, Cache: rk.Cache,
			Shared: rk.Shared, Scheme: c.cfg.Scheme, BlockSize: c.cfg.BlockSize,
			KeepCache: c.cfg.KeepCache, KeepShared: c.cfg.KeepShared, Comm: comm})
		c.ranks[r] = rk
	}
	if c.side != nil {
		c.net.Partition(c.ranksOn(c.side))
	}
}

// Ranks returns the ranks of the current incarnation, by rank.
func (c *Cluster) Ranks() []*Rank {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.ranks)
}

// Incarnation counts launches, from 1.
func (c *Cluster) Incarnation() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.incarnation
}

// Cache returns the cache of node slot n's current host.
func (c *Cluster) Cache(n int) storage.Backend {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hosts[n].cache
}

// NodeName returns the name of node slot n's current host.
func (c *Cluster) NodeName(n int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hosts[n].name
}

// Checkpoints lists the checkpoints whose manifest node slot n's cache
// holds, newest first (cachetier.List's order).
func (c *Cluster) Checkpoints(n int) []string {
	c.t.Helper()
	ms, err := cachetier.List(context.Background(), c.Cache(n))
	if err != nil {
		c.t.Fatal(err)
	}
	var names []string
	for _, m := range ms {
		names = append(names, m.Name)
	}
	return names
}

// Shared returns the shared tier (nil without Config.Shared).
func (c *Cluster) Shared() storage.Backend { return c.shared }

// ranksOn returns the ranks on the given node slots.
func (c *Cluster) ranksOn(nodes []int) []int {
	var out []int
	for r := range c.cfg.Ranks {
		if slices.Contains(nodes, r%c.cfg.Nodes) {
			out = append(out, r)
		}
	}
	return out
}

// LoseNode crashes node slot n's host: its ranks fail as a crash would,
// its cache refuses every call and its contents are removed. The slot gets
// a spare host at the next Relaunch.
func (c *Cluster) LoseNode(n int) {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	h := c.hosts[n]
	if h.cache.lose() {
		return // already lost
	}
	for _, r := range c.ranksOn([]int{n}) {
		c.net.Fail(r, fmt.Errorf("%w: %s", ErrNodeLost, h.name))
	}
	// The old directory is never used again (the spare gets its own), so
	// a write still in flight on the lost node cannot leak into the job.
	if h.dir != "" {
		// A call of another rank of the node that passed the cache's
		// check just before the loss may still create a file while
		// RemoveAll walks ("directory not empty"); the cache refuses every
		// later call, so a few passes remove it all. LoseNode may run on a
		// rank's goroutine (LoseNodeAt): Errorf, never Fatal.
		var err error
		for range 1000 {
			if err = os.RemoveAll(h.dir); err == nil {
				break
			}
			time.Sleep(time.Millisecond)
		}
		if err != nil {
			c.t.Errorf("removing lost node %s's cache: %v", h.name, err)
		}
	}
	h.cache.Backend.Close()
}

// LoseNodeAt arms a crash of node slot n: it is lost (LoseNode) when its
// cache is first asked to create an object for which when returns true,
// and that creation fails. This is how a test loses a node at a chosen
// point of a collective operation (when its parity or its manifest is
// written, ...).
func (c *Cluster) LoseNodeAt(n int, when func(object string) bool) {
	c.OnCreate(n, when, func() { c.LoseNode(n) })
}

// OnCreate arms fn to run once, when node slot n's cache is first asked
// to create an object for which when returns true; the creation goes on
// after fn (and fails if fn lost the node). Tests use it to do something
// at a chosen point of a collective operation, on the rank's goroutine.
func (c *Cluster) OnCreate(n int, when func(object string) bool, fn func()) {
	c.mu.Lock()
	h := c.hosts[n]
	c.mu.Unlock()
	h.cache.setTrigger(when, fn)
}

// Corrupt flips a byte in the middle of an object in node slot n's cache,
// as a bad disk would.
func (c *Cluster) Corrupt(n int, object string) {
	c.t.Helper()
	c.corrupt(c.Cache(n).(*nodeCache).Backend, object)
}

// CorruptShared flips a byte in the middle of an object of the shared tier.
func (c *Cluster) CorruptShared(object string) {
	c.t.Helper()
	c.corrupt(c.shared, object)
}

func (c *Cluster) corrupt(b storage.Backend, object string) {
	c.t.Helper()
	ctx := context.Background()
	data, err := storage.Load(ctx, b, object)
	if err != nil {
		c.t.Fatalf("corrupt %s: %v", object, err)
	}
	if len(data) == 0 {
		c.t.Fatalf("corrupt %s: the object is empty", object)
	}
	data[len(data)/2] ^= 0x5a
	if _, err := storage.Save(ctx, b, object, bytesReader(data)); err != nil {
		c.t.Fatalf("corrupt %s: %v", object, err)
	}
}

// Remove deletes every object under prefix from node slot n's cache (a
// checkpoint lost from one node while the node lives on).
func (c *Cluster) Remove(n int, prefix string) {
	c.t.Helper()
	ctx := context.Background()
	b := c.Cache(n).(*nodeCache).Backend
	var names []string
	if err := b.List(ctx, prefix, func(i storage.Info) error { names = append(names, i.Name); return nil }); err != nil {
		c.t.Fatal(err)
	}
	if len(names) == 0 {
		c.t.Fatalf("node %d holds nothing under %q to remove", n, prefix)
	}
	for _, name := range names {
		if err := b.Remove(ctx, name); err != nil {
			c.t.Fatal(err)
		}
	}
}

// Partition cuts the network between the given node slots and the others:
// messages between the two sides fail. The current incarnation's
// collectives fail at once (none can complete without every rank), and so
// do those of incarnations launched before Heal.
func (c *Cluster) Partition(nodes ...int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.side = slices.Clone(nodes)
	c.net.Partition(c.ranksOn(nodes))
}

// Heal makes the network whole: transports of the current incarnation
// cross it again, and the next incarnation is not partitioned.
func (c *Cluster) Heal() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.side = nil
	c.net.Heal()
}

// Run runs step on every rank of the current incarnation, each in its own
// goroutine, and returns their errors by rank. The ranks of a lost node do
// not run (their error wraps ErrNodeLost). A rank whose step fails makes
// the incarnation fail, as a real rank that exits with an error does, so
// that no other rank waits for it. The wait is bounded (testwait).
func (c *Cluster) Run(step func(ctx context.Context, r *Rank) error) []error {
	c.t.Helper()
	ranks := c.Ranks()
	errs := make([]error, len(ranks))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for i, r := range ranks {
		if r.Cache.(*nodeCache).isLost() {
			errs[i] = fmt.Errorf("rank %d: %w: %s", i, ErrNodeLost, r.NodeName)
			continue
		}
		wg.Go(func() {
			if errs[i] = step(ctx, r); errs[i] != nil {
				r.Comm.Fail(errs[i])
			}
		})
	}
	testwait.Group(c.t, &wg, "the ranks' step")
	return errs
}

// MustRun is Run that fails the test if any rank's step fails.
func (c *Cluster) MustRun(step func(ctx context.Context, r *Rank) error) {
	c.t.Helper()
	for r, err := range c.Run(step) {
		if err != nil {
			c.t.Fatalf("rank %d: %v", r, err)
		}
	}
}
