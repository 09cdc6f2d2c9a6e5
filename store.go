package ckpt

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/ckpt/ckpt/internal/cachetier"
	"github.com/ckpt/ckpt/internal/engine"
	"github.com/ckpt/ckpt/internal/jobenv"
	"github.com/ckpt/ckpt/internal/manifest"
	"github.com/ckpt/ckpt/internal/redundancy"
	"github.com/ckpt/ckpt/internal/storage/local"
	"github.com/ckpt/ckpt/internal/storage/location"
	"github.com/ckpt/ckpt/storage"
)

// Options configure a Store. The zero value works for a single process: its
// identity comes from the launcher's environment when there is one.
type Options struct {
	// Rank and Size identify this process in its job. When Size is 0 they
	// come from the environment (CKPT_RANK/CKPT_SIZE, else the first of
	// OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE, PMI_RANK/PMI_SIZE and
	// SLURM_PROCID/SLURM_NTASKS set), and default to rank 0 of 1.
	Rank, Size int
	// Node names the node this rank runs on, whose cache it writes to
	// (default: CKPT_NODE, else the host name). Ranks on one node share its
	// cache; redundancy sets never put two members on one node.
	Node string
	// Domain optionally labels a larger failure domain (rack, switch, power
	// supply: CKPT_DOMAIN); sets then never put two members in one domain.
	Domain string
	// CacheDir is the node-local cache (tmpfs, local SSD) as a directory
	// (default: CKPT_CACHE, else ckpt-cache/NODE under the temp directory).
	// Cache, if set, is used instead.
	CacheDir string
	Cache    storage.Backend
	// CacheDurability says what a checkpoint committed in a cache that
	// CacheDir names survives (default: CKPT_CACHE_DURABILITY, else
	// DurableNode).
	CacheDurability Durability
	// Compress says whether files are compressed in the cache (default:
	// CKPT_COMPRESS, else CompressOff).
	Compress Compression
	// Redundancy protects cached checkpoints across nodes: "single",
	// "partner", "xor:S", "rs:K+M" (default: single for one rank, else
	// xor:S with S the number of failure domains, at most 8).
	Redundancy string
	// Comm connects the ranks; required when Size > 1 (the job runtime or
	// LocalJob provides it).
	Comm Comm
	// BlockSize is the redundancy encoding's block per shard (default 1 MiB).
	BlockSize int
	// Shared is the shared tier (a parallel file system directory or an
	// object store) that Flush copies checkpoints to and Restart falls back
	// on. When nil, CKPT_SHARED may name one: a directory, or
	// s3://BUCKET/PREFIX (endpoint and credentials as package s3 reads
	// them); unset means none.
	Shared storage.Backend
	// KeepCache and KeepShared are how many checkpoints each tier keeps
	// (default 2 in the cache, 0 = all on the shared tier); older ones are
	// removed after a commit or flush, and the newest is never removed,
	// nor the newest one a restart could recover.
	KeepCache, KeepShared int
}

// Store is one rank's handle on the job's checkpoints. Its methods that
// involve other ranks (Start…Commit, Restart) are collective: every rank of
// the job calls them in the same order.
type Store struct {
	eng       *engine.Engine
	comm      Comm // as the application gave it (a Job reaches the ranks through it too)
	ownsCache bool
	// alone is set by Join under the uncoordinated strategy: the engine's
	// checkpoints are collective (Commit, Restart), and the coordinator
	// aborts a collective after a rank recovered alone, so the store
	// refuses them rather than hang or abort the job later.
	alone bool
}

// ErrNoCheckpoint is wrapped by Restart's error when no checkpoint can be
// recovered.
var ErrNoCheckpoint = errors.New("no recoverable checkpoint")

