package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ckpt/ckpt/examples/himeno"
	"github.com/ckpt/ckpt/internal/manifest"
	"github.com/ckpt/ckpt/internal/sharedtier"
	"github.com/ckpt/ckpt/internal/stage"
	"github.com/ckpt/ckpt/internal/storage/local"
	"github.com/ckpt/ckpt/internal/units"
	"github.com/ckpt/ckpt/storage"
)

// `ckpt bench stage`: the shapes of paper 001 §VI.A on this machine, each
// against a limit measured in the same run.
//
//   - Fig. 9: the write throughput of one staging server against its number
//     of writers W, beside W raw writers writing the same files (with fsync)
//     into the same directory, the best of fsync at the end, writeback
//     started every 8 MiB as the server's own writer does, and O_DIRECT.
//   - Fig. 10: the aggregate throughput of S staging servers, the nodes dealt
//     to them in turn.
//   - Fig. 11: the overhead factor α of the Himeno example against the rate
//     at which a staging server reads checkpoints from the node it runs on,
//     and the slope c of the line α = c·x through the origin.
//
// The shared tier is a local directory, the node caches are local
// directories holding a checkpoint's files as the store writes them, and
// the staging servers and clients run in this process over loopback TCP:
// the real code path, the client sending from the cache files with
// sendfile(2).

// Paper 001's figures: the slope of α against the read rate of a staging
// node (per GB/s), and that read rate (bytes/s).
const (
	PaperAlphaSlope = 0.008768
	PaperReadRate   = 209.5e6
)

// StageConfig is what `ckpt bench stage` measures.
type StageConfig struct {
	Dir   string // the shared tier and the node caches go in a temp dir below
	Size  int64  // bytes of the checkpoint staged
	Ranks int    // ranks of the checkpoint, one file each
	Nodes int    // nodes holding them, rank r on node r mod Nodes

	Writers       []int     // Fig. 9: W of the one server
	Servers       []int     // Fig. 10: staging servers
	ServerWriters int       // W of each server in Figs. 10 and 11 (001: 16)
	Rates         []float64 // Fig. 11: the server's read rate caps, bytes/s
	Passes        int       // staging and raw passes per point, the best kept

	Himeno        himeno.Config // Fig. 11's workload
	HimenoRanks   int           // its ranks, goroutines of this process
	HimenoSeconds float64       // about how long the fixed work takes alone
	Trials        int           // Fig. 11 pairs of runs per point, the median kept

	Progress func(step string)
}

// DefaultStageConfig is the full run, about two minutes: a 512 MiB
// checkpoint of 16 ranks over 4 nodes, the best of 3 passes per point (on
// a noisy disk the same pass varies ×3), Himeno size m filling every core.
func DefaultStageConfig() StageConfig {
	return StageConfig{
		Dir: os.TempDir(), Size: 512 << 20, Ranks: 16, Nodes: 4,
		Writers: []int{1, 2, 4, 8, 16}, Servers: []int{1, 2, 4}, ServerWriters: 16,
		Rates: []float64{25e6, 50e6, 100e6, 200e6, 400e6}, Passes: 3,
		Himeno: himeno.M, HimenoRanks: runtime.GOMAXPROCS(0), HimenoSeconds: 1, Trials: 5,
	}
}

// QuickStageConfig is a run of a few seconds for tests.
func QuickStageConfig() StageConfig {
	return StageConfig{
		Dir: os.TempDir(), Size: 8 << 20, Ranks: 16, Nodes: 4,
		Writers: []int{1, 4}, Servers: []int{1, 2}, ServerWriters: 4,
		Rates: []float64{50e6, 200e6}, Passes: 1,
		Himeno: himeno.XS, HimenoRanks: min(2, runtime.GOMAXPROCS(0)), HimenoSeconds: 0.05, Trials: 1,
	}
}

// StagePoint is one point of Fig. 9 or 10: N writers or servers.
type StagePoint struct {
	N              int
	BytesPerSecond float64
	// Ratio is BytesPerSecond over StageResult.RawWrite.
	Ratio float64
}

