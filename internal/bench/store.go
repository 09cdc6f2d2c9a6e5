// Package bench measures ckpt against the machine's own limits, in one run:
// each figure comes with the limit it is compared to (raw sequential write
// and read of the same directory, memory copy), so the ratios carry across
// machines.
package bench

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/ckpt/ckpt/internal/engine"
	"github.com/ckpt/ckpt/internal/localcomm"
	"github.com/ckpt/ckpt/internal/redundancy"
	"github.com/ckpt/ckpt/internal/storage/local"
)

// StoreConfig is what `ckpt bench store` measures.
type StoreConfig struct {
	Dir          string // a directory on the disk to measure (the cache's disk)
	Size         int64  // bytes per figure
	ScenarioRank int64  // bytes per rank in the scenario (4 ranks)
	// ShmDir is the tmpfs the scenario's checkpoint and its floor run on
	// as well (DefaultShmDir if empty).
	ShmDir   string
	Progress func(step string)
}

// StoreResult holds throughputs in bytes/s and durations in seconds. A
// figure this machine cannot measure (O_DIRECT on tmpfs, a cold cache
// where the page cache cannot be emptied) is NaN.
type StoreResult struct {
	// RawWrite is the write limit: the best of the raw write patterns
	// below, each the best of 3, so that a writer cannot beat its limit by
	// a pattern the limit did not try. RawWriteFsync writes everything
	// then fsyncs once (the limit before issue 17), RawWriteWriteback
	// starts writeback every 8 MiB as the cache's writer does, and
	// RawWriteDirect bypasses the page cache (O_DIRECT).
	RawWrite, RawWriteFsync, RawWriteWriteback, RawWriteDirect float64
	// RawRead and Restart are the read limit and the restart (Restart,
	// which verifies every byte, then the application's read of the
	// restored file) in the same cache state: cold if ColdMethod could
	// empty the page cache, else hot. Both states are below too.
	RawRead, MemCopy           float64
	CacheWrite, XOREncode      float64
	RSEncode, Restart, Rebuild float64

	CacheWriteRatio, XOREncodeRatio, RSEncodeRatio float64
	RestartRatio, RebuildRatio                     float64
	// CacheWriteFsyncRatio is the cache write over RawWriteFsync: the
	// cache_write_ratio of the tool before issue 17, for comparison.
	CacheWriteFsyncRatio float64

	// The restart and its raw read, each of the same file, with the page
	// cache holding it (hot) and emptied before each (cold), and the
	// method that emptied it (coldDropCaches, coldFadvise or coldNone).
	RawReadHot, RawReadCold, RestartHot, RestartCold float64
	RestartHotRatio, RestartColdRatio                float64
	ColdMethod                                       string

	// XOREncodeTCP is the whole encode of an XOR set of 4 members × Size
	// over the network transport (4 peer Nodes on loopback): the set's
	// checkpoint bytes per second, which for XOR are also the bytes that
	// cross the network. LoopbackTCP is a plain loopback TCP copy of the
	// same bytes between the same pairs, its limit.
	XOREncodeTCP, LoopbackTCP, XOREncodeTCPRatio float64

	// The scenario with the default cache durability (every file synced:
	// the checkpoint survives a crash of its node).
	ScenarioCheckpoint, ScenarioFlush, ScenarioRebuildRestart float64
	// The scenario again with caches that survive the processes' crash but
	// not the node's (process durability: no sync, as SCR treats the files
	// applications write).
	ProcessCheckpoint, ProcessFlush, ProcessRebuildRestart float64
	// ScenarioRawWrite is the scenario's older limit: 4 writers writing the
	// ranks' data alone raw (with fsync) into the same directory at once;
	// without the parity it is below ScenarioFloor.
	ScenarioRawWrite float64

	// ScenarioFloor is the synced checkpoint's physical floor (issue 17):
	// the seconds 4 writers take to write the scenario's data and parity
	// (FloorBytes), each file fsync'd, into Dir, with the fastest write
	// pattern (ScenarioFloorPattern), measured beside the checkpoint.
	// ScenarioFloorRatio is it over ScenarioCheckpoint: at most 1, the
	// share of the floor a checkpoint reaches (1: at the floor).
	ScenarioFloor, ScenarioFloorRatio float64
	ScenarioFloorPattern              string
	// ScenarioFloorBytes is the bytes the floor writes: 4 × (data + parity).
	ScenarioFloorBytes int64
	// The same on tmpfs (ShmDir): the checkpoint with the caches there
	// (default cache durability; fsync costs tmpfs nothing), its floor and
	// their ratio (the floor over the checkpoint). NaN, with ShmStatus saying why, where ShmDir is missing
	// or too small.
	ShmCheckpoint, ShmFloor, ShmFloorRatio float64
	ShmStatus                              string
}

