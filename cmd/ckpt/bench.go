package main

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/ckpt/ckpt/examples/himeno"
	"github.com/ckpt/ckpt/internal/bench"
	"github.com/ckpt/ckpt/internal/units"
)

func newBenchCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "bench",
		Short: "Measure ckpt against this machine's own limits",
	}
	c.AddCommand(newBenchStoreCmd(), newBenchCoordCmd(), newBenchCoordWorkerCmd(), newBenchOverheadCmd(), newBenchStageCmd(),
		newBenchTransparentCmd(), newBenchTransparentHolderCmd(), newBenchAllCmd(), newBenchCompressCmd(), newBenchScalingCmd())
	return c
}

func newBenchStoreCmd() *cobra.Command {
	c := leaf("store [--dir DIR] [--size B] [--json]", "Checkpoint store throughput as ratios to raw disk and memory speed, and a whole scenario", benchStoreLong, "")
	f := &benchStoreFlags{}
	f.dir = c.Flags().String("dir", os.TempDir(), "directory on the disk to measure")
	f.size = sizeFlag(c.Flags(), "size", "bytes per measurement (default 256MiB)")
	f.scenario = sizeFlag(c.Flags(), "scenario-size", "bytes per rank in the scenario (default 512MiB)")
	f.shm = c.Flags().String("shm-dir", bench.DefaultShmDir, "tmpfs for the scenario's checkpoint and floor on tmpfs")
	f.asJSON = jsonFlag(c)
	return runs(c, f)
}

// benchStoreFlags are the flags of the command newBenchStoreCmd builds.
type benchStoreFlags struct {
	dir, shm       *string
	size, scenario *quantity
	asJSON         *bool
}