// AlphaPoint is one point of Fig. 11: the median of its pairs of runs.
type AlphaPoint struct {
	Rate     float64 // the server's cap, bytes/s
	Measured float64 // bytes it pulled per second while Himeno ran
	Seconds  float64 // the fixed Himeno work while the server pulled
	Baseline float64 // the same work alone, next to it
	Alpha    float64 // Seconds / Baseline − 1
}

// StageResult holds throughputs in bytes/s.
type StageResult struct {
	// RawWrite is the best raw write throughput of the run: RawWriters's
	// best.
	RawWrite float64
	// RawWriters are W raw writers writing the checkpoint's files, fsync'd,
	// into the shared directory, for each W of Fig. 9 (Ratio unset): the
	// best of three patterns, whose own figures are RawFsync (each file
	// fsync'd once at its end, the only pattern before issue 17),
	// RawWriteback (writeback started every 8 MiB, as the staging server's
	// writer, the local backend, does) and RawDirect (O_DIRECT, NaN where
	// the file system refuses it), indexed alike.
	RawWriters                        []StagePoint
	RawFsync, RawWriteback, RawDirect []float64
	// RawWriteFsync is RawFsync's best and StageWriteFsyncRatio the best
	// of Fig. 9 over it: stage_write_ratio as it was before issue 17.
	RawWriteFsync, StageWriteFsyncRatio float64
	Writers                             []StagePoint // Fig. 9
	Servers                             []StagePoint // Fig. 10
	// StageWriteRatio is the best of Fig. 9 over RawWrite: one staging
	// server at its best W against the tier's best raw write.
	StageWriteRatio float64

	Alpha []AlphaPoint // Fig. 11
	// HimenoSeconds is the fixed work alone, its fastest run, of
	// HimenoIterations iterations.
	HimenoSeconds    float64
	HimenoIterations int
	// AlphaSlope is c of α = c·x fitted through the origin by least
	// squares, x the measured read rate in GB/s; AlphaAtPaperRate is
	// c·0.2095, α at 001's 209.5 MB/s per staging server.
	AlphaSlope, AlphaAtPaperRate float64
}