const block = 1 << 20

// RunStore runs every measurement; it writes below cfg.Dir and removes what
// it wrote.
func RunStore(ctx context.Context, cfg StoreConfig) (StoreResult, error) {
	var r StoreResult
	if cfg.Progress == nil {
		cfg.Progress = func(string) {}
	}
	work, buf, err := workspace(cfg.Dir, "ckpt-bench-")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(work)

	cfg.Progress("raw sequential write: fsync at the end, writeback every 8 MiB, O_DIRECT")
	if err := rawWrites(&r, filepath.Join(work, "raw"), cfg.Size, buf); err != nil {
		return r, err
	}

	cfg.Progress("memory copy")
	r.MemCopy, _ = best3(func() (float64, error) { return memCopy(8, cfg.Size), nil })

	cfg.Progress("cache write, then restart with verification and the application's read, against a raw read, cold and hot")
	if err := cacheWriteRestart(ctx, &r, filepath.Join(work, "single"), cfg.Size, buf); err != nil {
		return r, err
	}

	cfg.Progress("XOR and RS(8+2) encoding")
	if r.XOREncode, err = best3(func() (float64, error) { return encode(8, 1, cfg.Size) }); err != nil {
		return r, err
	}
	if r.RSEncode, err = best3(func() (float64, error) { return encode(8, 2, cfg.Size) }); err != nil {
		return r, err
	}

	cfg.Progress("XOR (xor:4) encoding over TCP, 4 nodes on loopback, and raw loopback TCP")
	if r.XOREncodeTCP, r.LoopbackTCP, err = encodeTCP(ctx, cfg.Size, buf, 3); err != nil {
		return r, err
	}

	cfg.Progress("scenario: 4 ranks over 4 nodes, XOR across the 4, beside its floor (the same data and parity written raw, fsync'd)")
	// Every scenario runs twice and each step keeps its better time: a job
	// checkpoints again and again, and its steady state is what counts. (On
	// a virtual machine the first pass also pays the hypervisor's first
	// touch of the memory the page cache takes, which can triple it.)
	if r.ScenarioRawWrite, err = best2(func() (float64, error) {
		return ScenarioRaw(filepath.Join(work, "scenario-raw"), cfg.ScenarioRank, buf)
	}); err != nil {
		return r, err
	}
	// The floor and the synced scenario take turns, so that each sees the
	// disk in the same state as often as the other.
	sc, err := alternate(
		func() (float64, string, error) {
			return floorPatterns(filepath.Join(work, "floor"), cfg.ScenarioRank, buf)
		},
		func() ([3]float64, error) {
			return scenario(ctx, filepath.Join(work, "scenario"), cfg.ScenarioRank, buf, true)
		}, &r.ScenarioFloor, &r.ScenarioFloorPattern)
	if err != nil {
		return r, err
	}
	r.ScenarioCheckpoint, r.ScenarioFlush, r.ScenarioRebuildRestart = sc[0], sc[1], sc[2]
	cfg.Progress("scenario again, caches without sync (process durability)")
	sc, err = bestScenario(func() ([3]float64, error) {
		return scenario(ctx, filepath.Join(work, "scenario-process"), cfg.ScenarioRank, buf, false)
	})
	if err != nil {
		return r, err
	}
	r.ProcessCheckpoint, r.ProcessFlush, r.ProcessRebuildRestart = sc[0], sc[1], sc[2]
	if err := shmScenario(ctx, &r, cfg, work, buf); err != nil {
		return r, err
	}
	r.setRatios(cfg.ScenarioRank)
	return r, nil
}