func (f *benchStoreFlags) run(c *cobra.Command) error {
	cfg := bench.StoreConfig{Dir: *f.dir, Size: 256 << 20, ScenarioRank: 512 << 20, ShmDir: *f.shm}
	if err := benchSize(&cfg.Size, f.size, "size"); err != nil {
		return err
	}
	if err := benchSize(&cfg.ScenarioRank, f.scenario, "scenario-size"); err != nil {
		return err
	}
	if err := benchDir(cfg.Dir); err != nil {
		return err
	}
	cfg.Progress = benchProgress(c)
	r, err := bench.RunStore(c.Context(), cfg)
	if err != nil {
		return err
	}
	w := c.OutOrStdout()
	if *f.asJSON {
		return writeJSON(w, object{
			{"cache_write_ratio", num(r.CacheWriteRatio)},
			{"xor_encode_ratio", num(r.XOREncodeRatio)},
			{"rs_encode_ratio", num(r.RSEncodeRatio)},
			{"xor_encode_tcp_ratio", num(r.XOREncodeTCPRatio)},
			{"restart_ratio", num(r.RestartRatio)},
			{"rebuild_ratio", num(r.RebuildRatio)},
			{"raw_write_bytes_per_second", num(r.RawWrite)},
			{"raw_read_bytes_per_second", num(r.RawRead)},
			{"memcopy_bytes_per_second", num(r.MemCopy)},
			{"cache_write_bytes_per_second", num(r.CacheWrite)},
			{"xor_encode_bytes_per_second", num(r.XOREncode)},
			{"rs_encode_bytes_per_second", num(r.RSEncode)},
			{"xor_encode_tcp_bytes_per_second", num(r.XOREncodeTCP)},
			{"loopback_tcp_bytes_per_second", num(r.LoopbackTCP)},
			{"restart_bytes_per_second", num(r.Restart)},
			{"rebuild_bytes_per_second", num(r.Rebuild)},
			{"scenario_checkpoint_seconds", num(r.ScenarioCheckpoint)},
			{"scenario_flush_seconds", num(r.ScenarioFlush)},
			{"scenario_rebuild_restart_seconds", num(r.ScenarioRebuildRestart)},
			{"scenario_raw_write_seconds", num(r.ScenarioRawWrite)},
			{"scenario_process_checkpoint_seconds", num(r.ProcessCheckpoint)},
			{"scenario_process_flush_seconds", num(r.ProcessFlush)},
			{"scenario_process_rebuild_restart_seconds", num(r.ProcessRebuildRestart)},
			{"size_bytes", cfg.Size},
			{"scenario_rank_bytes", cfg.ScenarioRank},
			// Since issue 17: the write limit's patterns, the restart and
			// its raw read cold and hot, the ratios as they were before.
			{"raw_write_fsync_bytes_per_second", num(r.RawWriteFsync)},
			{"raw_write_writeback_bytes_per_second", num(r.RawWriteWriteback)},
			{"raw_write_direct_bytes_per_second", num(r.RawWriteDirect)},
			{"cache_write_fsync_ratio", num(r.CacheWriteFsyncRatio)},
			{"restart_cache_state", restartState(r)},
			{"cold_cache_method", r.ColdMethod},
			{"raw_read_cold_bytes_per_second", num(r.RawReadCold)},
			{"restart_cold_bytes_per_second", num(r.RestartCold)},
			{"restart_cold_ratio", num(r.RestartColdRatio)},
			{"raw_read_hot_bytes_per_second", num(r.RawReadHot)},
			{"restart_hot_bytes_per_second", num(r.RestartHot)},
			{"restart_hot_ratio", num(r.RestartHotRatio)},
			// The scenario's floors (issue 17): its data and parity
			// written raw, fsync'd, on the disk and on tmpfs, and the
			// checkpoint with the caches on tmpfs.
			{"scenario_floor_seconds", num(r.ScenarioFloor)},
			{"scenario_floor_pattern", r.ScenarioFloorPattern},
			{"scenario_floor_bytes", r.ScenarioFloorBytes},
			{"scenario_floor_ratio", num(r.ScenarioFloorRatio)},
			{"scenario_shm_checkpoint_seconds", num(r.ShmCheckpoint)},
			{"scenario_shm_floor_seconds", num(r.ShmFloor)},
			{"scenario_shm_floor_ratio", num(r.ShmFloorRatio)},
			{"scenario_shm_status", shmStatus(r)},
			{"shm_dir", cfg.ShmDir},
		})
	}
	t := newTable(w)
	t.row("MEASURE", "THROUGHPUT", "LIMIT", "RATIO")
	bw := units.FormatBandwidth
	t.row("cache write", bw(r.CacheWrite), "best raw write "+bw(r.RawWrite), fmt.Sprintf("%.2f", r.CacheWriteRatio))
	t.row("  raw write, fsync at the end", bw(r.RawWriteFsync), "", "")
	t.row("  raw write, writeback every 8 MiB", bw(r.RawWriteWriteback), "", "")
	t.row("  raw write, O_DIRECT", bwOrNone(r.RawWriteDirect), "", "")
	t.row("XOR encode (8+1)", bw(r.XOREncode), "memory copy "+bw(r.MemCopy), fmt.Sprintf("%.2f", r.XOREncodeRatio))
	t.row("RS encode (8+2)", bw(r.RSEncode), "memory copy "+bw(r.MemCopy), fmt.Sprintf("%.2f", r.RSEncodeRatio))
	t.row("XOR encode over TCP (xor:4)", bw(r.XOREncodeTCP), "loopback TCP "+bw(r.LoopbackTCP), fmt.Sprintf("%.2f", r.XOREncodeTCPRatio))
	t.row("restart with verify + read, "+restartState(r), bw(r.Restart), "raw read "+bw(r.RawRead), fmt.Sprintf("%.2f", r.RestartRatio))
	if r.ColdMethod == "none" {
		t.row("  cold", "not measured", "(the page cache could not be emptied)", "")
	} else {
		t.row("  cold ("+r.ColdMethod+")", bw(r.RestartCold), "raw read "+bw(r.RawReadCold), fmt.Sprintf("%.2f", r.RestartColdRatio))
	}
	t.row("  hot", bw(r.RestartHot), "raw read "+bw(r.RawReadHot), fmt.Sprintf("%.2f", r.RestartHotRatio))
	t.row("rebuild after node loss", bw(r.Rebuild), "best raw write "+bw(r.RawWrite), fmt.Sprintf("%.2f", r.RebuildRatio))
	t.flush()
	fmt.Fprintf(w, "\nscenario, 4 ranks × %s, XOR over 4 nodes:\n", units.FormatSize(float64(cfg.ScenarioRank)))
	t = newTable(w)
	d := units.FormatDuration
	t.row("", "CACHE SYNCED", "NOT SYNCED")
	t.row("  checkpoint", d(r.ScenarioCheckpoint), d(r.ProcessCheckpoint), fmt.Sprintf("(4 raw writers of the data alone, synced: %s)", d(r.ScenarioRawWrite)))
	t.row("  blocking flush", d(r.ScenarioFlush), d(r.ProcessFlush))
	t.row("  restart rebuilding one node", d(r.ScenarioRebuildRestart), d(r.ProcessRebuildRestart))
	if err := t.flush(); err != nil {
		return err
	}
	gib := units.FormatSize(float64(r.ScenarioFloorBytes))
	fmt.Fprintf(w, "\nfloor: the same %s of data and parity written raw, each file fsync'd:\n", gib)
	t = newTable(w)
	t.row("", "CHECKPOINT", "FLOOR", "RATIO")
	t.row("  caches on "+cfg.Dir, d(r.ScenarioCheckpoint), d(r.ScenarioFloor)+" ("+r.ScenarioFloorPattern+")", fmt.Sprintf("%.2f", r.ScenarioFloorRatio))
	if r.ShmStatus == "" {
		t.row("  caches on "+cfg.ShmDir+" (tmpfs)", d(r.ShmCheckpoint), d(r.ShmFloor), fmt.Sprintf("%.2f", r.ShmFloorRatio))
	}
	if err := t.flush(); err != nil {
		return err
	}
	if r.ShmStatus != "" {
		fmt.Fprintf(w, "\n*** WARNING: %s ***\n", r.ShmStatus)
	}
	return nil
}