// RunStage runs every measurement; it writes below cfg.Dir and removes what
// it wrote.
func RunStage(ctx context.Context, cfg StageConfig) (StageResult, error) {
	var r StageResult
	if cfg.Progress == nil {
		cfg.Progress = func(string) {}
	}
	if cfg.Ranks < 1 || cfg.Nodes < 1 || cfg.Nodes > cfg.Ranks {
		return r, fmt.Errorf("bench stage: %d ranks over %d nodes", cfg.Ranks, cfg.Nodes)
	}
	if cfg.Size < int64(cfg.Ranks) {
		return r, fmt.Errorf("bench stage: %d bytes cannot fill %d ranks", cfg.Size, cfg.Ranks)
	}
	cfg.Passes = max(cfg.Passes, 1)
	cfg.Trials = max(cfg.Trials, 1)
	work, buf, err := workspace(cfg.Dir, "ckpt-bench-stage-")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(work)

	cfg.Progress(fmt.Sprintf("writing a checkpoint of %s: %d ranks over %d node caches",
		units.FormatSize(float64(cfg.Size)), cfg.Ranks, cfg.Nodes))
	ds, err := newStageData(ctx, filepath.Join(work, "cache"), cfg.Ranks, cfg.Nodes, cfg.Size/int64(cfg.Ranks), buf)
	if err != nil {
		return r, err
	}
	syscall.Sync()

	// Fig. 9, with its raw limits: each W takes turns with its raw writers
	// at going first, pass by pass, so that neither inherits the other's
	// write-back more often.
	r.Writers = make([]StagePoint, len(cfg.Writers))
	r.RawWriters = make([]StagePoint, len(cfg.Writers))
	n := len(cfg.Writers)
	r.RawFsync, r.RawWriteback, r.RawDirect = make([]float64, n), make([]float64, n), make([]float64, n)
	for pass := range cfg.Passes {
		for i, w := range cfg.Writers {
			var rawV, stagedV float64
			raw := func() error {
				// Every pattern, taking turns at going first.
				patterns := []writePattern{writeFsync, writeWriteback, writeDirect}
				patterns = append(patterns[pass%3:], patterns[:pass%3]...)
				for _, p := range patterns {
					dst := [...]*float64{writeFsync: &r.RawFsync[i], writeWriteback: &r.RawWriteback[i], writeDirect: &r.RawDirect[i]}[p]
					v, err := rawParallel(filepath.Join(work, "raw"), cfg.Ranks, ds.fileSize, w, buf, p)
					if errors.Is(err, errUnsupported) && p != writeFsync {
						// No writeback hint or no O_DIRECT here: the
						// other patterns are the limit.
						*dst = math.NaN()
						continue
					} else if err != nil {
						return fmt.Errorf("raw writers (%s): %w", patternName(p), err)
					}
					*dst = bestRawWrite(*dst, v)
					rawV = max(rawV, v)
				}
				return nil
			}
			staged := func() (err error) {
				stagedV, err = stageOnce(ctx, work, ds, 1, w)
				return err
			}
			first, second := raw, staged
			if (pass+i)%2 == 1 {
				first, second = staged, raw
			}
			if err := first(); err != nil {
				return r, err
			}
			if err := second(); err != nil {
				return r, err
			}
			r.RawWriters[i] = StagePoint{N: w, BytesPerSecond: max(r.RawWriters[i].BytesPerSecond, rawV)}
			r.Writers[i] = StagePoint{N: w, BytesPerSecond: max(r.Writers[i].BytesPerSecond, stagedV)}
			cfg.Progress(fmt.Sprintf("fig. 9, pass %d: %2d writers: staging %s, raw %s", pass+1, w,
				units.FormatBandwidth(stagedV), units.FormatBandwidth(rawV)))
		}
	}
	best := 0.0
	for i := range r.Writers {
		r.RawWrite = max(r.RawWrite, r.RawWriters[i].BytesPerSecond)
		r.RawWriteFsync = max(r.RawWriteFsync, r.RawFsync[i])
		best = max(best, r.Writers[i].BytesPerSecond)
	}
	if r.RawWrite > 0 {
		r.StageWriteRatio = best / r.RawWrite
	}
	if r.RawWriteFsync > 0 {
		r.StageWriteFsyncRatio = best / r.RawWriteFsync
	}

	// Fig. 10.
	r.Servers = make([]StagePoint, len(cfg.Servers))
	for pass := range cfg.Passes {
		for i, s := range cfg.Servers {
			v, err := stageOnce(ctx, work, ds, s, cfg.ServerWriters)
			if err != nil {
				return r, err
			}
			r.Servers[i] = StagePoint{N: s, BytesPerSecond: max(r.Servers[i].BytesPerSecond, v)}
			cfg.Progress(fmt.Sprintf("fig. 10, pass %d: %d servers × %d writers: %s", pass+1, s, cfg.ServerWriters,
				units.FormatBandwidth(v)))
		}
	}
	for _, pts := range [][]StagePoint{r.Writers, r.Servers} {
		for i := range pts {
			if r.RawWrite > 0 {
				pts[i].Ratio = pts[i].BytesPerSecond / r.RawWrite
			}
		}
	}

	if len(cfg.Rates) > 0 {
		if err := runAlpha(ctx, cfg, work, ds, &r); err != nil {
			return r, err
		}
	}
	return r, nil
}

// FitSlope fits y = c·x through the origin by least squares: Σxy / Σx².
// It is NaN without a non-zero x.
func FitSlope(xs, ys []float64) float64 {
	var xy, xx float64
	for i := range xs {
		xy += xs[i] * ys[i]
		xx += xs[i] * xs[i]
	}
	if xx == 0 {
		return math.NaN()
	}
	return xy / xx
}

// stageData is a checkpoint in the caches of its nodes: rank r's one file
// in node r mod nodes's cache, written through the local backend as the
// store writes it. Every checkpoint the benchmark announces is a new name
// for these same files.
type stageData struct {
	ranks, nodes int
	fileSize     int64
	caches       []*local.Backend // by node
	hashes       []manifest.Hash  // by rank

	mu        sync.Mutex
	manifests map[string][]byte
	nextID    atomic.Uint64
}

const stageFile = "state.bin"

func stageNode(n int) string { return fmt.Sprintf("node%d", n) }