// workspace makes a new directory below dir, named from prefix, for a
// benchmark to write in (the caller removes it), and one block of random
// bytes for its writers: data that no file system or device compresses.
func workspace(dir, prefix string) (string, []byte, error) {
	work, err := os.MkdirTemp(dir, prefix)
	if err != nil {
		return "", nil, err
	}
	buf := make([]byte, block)
	if _, err := rand.Read(buf); err != nil {
		os.RemoveAll(work)
		return "", nil, err
	}
	return work, buf, nil
}

// setRatios computes every ratio of r from its measured figures: each a
// figure over the limit measured beside it in the same run.
func (r *StoreResult) setRatios(scenarioRank int64) {
	// Rebuild throughput: the lost rank's bytes over the rebuild-and-verify
	// restart, against writing the same bytes raw.
	r.Rebuild = float64(scenarioRank) / r.ScenarioRebuildRestart
	r.CacheWriteRatio = r.CacheWrite / r.RawWrite
	r.CacheWriteFsyncRatio = r.CacheWrite / r.RawWriteFsync
	r.XOREncodeRatio = r.XOREncode / r.MemCopy
	r.RSEncodeRatio = r.RSEncode / r.MemCopy
	r.XOREncodeTCPRatio = r.XOREncodeTCP / r.LoopbackTCP
	r.RestartHotRatio = r.RestartHot / r.RawReadHot
	r.RestartColdRatio = r.RestartCold / r.RawReadCold
	r.RawRead, r.Restart = r.RawReadHot, r.RestartHot
	if r.ColdMethod != coldNone {
		r.RawRead, r.Restart = r.RawReadCold, r.RestartCold
	}
	r.RestartRatio = r.Restart / r.RawRead
	r.RebuildRatio = r.Rebuild / r.RawWrite
	// The checkpoints over their floors: seconds over seconds, so at
	// least 1 unless the checkpoint wrote fewer bytes than the floor.
	r.ScenarioFloorRatio = r.ScenarioFloor / r.ScenarioCheckpoint
	r.ShmFloorRatio = r.ShmFloor / r.ShmCheckpoint
	data, parity, _ := FloorBytes(scenarioRank, scenarioMembers)
	r.ScenarioFloorBytes = scenarioMembers * (data + parity)
}

// alternate runs floor and then the scenario, twice, and keeps the better
// of each: the floor's shortest time and its pattern in *best and *pattern,
// the scenario's shortest time of each step returned.
func alternate(floor func() (float64, string, error), run func() ([3]float64, error), best *float64, pattern *string) ([3]float64, error) {
	var out [3]float64
	*best = math.Inf(1)
	for round := range 2 {
		d, p, err := floor()
		if err != nil {
			return out, err
		}
		if d < *best {
			*best, *pattern = d, p
		}
		sc, err := run()
		if err != nil {
			return out, err
		}
		for i := range out {
			if round == 0 || sc[i] < out[i] {
				out[i] = sc[i]
			}
		}
	}
	return out, nil
}

// shmScenario measures the scenario's checkpoint with the node caches on
// tmpfs (cfg.ShmDir), beside its floor there, and sets r's Shm figures;
// where the tmpfs is missing or too small it sets them to NaN and says why
// in r.ShmStatus, and in the progress, loudly.
func shmScenario(ctx context.Context, r *StoreResult, cfg StoreConfig, work string, buf []byte) error {
	r.ShmCheckpoint, r.ShmFloor = math.NaN(), math.NaN()
	dir := cfg.ShmDir
	if dir == "" {
		dir = DefaultShmDir
	}
	free, err := shmRoom(dir)
	if r.ShmStatus = shmVerdict(dir, free, shmNeed(cfg.ScenarioRank), err); r.ShmStatus != "" {
		cfg.Progress("WARNING: " + r.ShmStatus)
		return nil
	}
	shm, err := os.MkdirTemp(dir, "ckpt-bench-")
	if err != nil {
		r.ShmStatus = shmVerdict(dir, 0, 0, err)
		cfg.Progress("WARNING: " + r.ShmStatus)
		return nil
	}
	defer os.RemoveAll(shm)
	cfg.Progress("scenario's checkpoint with the caches on tmpfs (" + dir + "), beside its floor there")
	var pattern string
	sc, err := alternate(
		func() (float64, string, error) {
			return floorPatterns(filepath.Join(shm, "floor"), cfg.ScenarioRank, buf)
		},
		func() ([3]float64, error) {
			return scenarioSteps(ctx, filepath.Join(work, "scenario-shm"), filepath.Join(shm, "scenario"), scenarioMembers, cfg.ScenarioRank, buf, true, true)
		}, &r.ShmFloor, &pattern)
	r.ShmCheckpoint = sc[0]
	return err
}