// shmStatus is scenario_shm_status: "ok" where the scenario ran on tmpfs,
// else why not.
func shmStatus(r bench.StoreResult) string {
	if r.ShmStatus == "" {
		return "ok"
	}
	return r.ShmStatus
}

// restartState is the cache state restart_ratio was measured in.
func restartState(r bench.StoreResult) string {
	if r.ColdMethod == "none" {
		return "hot"
	}
	return "cold"
}

// bwOrNone formats a throughput that may not have been measured (NaN).
func bwOrNone(x float64) string {
	if math.IsNaN(x) {
		return "not measured"
	}
	return units.FormatBandwidth(x)
}

const benchStoreLong = `Measures, in one run on this machine: raw sequential write and read of DIR,
memory copy on one core, and ckpt's cache write (hashing, durable commit),
XOR (8+1) and RS(8+2) parity computation, the whole XOR encode of a set of
4 members over the network transport (TCP on loopback), restart with
verification of every byte, and rebuild after a node loss — each as bytes/s
and as a ratio to its limit: cache write and rebuild against raw write,
restart against raw read, encoding against memory copy, the encode over TCP
against raw loopback TCP carrying the same bytes between the same pairs.

The limits are the best this machine does (changed in issue 17):
  raw write   the best of three patterns, each with one fsync at the end:
              write everything first (raw_write_fsync_bytes_per_second, the
              only one before), start writeback every 8 MiB as the cache's
              writer does (..._writeback_...), and O_DIRECT (..._direct_...,
              null where the file system refuses it). cache_write_ratio and
              rebuild_ratio are over that best; cache_write_fsync_ratio is
              the cache write over the first pattern, the old ratio.
  restart     Restart (which verifies every byte) and then the application's
              read of the restored file, against a raw read of the same
              file, both in the same cache state: cold (the page cache
              emptied before each: drop_caches as root, which empties the
              whole machine's page cache, else POSIX_FADV_DONTNEED per file;
              cold_cache_method says which; on tmpfs none) and
              hot (the file in the page cache). restart_ratio,
              restart_bytes_per_second and raw_read_bytes_per_second are the
              cold figures, or the hot ones where the cache cannot be emptied
              (restart_cache_state says which); before issue 17 the restart
              did not include the application's read and the raw read was
              hot in some runs and cold in others.

The scenario's floor (issue 17): scenario_floor_seconds is the time 4
writers take to write what the synced checkpoint writes, each rank's data
and its XOR parity (ceil(B/3) for xor:4; scenario_floor_bytes in all),
each file fsync'd, into DIR, with the fastest of the three raw patterns
(scenario_floor_pattern), taking turns with the synced checkpoint;
scenario_floor_ratio is it over scenario_checkpoint_seconds (1: the
checkpoint at its floor). The same
again on tmpfs (--shm-dir, default /dev/shm): scenario_shm_floor_seconds,
and scenario_shm_checkpoint_seconds, the checkpoint with the 4 node caches
there (default durability: fsync costs tmpfs nothing), with
scenario_shm_floor_ratio. Where the tmpfs is missing or has too little
room (its free space or the memory available, below 1.1 × the floor's
bytes plus 8 MiB, about 1.5 × 4 × B),
those three are null and scenario_shm_status says why (else "ok"), and
the text output says so in a WARNING line.

Then one whole scenario: 4 ranks × 512 MiB
over 4 simulated nodes, XOR across the 4, caches in DIR: checkpoint,
blocking flush to a shared directory, restart after deleting one node's
cache; once with caches synced to disk (the default: a checkpoint survives
its node's crash) and once without sync (--cache-durability process: it
survives the processes' crash; a crashed node is rebuilt from redundancy).
DIR needs about 5 × 512 MiB free; everything written is removed.`