// stageObject is rank's file in its node's cache (the store's layout,
// under a fixed checkpoint name).
func stageObject(rank int) string { return fmt.Sprintf("data/rank-%d/%s", rank, stageFile) }

func newStageData(ctx context.Context, dir string, ranks, nodes int, fileSize int64, buf []byte) (*stageData, error) {
	ds := &stageData{ranks: ranks, nodes: nodes, fileSize: fileSize, manifests: map[string][]byte{}}
	for n := range nodes {
		be, err := local.New(filepath.Join(dir, stageNode(n)))
		if err != nil {
			return nil, err
		}
		ds.caches = append(ds.caches, be)
	}
	b := slices.Clone(buf)
	for r := range ranks {
		w, err := ds.caches[r%nodes].Create(ctx, stageObject(r))
		if err != nil {
			return nil, err
		}
		h := manifest.NewContentHasher()
		for n, i := int64(0), 0; n < fileSize; n, i = n+block, i+1 {
			b[0], b[1], b[2] = byte(r), byte(i), byte(i>>8)
			p := b[:min(block, fileSize-n)]
			h.Write(p)
			if _, err := w.Write(p); err != nil {
				w.Abort()
				return nil, err
			}
		}
		if err := w.Commit(); err != nil {
			return nil, err
		}
		ds.hashes = append(ds.hashes, h.Sum128())
	}
	return ds, nil
}

// announce makes up a new checkpoint of the cached files, its ranks on the
// nodes nodeOf gives, and returns its name and encoded manifest. The
// caches serve it until forget.
func (ds *stageData) announce(nodeOf func(rank int) string) (string, []byte, error) {
	id := ds.nextID.Add(1)
	name := fmt.Sprintf("bench.%d", id)
	parts := make([]manifest.Part, ds.ranks)
	sets := make([][]int, ds.ranks)
	for r := range parts {
		parts[r] = manifest.Part{Rank: r, Node: nodeOf(r), Set: r,
			Files: []manifest.File{{Rank: r, Name: stageFile, Size: ds.fileSize, Hash: ds.hashes[r]}}}
		sets[r] = []int{r}
	}
	m, err := manifest.Merge(parts, manifest.Meta{Name: name, ID: id, Created: time.Now().UTC(),
		Ranks: ds.ranks, Scheme: "single", SetSize: 1, M: 0, Sets: sets, Level: manifest.LevelCache})
	if err != nil {
		return "", nil, err
	}
	enc, err := manifest.Encode(m)
	if err != nil {
		return "", nil, err
	}
	ds.mu.Lock()
	ds.manifests[name] = enc
	ds.mu.Unlock()
	return name, enc, nil
}

func (ds *stageData) forget(name string) {
	ds.mu.Lock()
	delete(ds.manifests, name)
	ds.mu.Unlock()
}

// Manifest implements stage.Source.
func (ds *stageData) Manifest(_ context.Context, name string) ([]byte, error) {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	enc, ok := ds.manifests[name]
	if !ok {
		return nil, storage.ErrNotExist
	}
	return enc, nil
}

// Open implements stage.Source with the local backend's own reader, as the
// job's storeSource does: its WriteTo sends the file with sendfile(2). Every
// checkpoint name is the same files.
func (ds *stageData) Open(ctx context.Context, name string, rank int, file string, offset, length int64) (io.ReadCloser, error) {
	if _, err := ds.Manifest(ctx, name); err != nil {
		return nil, err
	}
	if rank < 0 || rank >= ds.ranks || file != stageFile {
		return nil, storage.ErrNotExist
	}
	return ds.caches[rank%ds.nodes].Open(ctx, stageObject(rank), offset, length)
}

// stagers are staging servers on loopback ports, each writing into its own
// local backend of one shared directory, and one client per node.
type stagers struct {
	dir     string
	shared  []storage.Backend // each server's
	servers []*stage.Server
	clients []*stage.Client
}

const (
	stageToken = "bench"
	stageChunk = 4 << 20 // the servers' chunk size (their default)
)