// best2 returns the shorter of two durations.
func best2(f func() (float64, error)) (float64, error) {
	a, err := f()
	if err != nil {
		return 0, err
	}
	b, err := f()
	return min(a, b), err
}

// bestScenario runs the scenario twice and keeps each step's shorter time.
func bestScenario(f func() ([3]float64, error)) ([3]float64, error) {
	a, err := f()
	if err != nil {
		return a, err
	}
	b, err := f()
	for i := range a {
		a[i] = min(a[i], b[i])
	}
	return a, err
}

// best3 returns the best of three runs: the machine's noise only slows.
func best3(f func() (float64, error)) (float64, error) {
	best := 0.0
	for range 3 {
		v, err := f()
		if err != nil {
			return 0, err
		}
		best = max(best, v)
	}
	return best, nil
}

// memCopy copies k blocks of 1 MiB, the working set of one encoded row,
// until size bytes have moved, on one core: the limit for encoding.
func memCopy(k int, size int64) float64 {
	src, dst := make([]byte, k*block), make([]byte, k*block)
	start := time.Now()
	var n int64
	for n < size {
		copy(dst, src)
		n += int64(len(src))
	}
	return float64(n) / time.Since(start).Seconds()
}

// encode measures the parity computation itself: bytes of checkpoint data
// per second through the codec, one core, rows of k blocks of 1 MiB.
func encode(k, m int, size int64) (float64, error) {
	codec, err := redundancy.NewCodec(k, m)
	if err != nil {
		return 0, err
	}
	data := make([][]byte, k)
	for i := range data {
		data[i] = make([]byte, block)
		rand.Read(data[i])
	}
	parity := make([][]byte, m)
	for i := range parity {
		parity[i] = make([]byte, block)
	}
	start := time.Now()
	var done int64
	for done < size {
		if err := codec.Encode(data, parity); err != nil {
			return 0, err
		}
		done += int64(k * block)
	}
	return float64(done) / time.Since(start).Seconds(), nil
}