func newBenchCoordCmd() *cobra.Command {
	c := leaf("coord [--clients N] [--per-node P] [--netns H] [--json]\n  ckpt bench coord --simulate [--ranks N,N,...] [--per-node P] [--json]", "Coordinator scale: N ranks join and complete one checkpoint round, flat and as a tree", benchCoordLong+benchCoordSimLong, "")
	f := &benchCoordFlags{clients: c.Flags().Int("clients", 16384, "ranks (client connections)"),
		perNode:  c.Flags().Int("per-node", 256, "ranks per node in tree mode"),
		netns:    c.Flags().Int("netns", 0, "also measure with the clients spread over H hosts of their own (network namespaces; needs root and iproute2), and report both"),
		simulate: c.Flags().Bool("simulate", false, "drive the coordinator's state machines without sockets at each rank count of --ranks (see below)"),
		ranks:    &intList{v: slices.Clone(defaultSimRanks)},
	}
	c.Flags().Var(f.ranks, "ranks", "with --simulate: the rank counts, comma-separated")
	f.asJSON = jsonFlag(c)
	return runs(c, f)
}

// benchCoordFlags are the flags of the command newBenchCoordCmd builds.
type benchCoordFlags struct {
	clients, perNode, netns *int
	asJSON, simulate        *bool
	ranks                   *intList
}

func (f *benchCoordFlags) run(c *cobra.Command) error {
	if *f.simulate {
		return f.runSimulate(c)
	}
	if f.ranks.set {
		return usagef("--ranks: only with --simulate")
	}
	clients, perNode, asJSON := f.clients, f.perNode, f.asJSON
	if *clients < 1 || *clients > 1<<20 {
		return usagef("--clients %d: want 1 to %d", *clients, 1<<20)
	}
	if *perNode < 1 {
		return usagef("--per-node %d: want at least 1", *perNode)
	}
	hosts, done, err := benchHosts(c.ErrOrStderr(), *f.netns, *clients)
	if err != nil {
		return err
	}
	defer done()
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	cfg := bench.CoordConfig{
		Clients: *clients, PerNode: *perNode,
		Worker: func(args ...string) *exec.Cmd {
			return exec.Command(exe, append([]string{"bench", "coord-worker"}, args...)...)
		},
		Progress: benchProgress(c),
		Hosts:    hosts,
	}
	r, err := bench.RunCoord(c.Context(), cfg)
	if err != nil {
		return err
	}
	w := c.OutOrStdout()
	if *asJSON {
		return writeJSON(w, append(object{
			{"clients", *clients},
			{"per_node", *perNode},
			{"raw_seconds", num(r.Raw)},
			{"flat_seconds", num(r.Flat)},
			{"tree_seconds", num(r.Tree)},
			{"flat_ratio", num(r.Flat / r.Raw)},
			{"tree_ratio", num(r.Tree / r.Raw)},
		}, spreadJSON(r)...))
	}
	t := newTable(w)
	t.row("MODE", "SECONDS", "RATIO TO RAW")
	t.row("raw TCP barrier", fmt.Sprintf("%.3f", r.Raw), "1.00")
	t.row("flat", fmt.Sprintf("%.3f", r.Flat), fmt.Sprintf("%.2f", r.Flat/r.Raw))
	t.row(fmt.Sprintf("tree (%d per node)", *perNode), fmt.Sprintf("%.3f", r.Tree), fmt.Sprintf("%.2f", r.Tree/r.Raw))
	if err := t.flush(); err != nil {
		return err
	}
	return spreadTable(w, r, *perNode)
}