// startStagers starts servers with cfg (Shared set per server) and a client
// for each of nodes, node n talking to server n mod servers.
func startStagers(dir string, servers int, cfg stage.Config, ds *stageData, nodes []string) (*stagers, error) {
	st := &stagers{dir: dir}
	var addrs []string
	for i := range servers {
		be, err := local.New(dir)
		if err != nil {
			st.close()
			return nil, err
		}
		c := cfg
		st.shared = append(st.shared, be)
		c.Shared, c.Token, c.Name, c.ChunkSize = be, stageToken, fmt.Sprintf("stage%d", i), stageChunk
		srv, err := stage.NewServer(c)
		if err != nil {
			st.close()
			return nil, err
		}
		st.servers = append(st.servers, srv)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			st.close()
			return nil, err
		}
		go srv.Serve(ln)
		addrs = append(addrs, ln.Addr().String())
	}
	for i, node := range nodes {
		st.clients = append(st.clients, stage.NewClient(stage.ClientConfig{
			Addr: addrs[i%servers], Token: stageToken, Node: node, Source: ds}))
	}
	return st, nil
}

// close stops the clients, then the servers, and removes the shared
// directory.
func (st *stagers) close() {
	for _, c := range st.clients {
		c.Close()
	}
	for _, s := range st.servers {
		s.Close()
	}
	os.RemoveAll(st.dir)
}