// Open opens this rank's store.
func Open(opts Options) (*Store, error) {
	// The launcher's variables that the options leave to the environment,
	// read and checked together (one not used is not even read).
	env, err := jobenv.LookupOnly(os.LookupEnv, map[string]bool{
		jobenv.VarRank:            opts.Size == 0,
		jobenv.VarSize:            opts.Size == 0,
		jobenv.VarNode:            opts.Node == "",
		jobenv.VarDomain:          opts.Domain == "",
		jobenv.VarRedundancy:      opts.Redundancy == "",
		jobenv.VarShared:          opts.Shared == nil,
		jobenv.VarSharedBandwidth: opts.Shared == nil,
		jobenv.VarIncarnation:     opts.Shared == nil,
		jobenv.VarCache:           opts.Cache == nil && opts.CacheDir == "",
		jobenv.VarCacheDurability: opts.Cache == nil && opts.CacheDurability == DurableDefault,
		jobenv.VarCompress:        opts.Compress == CompressDefault,
	})
	if err != nil {
		return nil, configError(fmt.Errorf("ckpt: %w", err))
	}
	if opts.Size == 0 {
		opts.Rank, opts.Size = jobenv.Identity(env, os.LookupEnv)
	}
	if opts.Size < 1 || opts.Rank < 0 || opts.Rank >= opts.Size {
		return nil, fmt.Errorf("ckpt: rank %d of %d: the rank must lie in [0, size)", opts.Rank, opts.Size)
	}
	s := &settings{rank: opts.Rank, size: opts.Size, node: opts.Node, domain: opts.Domain, comm: opts.Comm,
		blockSize: opts.BlockSize, shared: opts.Shared, keepCache: opts.KeepCache, keepShared: opts.KeepShared}
	s.compress = opts.Compress == CompressAuto
	if opts.Compress == CompressDefault {
		// Lookup checked the variable: auto, off or unset.
		c, _ := ParseCompression(env.Compress)
		s.compress = c == CompressAuto
	}
	if s.keepCache == 0 {
		s.keepCache = 2
	}
	if s.node == "" {
		s.node = env.Node
	}
	if s.node == "" {
		h, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("ckpt: node name: %w (set Options.Node or CKPT_NODE)", err)
		}
		s.node = h
	}
	if s.domain == "" {
		s.domain = env.Domain
	}
	if s.comm == nil {
		if s.size > 1 {
			return nil, fmt.Errorf("ckpt: rank %d of %d needs a Comm to reach the other ranks (run under 'ckpt run', or use LocalJob)", s.rank, s.size)
		}
		s.comm = solo{}
	}
	if s.comm.Size() != s.size || s.comm.Rank() != s.rank {
		return nil, fmt.Errorf("ckpt: options say rank %d of %d, the Comm says rank %d of %d", s.rank, s.size, s.comm.Rank(), s.comm.Size())
	}
	s.scheme = opts.Redundancy
	if s.scheme == "" {
		s.scheme = env.Redundancy
	}
	if s.scheme != "" {
		if _, err := redundancy.ParseScheme(s.scheme); err != nil {
			return nil, configError(fmt.Errorf("ckpt: redundancy: %w", err))
		}
	}
	if s.shared == nil && env.Shared != "" {
		// CKPT_SHARED_BANDWIDTH caps this process's share of the shared
		// tier's bandwidth (bytes/s), to model a parallel file system the
		// job shares (ckpt run --shared-bandwidth). Rank 0 removes what
		// dead writers left (the other ranks' scans would only repeat it).
		lopts := location.Options{Bandwidth: env.SharedBandwidth}
		if s.rank == 0 {
			lopts.CleanTemp = location.DefaultCleanAge
		}
		b, err := openShared(env.Shared, lopts, env.Incarnation)
		if err != nil {
			return nil, sharedOpenError(env.Shared, env.Incarnation, err)
		}
		s.shared = b
	}
	s.cache = opts.Cache
	if s.cache == nil {
		dir := opts.CacheDir
		if dir == "" {
			dir = env.Cache
		}
		if dir == "" {
			dir = filepath.Join(os.TempDir(), "ckpt-cache", s.node)
		}
		d := opts.CacheDurability
		if d == DurableDefault {
			// Lookup checked the variable: node, process or unset.
			d, _ = ParseDurability(env.CacheDurability)
		}
		var lopts []local.Option
		if d == DurableProcess {
			lopts = append(lopts, local.WithoutSync())
		}
		b, err := local.New(dir, lopts...)
		if err != nil {
			return nil, configError(fmt.Errorf("ckpt: cache: %w", err))
		}
		s.cache, s.ownsCache = b, true
	}
	return s.store(), nil
}

// settings are Open's resolved configuration, before the engine takes it.
type settings struct {
	rank, size int
	node       string
	domain     string
	cache      storage.Backend
	ownsCache  bool
	scheme     string
	comm       Comm
	blockSize  int
	shared     storage.Backend
	keepCache  int
	keepShared int
	compress   bool
}