// writeFile writes size bytes into a checkpoint file, varying each block.
func writeFile(c *engine.Checkpoint, name string, size int64, buf []byte, seed byte) error {
	f, err := c.Create(name)
	if err != nil {
		return err
	}
	b := slices.Clone(buf)
	for n, i := int64(0), 0; n < size; n, i = n+block, i+1 {
		b[0], b[1] = seed, byte(i)
		if _, err := f.Write(b[:min(block, size-n)]); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

// rawWrites measures each raw write pattern, best of 3, the patterns
// taking turns, and sets the write limits of r. A pattern this file system
// refuses is NaN; the plain one must work.
func rawWrites(r *StoreResult, path string, size int64, buf []byte) error {
	patterns := []writePattern{writeFsync, writeWriteback, writeDirect}
	best := make([]float64, len(patterns))
	for round := range 3 {
		for i, p := range patterns {
			if math.IsNaN(best[i]) {
				continue
			}
			os.Remove(path)
			v, err := rawWriteAs(path, size, buf, p)
			switch {
			case errors.Is(err, errUnsupported) && p != writeFsync && round == 0:
				best[i] = math.NaN()
			case err != nil:
				return fmt.Errorf("raw write (%s): %w", []string{"fsync", "writeback", "O_DIRECT"}[i], err)
			default:
				best[i] = max(best[i], v)
			}
		}
	}
	os.Remove(path)
	r.RawWriteFsync, r.RawWriteWriteback, r.RawWriteDirect = best[0], best[1], best[2]
	r.RawWrite = bestRawWrite(best...)
	return nil
}

// cacheWriteRestart checkpoints size bytes on one rank, then measures the
// restart as the application pays it (Restart, which reads and verifies
// every byte, then the application's read of the restored file) beside a
// raw read of the same cached file, both with the page cache emptied
// before each (cold) and holding the file (hot). It sets r's cache write
// and restart figures.
func cacheWriteRestart(ctx context.Context, r *StoreResult, dir string, size int64, buf []byte) error {
	cache, err := local.New(dir)
	if err != nil {
		return err
	}
	defer cache.Close()
	// Keep every checkpoint: removing the previous one is retention, not writing.
	s := engine.New(engine.Config{Rank: 0, Size: 1, Node: "bench", Cache: cache, KeepCache: 10, Comm: localcomm.Solo{}})
	for i := range 3 {
		start := time.Now()
		c, err := s.Start(fmt.Sprintf("w%d", i))
		if err != nil {
			return err
		}
		if err := writeFile(c, "state.bin", size, buf, byte(i)); err != nil {
			return err
		}
		if err := c.Commit(ctx); err != nil {
			return err
		}
		r.CacheWrite = max(r.CacheWrite, float64(size)/time.Since(start).Seconds())
	}
	// The raw read reads the very file the restart verifies and returns.
	res, err := s.Restart(ctx)
	if err != nil {
		return err
	}
	path, err := res.Path("state.bin")
	if err != nil {
		return err
	}
	b := make([]byte, block)
	restart := func() (float64, error) {
		start := time.Now()
		n, err := restartRead(ctx, s, b)
		return float64(n) / time.Since(start).Seconds(), err
	}
	raw := func() (float64, error) { return rawRead(path) }
	measure := []func() (float64, error){raw, restart}
	hot := []*float64{&r.RawReadHot, &r.RestartHot}
	cold := []*float64{&r.RawReadCold, &r.RestartCold}
	r.ColdMethod = coldDropCaches // until an eviction fails
	for round := range 3 {
		// The raw read and the restart take turns at going first. The
		// cold pair comes first: each run leaves the file in the page
		// cache for the hot pair.
		order := []int{0, 1}
		if round%2 == 1 {
			order = []int{1, 0}
		}
		for _, k := range order {
			if r.ColdMethod == coldNone {
				break
			}
			if r.ColdMethod, _ = evict(dir, path); r.ColdMethod == coldNone {
				break
			}
			v, err := measure[k]()
			if err != nil {
				return err
			}
			*cold[k] = max(*cold[k], v)
		}
		for _, k := range order {
			v, err := measure[k]()
			if err != nil {
				return err
			}
			*hot[k] = max(*hot[k], v)
		}
	}
	if r.ColdMethod == coldNone {
		r.RawReadCold, r.RestartCold = math.NaN(), math.NaN()
	}
	return nil
}

// restartRead restarts and reads every restored file as an application
// does (through Restored.Open, which checks that the file is the one
// Restart verified, or hashes it as it reads);
// it returns the bytes read.
func restartRead(ctx context.Context, s *engine.Engine, b []byte) (int64, error) {
	res, err := s.Restart(ctx)
	if err != nil {
		return 0, err
	}
	var total int64
	for _, name := range res.Files() {
		rc, err := res.Open(name)
		if err != nil {
			return total, err
		}
		n, err := readAll(rc, b)
		total += n
		if cerr := rc.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// timeRanks runs fn on every rank's engine at once and returns the
// seconds until the last returned. Each step starts with no dirty pages
// left by the one before (sync first).
func timeRanks(engines []*engine.Engine, fn func(e *engine.Engine) error) (float64, error) {
	errs := make([]error, len(engines))
	var wg sync.WaitGroup
	syscall.Sync()
	start := time.Now()
	for r, e := range engines {
		wg.Go(func() { errs[r] = fn(e) })
	}
	wg.Wait()
	d := time.Since(start).Seconds()
	for r, err := range errs {
		if err != nil {
			return 0, fmt.Errorf("rank %d: %w", r, err)
		}
	}
	return d, nil
}

// ScenarioRaw is the scenario checkpoint's limit: the seconds 4 writers
// take to write rankBytes each, with fsync, into one directory at once.
func ScenarioRaw(dir string, rankBytes int64, buf []byte) (float64, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	syscall.Sync()
	rawStart := time.Now()
	var wg sync.WaitGroup
	rawErrs := make([]error, 4)
	for r := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := filepath.Join(dir, fmt.Sprintf("raw%d", r))
			_, rawErrs[r] = rawWrite(p, rankBytes, buf)
			os.Remove(p)
		}()
	}
	wg.Wait()
	d := time.Since(rawStart).Seconds()
	return d, errors.Join(rawErrs...)
}

// scenario: 4 ranks × rankBytes over 4 nodes, XOR across the 4, caches on
// disk, synced (a checkpoint survives its node's crash) or not (only the
// processes' crash): checkpoint, blocking flush to a shared directory,
// then restart after deleting one node's cache. Returns the three
// durations in seconds.
func scenario(ctx context.Context, dir string, rankBytes int64, buf []byte, synced bool) ([3]float64, error) {
	return scenarioSteps(ctx, dir, dir, scenarioMembers, rankBytes, buf, synced, false)
}

// scenarioSteps is scenario with the node caches below cacheDir (tmpfs,
// say), the shared directory below dir, and ranks ranks over as many
// nodes, in XOR sets of scenarioSetSize(ranks); checkpointOnly stops after
// the checkpoint, whose time is then the only one returned.
func scenarioSteps(ctx context.Context, dir, cacheDir string, ranks int, rankBytes int64, buf []byte, synced, checkpointOnly bool) ([3]float64, error) {
	var out [3]float64
	for _, d := range []string{dir, cacheDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return out, err
		}
		defer os.RemoveAll(d)
	}
	shared, err := local.New(filepath.Join(dir, "shared"))
	if err != nil {
		return out, err
	}
	var lopts []local.Option
	if !synced {
		lopts = append(lopts, local.WithoutSync())
	}
	// Each step is a launch of its own: new stores on the same caches.
	open := func(comms []*localcomm.Comm, r int) (*engine.Engine, error) {
		node := fmt.Sprintf("node%d", r)
		cache, err := local.New(filepath.Join(cacheDir, node), lopts...)
		if err != nil {
			return nil, err
		}
		return engine.New(engine.Config{Rank: r, Size: ranks, Node: node, Cache: cache, KeepCache: 2,
			Scheme: fmt.Sprintf("xor:%d", scenarioSetSize(ranks)), Comm: comms[r], Shared: shared}), nil
	}
	all := func(fn func(s *engine.Engine) error) (float64, error) {
		comms := localcomm.Job(ranks)
		stores := make([]*engine.Engine, ranks)
		for r := range stores {
			s, err := open(comms, r)
			if err != nil {
				return 0, err
			}
			stores[r] = s
		}
		return timeRanks(stores, fn)
	}
	if out[0], err = all(func(s *engine.Engine) error {
		c, err := s.Start("scenario")
		if err != nil {
			return err
		}
		if err := writeFile(c, "state.bin", rankBytes, buf, byte(s.Rank)); err != nil {
			return err
		}
		return c.Commit(ctx)
	}); err != nil || checkpointOnly {
		return out, err
	}
	if out[1], err = all(func(s *engine.Engine) error { return s.Flush(ctx, "scenario") }); err != nil {
		return out, err
	}
	if err := os.RemoveAll(filepath.Join(cacheDir, "node1")); err != nil {
		return out, err
	}
	if out[2], err = all(func(s *engine.Engine) error {
		res, err := s.Restart(ctx)
		if err == nil && res.Source != engine.SourceRebuild {
			err = fmt.Errorf("restart from %s, want a rebuild", res.Source)
		}
		return err
	}); err != nil {
		return out, err
	}
	return out, nil
}