// waitFlush waits until every client's part of checkpoint name is durable
// and the checkpoint committed: a client sees Committed, or (when its
// server was not the one that committed) the manifest is on the tier.
// A server tells a node its part is durable before it writes the manifest.
func (st *stagers) waitFlush(ctx context.Context, name string) error {
	for _, c := range st.clients {
		if err := c.WaitIdle(ctx); err != nil {
			return err
		}
		if s, reason, _ := c.State(name); s != stage.Durable && s != stage.Committed {
			return fmt.Errorf("staging %s: %s: %s", name, s, reason)
		}
	}
	for {
		for _, c := range st.clients {
			if s, _, _ := c.State(name); s == stage.Committed {
				return nil
			}
		}
		if ok, err := sharedtier.Exists(ctx, st.shared[0], name); err != nil || ok {
			return err
		}
		select {
		case <-time.After(200 * time.Microsecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// stageOnce flushes one checkpoint of ds through servers staging servers
// of writers writers each, into a fresh shared directory, and returns the
// checkpoint's bytes over the time from the announcements until it is
// committed on the shared tier.
func stageOnce(ctx context.Context, work string, ds *stageData, servers, writers int) (float64, error) {
	nodes := make([]string, ds.nodes)
	for n := range nodes {
		nodes[n] = stageNode(n)
	}
	name, enc, err := ds.announce(func(r int) string { return stageNode(r % ds.nodes) })
	if err != nil {
		return 0, err
	}
	defer ds.forget(name)
	dir := filepath.Join(work, "shared-"+name)
	st, err := startStagers(dir, servers, stage.Config{Writers: writers}, ds, nodes)
	if err != nil {
		return 0, err
	}
	defer st.close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	// Each pass starts with no dirty pages left by the one before.
	syscall.Sync()
	start := time.Now()
	for n, c := range st.clients {
		var ranks []int
		for r := n; r < ds.ranks; r += ds.nodes {
			ranks = append(ranks, r)
		}
		if err := c.Announce(name, enc, ranks); err != nil {
			return 0, err
		}
	}
	if err := st.waitFlush(ctx, name); err != nil {
		return 0, err
	}
	d := time.Since(start).Seconds()
	return float64(ds.fileSize) * float64(ds.ranks) / d, nil
}

// rawParallel is Fig. 9's limit: writers goroutines write files files of
// size bytes each, taking the next file as they finish one, with pattern p
// (fsync'd), into dir. It returns the bytes per second of the whole.
func rawParallel(dir string, files int, size int64, writers int, buf []byte, p writePattern) (float64, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	syscall.Sync()
	var next atomic.Int64
	errs := make([]error, writers)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range writers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= files {
					return
				}
				if _, err := rawWriteAs(filepath.Join(dir, fmt.Sprintf("raw%d", i)), size, buf, p); err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	wg.Wait()
	d := time.Since(start).Seconds()
	return float64(files) * float64(size) / d, errors.Join(errs...)
}

// runAlpha measures Fig. 11. The Himeno work's time drifts by tens of
// per cent from run to run on a virtual machine, neighbours or not, so
// each point is a ratio of two adjacent runs, one alone and one while a
// staging server pulls at the rate (their order alternating), and α is the
// median of Trials such pairs, less one.
func runAlpha(ctx context.Context, cfg StageConfig, work string, ds *stageData, r *StageResult) error {
	hw, err := newHimenoWork(cfg.Himeno, max(cfg.HimenoRanks, 1))
	if err != nil {
		return err
	}
	alone := func(iters int) (float64, float64, error) {
		settle()
		m := startCPUMeter()
		secs, err := hw.run(ctx, iters)
		return secs, m.others(), err
	}
	// Calibrate: warm up, then time a few iterations to size the work.
	if _, err := hw.run(ctx, 2); err != nil {
		return err
	}
	const probe = 5
	per, err := quietly(cfg, fmt.Sprintf("fig. 11: Himeno %s on %d ranks, %d iterations", cfg.Himeno, hw.ranks(), probe),
		func() (float64, float64, string, error) {
			secs, others, err := alone(probe)
			return secs, others, fmt.Sprintf("%.3fs", secs), err
		})
	if err != nil {
		return err
	}
	iters := max(2, int(math.Ceil(cfg.HimenoSeconds/(per/probe))))
	r.HimenoIterations = iters
	cfg.Progress(fmt.Sprintf("fig. 11: Himeno %s on %d ranks, %d iterations (about %.2fs alone)",
		cfg.Himeno, hw.ranks(), iters, per/probe*float64(iters)))
	r.HimenoSeconds = math.Inf(1)
	pairs := make([][]AlphaPoint, len(cfg.Rates))
	for trial := range cfg.Trials {
		for i, rate := range cfg.Rates {
			p, err := quietly(cfg, fmt.Sprintf("fig. 11, pair %d, at most %s", trial+1, units.FormatBandwidth(rate)),
				func() (AlphaPoint, float64, string, error) {
					p := AlphaPoint{Rate: rate}
					var othersAlone, othersStaged float64
					var err error
					runAlone := func() { p.Baseline, othersAlone, err = alone(iters) }
					runStaged := func() { p.Seconds, p.Measured, othersStaged, err = alphaOnce(ctx, cfg, work, ds, hw, iters, rate) }
					first, second := runAlone, runStaged
					if (trial+i)%2 == 1 {
						first, second = runStaged, runAlone
					}
					if first(); err == nil {
						second()
					}
					p.Alpha = p.Seconds/p.Baseline - 1
					return p, max(othersAlone, othersStaged), fmt.Sprintf("alone %.3fs, staging %.3fs reading %s: alpha %+.3f",
						p.Baseline, p.Seconds, units.FormatBandwidth(p.Measured), p.Alpha), err
				})
			if err != nil {
				return err
			}
			pairs[i] = append(pairs[i], p)
			r.HimenoSeconds = min(r.HimenoSeconds, p.Baseline)
		}
	}
	r.Alpha = make([]AlphaPoint, len(cfg.Rates))
	xs, ys := make([]float64, len(r.Alpha)), make([]float64, len(r.Alpha))
	for i, ps := range pairs {
		slices.SortFunc(ps, func(a, b AlphaPoint) int { return cmp.Compare(a.Alpha, b.Alpha) })
		r.Alpha[i] = ps[len(ps)/2]
		xs[i], ys[i] = r.Alpha[i].Measured/1e9, r.Alpha[i].Alpha
	}
	r.AlphaSlope = FitSlope(xs, ys)
	r.AlphaAtPaperRate = r.AlphaSlope * PaperReadRate / 1e9
	return nil
}

// alphaOnce times the Himeno work while one staging server, capped at rate,
// pulls checkpoints from this process's client without pause: every rank
// of the checkpoint is on the one node, and the next checkpoint is
// announced as soon as the previous one is committed. It returns the
// work's seconds, the bytes per second the server pulled meanwhile, and the
// cores other processes took.
func alphaOnce(ctx context.Context, cfg StageConfig, work string, ds *stageData, hw *himenoWork, iters int, rate float64) (secs, read, others float64, err error) {
	const node = "node0"
	st, err := startStagers(filepath.Join(work, "shared-alpha"), 1,
		stage.Config{Writers: cfg.ServerWriters, Rate: rate, Keep: 1}, ds, []string{node})
	if err != nil {
		return 0, 0, 0, err
	}
	defer st.close()
	srv, client := st.servers[0], st.clients[0]
	all := make([]int, ds.ranks)
	for r := range all {
		all[r] = r
	}
	loopCtx, cancel := context.WithCancel(ctx)
	var loopErr error
	loopDone := make(chan struct{})
	go func() {
		defer close(loopDone)
		for loopCtx.Err() == nil {
			name, enc, err := ds.announce(func(int) string { return node })
			if err != nil {
				loopErr = err
				return
			}
			if err := client.Announce(name, enc, all); err != nil {
				loopErr = err
				return
			}
			err = st.waitFlush(loopCtx, name)
			ds.forget(name)
			if err != nil && loopCtx.Err() == nil {
				loopErr = err
				return
			}
		}
	}()
	stop := func() error {
		cancel()
		<-loopDone
		return loopErr
	}
	// Time the work once the server pulls steadily. Each of its W writers
	// waits for the tokens of its next chunk before it takes in the one
	// that arrived, so at first one chunk is counted, then none until W
	// chunks' tokens were granted; from the next one on, chunks are counted
	// at the rate they are pulled.
	settle()
	steady := 3 * min(stageChunk, ds.fileSize)
	for deadline := time.Now().Add(time.Minute); srv.Stats().BytesPulled < steady; {
		if time.Now().After(deadline) {
			stop()
			return 0, 0, 0, fmt.Errorf("fig. 11: the staging server pulled %d bytes in a minute", srv.Stats().BytesPulled)
		}
		time.Sleep(time.Millisecond)
	}
	m := startCPUMeter()
	b0, t0 := srv.Stats().BytesPulled, time.Now()
	secs, err = hw.run(ctx, iters)
	b1, d := srv.Stats().BytesPulled, time.Since(t0).Seconds()
	others = m.others()
	if lerr := stop(); err == nil {
		err = lerr
	}
	return secs, float64(b1-b0) / d, others, err
}

// Other processes share this machine's cores (on the project's machine,
// other jobs come and go): a timed run of the Himeno work during which they
// took more than quietCores of CPU is repeated, up to quietRetries times,
// and the quietest attempt kept.
const (
	quietCores   = 0.3
	quietRetries = 3
)

// quietly runs one measurement, repeating it while other processes were
// busy, reports each attempt, and returns the quietest. run returns its
// value, the cores other processes took, and a description.
func quietly[T any](cfg StageConfig, what string, run func() (T, float64, string, error)) (T, error) {
	var best T
	bestOthers := math.Inf(1)
	for attempt := 0; ; attempt++ {
		v, others, desc, err := run()
		if err != nil {
			return v, err
		}
		cfg.Progress(fmt.Sprintf("%s: %s (other processes: %.2f cores)", what, desc, others))
		if others < bestOthers {
			best, bestOthers = v, others
		}
		if others <= quietCores || attempt == quietRetries {
			return best, nil
		}
	}
}

// cpuMeter measures the CPU that processes other than this one take, from
// the machine's totals in /proc/stat less this process's rusage. It counts
// the kernel's work for this process done outside it (the write-back of
// its files) as others'. Where /proc/stat cannot be read it reports 0.
type cpuMeter struct {
	busy, self float64
	at         time.Time
	ok         bool
}

func startCPUMeter() cpuMeter {
	busy, self, ok := cpuSeconds()
	return cpuMeter{busy: busy, self: self, at: time.Now(), ok: ok}
}

// others returns the cores other processes took on average since start.
func (m cpuMeter) others() float64 {
	busy, self, ok := cpuSeconds()
	if !ok || !m.ok {
		return 0
	}
	return max(0, (busy-m.busy)-(self-m.self)) / time.Since(m.at).Seconds()
}

// cpuSeconds returns the CPU seconds the whole machine and this process
// spent so far.
func cpuSeconds() (machine, self float64, ok bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, false
	}
	var user, nice, system, idle, iowait, irq, softirq, steal uint64
	if n, _ := fmt.Sscanf(string(b), "cpu %d %d %d %d %d %d %d %d", &user, &nice, &system, &idle, &iowait, &irq, &softirq, &steal); n != 8 {
		return 0, 0, false
	}
	const hz = 100 // USER_HZ, 100 on every Linux platform Go supports
	machine = float64(user+nice+system+irq+softirq+steal) / hz
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0, 0, false
	}
	self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
	return machine, self, true
}

// settle starts a timed run of the Himeno work with no dirty pages and no
// garbage left by what ran before.
func settle() {
	syscall.Sync()
	runtime.GC()
}

// himenoWork is the Himeno example on ranks that are goroutines of this
// process, exchanging halos over channels. The solvers are made once and
// reused: every iteration is the same work.
type himenoWork struct {
	solvers []*himeno.Solver
	comms   []himeno.Comm
}

func newHimenoWork(cfg himeno.Config, ranks int) (*himenoWork, error) {
	hw := &himenoWork{comms: newChanWorld(ranks)}
	for r := range ranks {
		s, err := himeno.New(cfg, r, ranks)
		if err != nil {
			return nil, err
		}
		hw.solvers = append(hw.solvers, s)
	}
	return hw, nil
}

func (hw *himenoWork) ranks() int { return len(hw.solvers) }

// run does iters iterations on every rank and returns the seconds they
// took.
func (hw *himenoWork) run(ctx context.Context, iters int) (float64, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, len(hw.solvers))
	var wg sync.WaitGroup
	start := time.Now()
	for r, s := range hw.solvers {
		wg.Go(func() {
			for range iters {
				if _, err := s.Step(ctx, hw.comms[r]); err != nil {
					errs[r] = err
					cancel() // the other ranks would wait for this one forever
					return
				}
			}
		})
	}
	wg.Wait()
	return time.Since(start).Seconds(), errors.Join(errs...)
}

// chanWorld is a himeno.Comm for ranks that are goroutines: a buffered
// channel per ordered pair for messages, another for all-gathers.
type chanWorld struct {
	n      int
	links  [][]chan chanMsg // [from][to]
	gather [][]chan []byte  // [from][to]
}

type chanMsg struct {
	tag  uint64
	data []byte
}

type chanComm struct {
	w    *chanWorld
	rank int
}

func newChanWorld(n int) []himeno.Comm {
	w := &chanWorld{n: n, links: make([][]chan chanMsg, n), gather: make([][]chan []byte, n)}
	for i := range n {
		w.links[i] = make([]chan chanMsg, n)
		w.gather[i] = make([]chan []byte, n)
		for j := range n {
			w.links[i][j] = make(chan chanMsg, 2)
			w.gather[i][j] = make(chan []byte, 2)
		}
	}
	out := make([]himeno.Comm, n)
	for i := range out {
		out[i] = &chanComm{w: w, rank: i}
	}
	return out
}

func (c *chanComm) Rank() int { return c.rank }
func (c *chanComm) Size() int { return c.w.n }

func (c *chanComm) Send(ctx context.Context, to int, tag uint64, msg []byte) error {
	select {
	case c.w.links[c.rank][to] <- chanMsg{tag: tag, data: slices.Clone(msg)}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *chanComm) Recv(ctx context.Context, from int, tag uint64, buf []byte) ([]byte, error) {
	select {
	case m := <-c.w.links[from][c.rank]:
		if m.tag != tag {
			return nil, fmt.Errorf("message from rank %d has tag %d, want %d", from, m.tag, tag)
		}
		if len(m.data) <= cap(buf) {
			return append(buf[:0], m.data...), nil
		}
		return m.data, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *chanComm) AllGather(ctx context.Context, data []byte) ([][]byte, error) {
	out := make([][]byte, c.w.n)
	out[c.rank] = slices.Clone(data)
	for to := range c.w.n {
		if to == c.rank {
			continue
		}
		select {
		case c.w.gather[c.rank][to] <- out[c.rank]:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	for from := range c.w.n {
		if from == c.rank {
			continue
		}
		select {
		case out[from] = <-c.w.gather[from][c.rank]:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return out, nil
}