func (s *settings) store() *Store {
	e := engine.New(engine.Config{Rank: s.rank, Size: s.size, Node: s.node, Domain: s.domain,
		Cache: s.cache, Shared: s.shared, Scheme: s.scheme, BlockSize: s.blockSize,
		KeepCache: s.keepCache, KeepShared: s.keepShared, Compress: s.compress, Comm: engineComm{s.comm}})
	return &Store{eng: e, comm: s.comm, ownsCache: s.ownsCache}
}

// OpenShared opens a shared tier by location: a directory, or
// s3://BUCKET/PREFIX. Operations that fail with a transient error are
// retried; opening does not remove anything.
func OpenShared(ctx context.Context, loc string) (storage.Backend, error) {
	return location.Open(ctx, loc, location.Options{})
}

// Rank is this process's rank; Size the job's number of ranks.
func (s *Store) Rank() int { return s.eng.Rank }
func (s *Store) Size() int { return s.eng.Size }

// Close releases the store's resources.
func (s *Store) Close() error {
	if s.ownsCache {
		return s.eng.Cache.Close()
	}
	return nil
}

// Info describes a checkpoint this rank can see.
type Info struct {
	Name  string
	ID    uint64
	Level string // "cache" or "shared"
	Ranks int
	Bytes int64 // application bytes over all ranks
}

// List returns the checkpoints whose manifest this node's cache holds,
// newest first. It is local to the rank (not collective) and does not check
// that the checkpoint can be recovered: Restart and Verify do.
func (s *Store) List(ctx context.Context) ([]Info, error) {
	ms, err := cachetier.List(ctx, s.eng.Cache)
	if err != nil {
		return nil, err
	}
	var out []Info
	for _, m := range ms {
		out = append(out, infoOf(m))
	}
	return out, nil
}

func infoOf(m *manifest.Manifest) Info {
	i := Info{Name: m.Name, ID: m.ID, Level: string(m.Level), Ranks: m.Ranks}
	for _, p := range m.Parts {
		for _, f := range p.Files {
			i.Bytes += f.Size
		}
	}
	return i
}

// sharedMisconfigured says whether opening the shared tier at loc failed
// for a reason no relaunch fixes: a file where the directory should be, no
// permission, a read-only file system, a bucket that does not exist or
// refuses the credentials. An object store out of reach, or a file system
// that hiccups (EIO, ESTALE, full), may come back.
// sharedReopenFor bounds how long a relaunched rank tries again to open a
// shared tier that opened at the first launch: a second's outage (a
// directory moved, a server restarting) must not cost the job a launch,
// and the launcher's own back-off takes over after this.
var sharedReopenFor = 20 * time.Second

// sharedSleep is time.Sleep, replaced by tests that watch the retries.
var sharedSleep = time.Sleep

// openShared opens the shared tier; at a relaunch (incarnation > 0), a
// failure is tried again with back-off for up to sharedReopenFor.
func openShared(loc string, opts location.Options, incarnation uint64) (storage.Backend, error) {
	deadline := time.Now().Add(sharedReopenFor)
	wait := 100 * time.Millisecond
	for {
		b, err := location.Open(context.Background(), loc, opts)
		if err == nil || incarnation == 0 || time.Now().Add(wait).After(deadline) {
			return b, err
		}
		sharedSleep(wait)
		wait = min(2*wait, 2*time.Second)
	}
}

// sharedOpenError is the error of a shared tier that did not open. At
// the first launch a misconfigured one is a configuration error (no
// relaunch can fix it); at a relaunch it is an ordinary failure: the same
// tier opened before, so what fails now (a file system remounted, a
// directory moved for a while) may be back at the next launch, and the
// caches still hold the job's checkpoints.
func sharedOpenError(loc string, incarnation uint64, err error) error {
	err = fmt.Errorf("ckpt: CKPT_SHARED: %w", err)
	if !sharedMisconfigured(loc, err) {
		return err
	}
	if incarnation == 0 {
		return configError(err)
	}
	return fmt.Errorf("%w (at relaunch %d: it opened before)", err, incarnation)
}

func sharedMisconfigured(loc string, err error) bool {
	if strings.HasPrefix(loc, "s3://") {
		return storage.IsPermanent(err)
	}
	return errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.EEXIST) ||
		errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS)
}