const benchCoordLong = `Measures, in one run over loopback sockets, how long N ranks take to join
a job's coordinator and complete one checkpoint round (the collective
decision to checkpoint, the commit vote, leaving):

  flat   every rank connects to the coordinator;
  tree   ranks connect to their node's sub-coordinator (P ranks per node),
         which speaks for them to the coordinator (Cao et al. 2016 §III-C);
  raw    the limit: bare TCP clients connect to a server that accepts them
         all, reads one byte from each, then writes one byte to each.

Each figure is reported in seconds and as a ratio to raw. The clients and
the sub-coordinators run in processes of their own, since 16K sockets on
each side do not fit one process's open files.

--netns H measures all three again in the same run with the ranks on H
hosts of their own (a network namespace each, on a bridge; the
coordinator on one more), and reports each figure beside its loopback
one (netns_*_vs_loopback: the goal is at most 1.2). It needs root and
iproute2; without them the loopback figures alone are reported, with a
notice.`

// newBenchCoordWorkerCmd is the worker process of bench coord.
func newBenchCoordWorkerCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "coord-worker",
		Hidden: true,
		Args:   cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			return bench.CoordWorker(c.Context(), args, c.OutOrStdout())
		},
	}
}

func newBenchOverheadCmd() *cobra.Command {
	c := leaf("overhead [--ranks N] [--size S] [--iterations I] [--trials T] [--json]", "Runtime overhead of checkpointing that is enabled but never due, on the Himeno example", benchOverheadLong, "")
	f := &benchOverheadFlags{ranks: c.Flags().Int("ranks", 4, "ranks"),
		size:   c.Flags().String("size", "s", "Himeno grid: xs, s, m, l, xl or IxJxK"),
		iters:  c.Flags().Int("iterations", 600, "iterations per run"),
		trials: c.Flags().Int("trials", 5, "runs of each kind")}
	f.asJSON = jsonFlag(c)
	return runs(c, f)
}

// benchOverheadFlags are the flags of the command newBenchOverheadCmd builds.
type benchOverheadFlags struct {
	ranks, iters, trials *int
	size                 *string
	asJSON               *bool
}

func (f *benchOverheadFlags) run(c *cobra.Command) error {
	ranksN, size, iters, trials, asJSON := f.ranks, f.size, f.iters, f.trials, f.asJSON
	grid, err := himeno.ParseSize(*size)
	if err != nil {
		return usagef("--size: %v", err)
	}
	switch {
	case *ranksN < 1 || *ranksN > grid.I-3:
		return usagef("--ranks %d: need 1 to %d for size %s", *ranksN, grid.I-3, grid)
	case *iters < 1:
		return usagef("--iterations %d: need at least 1", *iters)
	case *trials < 1:
		return usagef("--trials %d: need at least 1", *trials)
	}
	dir, err := os.MkdirTemp("", "ckpt-bench-overhead-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	r, err := bench.RunOverhead(c.Context(), bench.OverheadConfig{Dir: dir, Ranks: *ranksN, Size: grid,
		Iterations: *iters, Trials: *trials, Join: benchJoin,
		Progress: benchProgress(c)})
	if err != nil {
		return err
	}
	w := c.OutOrStdout()
	if *asJSON {
		return writeJSON(w, object{
			{"bare_seconds", num(r.Bare)},
			{"bare_overhead_ratio", num(r.BareRatio)},
			{"off_bare_ratio", num(r.OffBareRatio)},
			{"off_seconds", num(r.Off)},
			{"on_seconds", num(r.On)},
			{"overhead_ratio", num(r.Ratio)},
			{"decision_rounds", r.Decisions},
			{"decision_seconds", num(r.DecisionSeconds)},
			{"accounted_overhead_ratio", num(r.Accounted)},
			{"ranks", *ranksN},
			{"iterations", *iters},
		})
	}
	t := newTable(w)
	t.row("bare Himeno, without ckpt", fmt.Sprintf("%.3f s", r.Bare), "(fastest run: the baseline)")
	t.row("through ckpt, checkpointing off", fmt.Sprintf("%.3f s", r.Off), fmt.Sprintf("(fastest run; %+.2f%% over bare)", 100*r.OffBareRatio))
	t.row("on, never due", fmt.Sprintf("%.3f s", r.On), fmt.Sprintf("(fastest run; %+.2f%% over bare)", 100*r.BareRatio))
	t.row("overhead", fmt.Sprintf("%+.2f%%", 100*r.Ratio), "(measured: on/off − 1; noise of a few % either way)")
	t.row("decision rounds", fmt.Sprintf("%d taking %.4f s = %.3f%% of the run", r.Decisions, r.DecisionSeconds, 100*r.Accounted), "(counted directly)")
	return t.flush()
}

const benchOverheadLong = `Runs the Himeno example on N ranks (goroutines of this process, joined
through a real coordinator, exchanging halos over TCP) with checkpointing
off, then with it on but never due (interval 1000h: the ranks still ask
"checkpoint now?" every step and decide together about once a second),
T times each, alternating, and compares the fastest runs (Cao et al. 2016 reports
under 1% for DMTCP). It also counts the decision rounds and their time
directly: the overhead free of the noise between runs.

The baseline (since issue 17) is bare Himeno without ckpt, run in turn with
the two: the same N ranks as goroutines exchanging their halos over
in-process channels, with no coordinator and no job (bare_seconds).
bare_overhead_ratio is on/bare − 1, what running under ckpt with
checkpointing on costs over the bare application; off_bare_ratio is
off/bare − 1, the part that is there with checkpointing off (joining, halos
over TCP). overhead_ratio stays on/off − 1.`

func newBenchStageCmd() *cobra.Command {
	c := leaf("stage [--dir DIR] [--size B] [--quick] [--json]", "Non-blocking flush: staging throughput against writers and servers, and its overhead on Himeno (Sato et al. 2012 Figs. 9-11)", benchStageLong, "")
	f := &benchStageFlags{}
	f.dir = c.Flags().String("dir", os.TempDir(), "directory for the shared tier and node caches")
	f.size = sizeFlag(c.Flags(), "size", "bytes of the checkpoint staged (default 512MiB; 8MiB with --quick)")
	f.quick = c.Flags().Bool("quick", false, "tiny sizes, few points, one pass: seconds, not minutes")
	f.asJSON = jsonFlag(c)
	return runs(c, f)
}

// benchStageFlags are the flags of the command newBenchStageCmd builds.
type benchStageFlags struct {
	dir           *string
	size          *quantity
	quick, asJSON *bool
}

func (f *benchStageFlags) run(c *cobra.Command) error {
	cfg := bench.DefaultStageConfig()
	if *f.quick {
		cfg = bench.QuickStageConfig()
	}
	cfg.Dir = *f.dir
	if err := benchSize(&cfg.Size, f.size, "size"); err != nil {
		return err
	}
	if err := benchDir(cfg.Dir); err != nil {
		return err
	}
	cfg.Progress = benchProgress(c)
	r, err := bench.RunStage(c.Context(), cfg)
	if err != nil {
		return err
	}
	w := c.OutOrStdout()
	if *f.asJSON {
		return writeJSON(w, bench.NewStageReport(cfg, r))
	}
	bw := units.FormatBandwidth
	ratio := func(x float64) string { return fmt.Sprintf("%.2f", x) }
	fmt.Fprintf(w, "checkpoint %s, %d ranks over %d nodes; best raw write %s\n\n",
		units.FormatSize(float64(cfg.Size)), cfg.Ranks, cfg.Nodes, bw(r.RawWrite))
	fmt.Fprintln(w, "Fig. 9, one staging server:")
	t := newTable(w)
	t.row("WRITERS", "STAGING", "RATIO TO BEST RAW", "RAW, SAME WRITERS")
	for i, p := range r.Writers {
		t.row(fmt.Sprint(p.N), bw(p.BytesPerSecond), ratio(p.Ratio), bw(r.RawWriters[i].BytesPerSecond))
	}
	t.flush()
	fmt.Fprintf(w, "stage_write_ratio %.2f (best of one server / best raw; goal ≥ 0.8); over raw writers that fsync only at the end: %.2f\n\n",
		r.StageWriteRatio, r.StageWriteFsyncRatio)
	fmt.Fprintf(w, "Fig. 10, servers of %d writers each:\n", cfg.ServerWriters)
	t = newTable(w)
	t.row("SERVERS", "AGGREGATE", "RATIO TO BEST RAW")
	for _, p := range r.Servers {
		t.row(fmt.Sprint(p.N), bw(p.BytesPerSecond), ratio(p.Ratio))
	}
	t.flush()
	fmt.Fprintf(w, "\nFig. 11, Himeno %s, %d iterations (fastest alone %.3f s), median of %d pairs:\n",
		cfg.Himeno, r.HimenoIterations, r.HimenoSeconds, cfg.Trials)
	t = newTable(w)
	t.row("READ RATE CAP", "MEASURED READ", "ALONE", "STAGING", "ALPHA")
	for _, p := range r.Alpha {
		t.row(bw(p.Rate), bw(p.Measured), fmt.Sprintf("%.3f s", p.Baseline), fmt.Sprintf("%.3f s", p.Seconds), fmt.Sprintf("%+.4f", p.Alpha))
	}
	t.flush()
	fmt.Fprintf(w, "slope c = %.4g per GB/s (Sato et al. 2012: %g); alpha at %s: %.4g (Sato et al. 2012: %.3g)\n",
		r.AlphaSlope, bench.PaperAlphaSlope, bw(bench.PaperReadRate), r.AlphaAtPaperRate, bench.PaperAlphaSlope*bench.PaperReadRate/1e9)
	return nil
}

const benchStageLong = `Reproduces the shape of Sato et al.'s Figures 9, 10 and 11 on this machine,
with staging servers and clients in this process over loopback TCP (the
real code path: clients send from the node caches with sendfile, servers
pull in chunks, check content hashes and write the shared tier). The shared
tier and the node caches are directories below DIR; the checkpoint is
16 ranks × (B/16) over 4 nodes (default B = 512MiB).

  Fig. 9   one staging server with W = 1, 2, 4, 8, 16 writers, against W
           raw writers writing the same files with fsync into the same
           directory (best of 3 passes each, alternating); the raw writers
           run three times per pass, fsync'ing each file at its end
           (raw_writers[].fsync_bytes_per_second), starting writeback
           every 8 MiB as the server's writer does (...writeback...), and
           with O_DIRECT (...direct..., null where the file system refuses
           it), and the best is the limit (bytes_per_second; before issue
           17 the first pattern alone, kept as
           raw_write_fsync_bytes_per_second and stage_write_fsync_ratio);
  Fig. 10  1, 2 and 4 servers of 16 writers, the nodes dealt to them in
           turn: their aggregate throughput;
  Fig. 11  the Himeno example on every core, alone and while a staging
           server pulls checkpoints without pause from a client of this
           process, at most 25, 50, 100, 200 and 400 MB/s: the overhead
           factor alpha = T(x)/T0 - 1 (the median of 5 pairs of adjacent
           runs, repeated while other processes take CPU) against the
           measured read rate x, and the slope c of alpha = c·x fitted
           through the origin, beside Sato et al.'s c = 0.008768 per GB/s.

Every throughput is also given as a ratio to the best raw write of the run
(stage_write_ratio: one server at its best W). On one machine with one
disk, more servers share the same disk and cores: Fig. 10's plateau comes
early. The servers of Fig. 11 run on the same cores as Himeno, so alpha
counts both ends of the transfer, where Sato et al.'s compute node carried only
the client's. --quick runs tiny sizes in a few seconds (for tests).`

// benchProgress prints a benchmark's steps on stderr, with the seconds
// since it started.
func benchProgress(c *cobra.Command) func(step string) {
	start, stderr := time.Now(), c.ErrOrStderr()
	return func(step string) { fmt.Fprintf(stderr, "  %5.1fs  %s\n", time.Since(start).Seconds(), step) }
}

// benchSize sets *dst to the size flag q, if given: at least 1MiB.
func benchSize(dst *int64, q *quantity, flag string) error {
	if !q.set {
		return nil
	}
	if q.v < 1<<20 {
		return usagef("--%s: at least 1MiB (got %s)", flag, units.FormatSize(q.v))
	}
	*dst = int64(q.v)
	return nil
}

// benchDir checks --dir, the directory a benchmark writes in.
func benchDir(dir string) error {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return usagef("--dir %s: not a directory", dir)
	}
	return nil
}
