package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/ckpt/ckpt/internal/bench"
	"github.com/ckpt/ckpt/internal/units"
)

func newBenchCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "bench",
		Short: "Measure ckpt against this machine's own limits",
	}
	c.AddCommand(newBenchStoreCmd())
	return c
}

func newBenchStoreCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "store [--dir DIR] [--size B] [--json]",
		Short: "Checkpoint store throughput as ratios to raw disk and memory speed, and a whole scenario",
		Long: `Measures, in one run on this machine: raw sequential write and read of DIR,
memory copy on one core, and ckpt's cache write (hashing, durable commit),
XOR (8+1) and RS(8+2) parity computation, restart with verification of every
byte, and rebuild after a node loss — each as bytes/s and as a ratio to its
limit: cache write and rebuild against raw write, restart against raw read,
encoding against memory copy. Then one whole scenario: 4 ranks × 512 MiB
over 4 simulated nodes, XOR across the 4, caches in DIR: checkpoint,
blocking flush to a shared directory, restart after deleting one node's
cache; once with caches synced to disk (the default: a checkpoint survives
its node's crash) and once without sync (--cache-durability process: it
survives the processes' crash; a crashed node is rebuilt from redundancy).
DIR needs about 5 × 512 MiB free; everything written is removed.`,
		Args: cobra.NoArgs,
	}
	dir := c.Flags().String("dir", os.TempDir(), "directory on the disk to measure")
	size := sizeFlag(c.Flags(), "size", "bytes per measurement (default 256MiB)")
	scenario := sizeFlag(c.Flags(), "scenario-size", "bytes per rank in the scenario (default 512MiB)")
	asJSON := jsonFlag(c)
	c.RunE = func(c *cobra.Command, _ []string) error {
		cfg := bench.StoreConfig{Dir: *dir, Size: 256 << 20, ScenarioRank: 512 << 20}
		if size.set {
			if size.v < 1<<20 {
				return usagef("--size: at least 1MiB (got %s)", units.FormatSize(size.v))
			}
			cfg.Size = int64(size.v)
		}
		if scenario.set {
			if scenario.v < 1<<20 {
				return usagef("--scenario-size: at least 1MiB (got %s)", units.FormatSize(scenario.v))
			}
			cfg.ScenarioRank = int64(scenario.v)
		}
		if st, err := os.Stat(cfg.Dir); err != nil || !st.IsDir() {
			return usagef("--dir %s: not a directory", cfg.Dir)
		}
		start := time.Now()
		stderr := c.ErrOrStderr()
		cfg.Progress = func(step string) { fmt.Fprintf(stderr, "  %5.1fs  %s\n", time.Since(start).Seconds(), step) }
		r, err := bench.RunStore(c.Context(), cfg)
		if err != nil {
			return err
		}
		w := c.OutOrStdout()
		if *asJSON {
			return writeJSON(w, object{
				{"cache_write_ratio", num(r.CacheWriteRatio)},
				{"xor_encode_ratio", num(r.XOREncodeRatio)},
				{"rs_encode_ratio", num(r.RSEncodeRatio)},
				{"restart_ratio", num(r.RestartRatio)},
				{"rebuild_ratio", num(r.RebuildRatio)},
				{"raw_write_bytes_per_second", num(r.RawWrite)},
				{"raw_read_bytes_per_second", num(r.RawRead)},
				{"memcopy_bytes_per_second", num(r.MemCopy)},
				{"cache_write_bytes_per_second", num(r.CacheWrite)},
				{"xor_encode_bytes_per_second", num(r.XOREncode)},
				{"rs_encode_bytes_per_second", num(r.RSEncode)},
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
			})
		}
		t := newTable(w)
		t.row("MEASURE", "THROUGHPUT", "LIMIT", "RATIO")
		bw := units.FormatBandwidth
		t.row("cache write", bw(r.CacheWrite), "raw write "+bw(r.RawWrite), fmt.Sprintf("%.2f", r.CacheWriteRatio))
		t.row("XOR encode (8+1)", bw(r.XOREncode), "memory copy "+bw(r.MemCopy), fmt.Sprintf("%.2f", r.XOREncodeRatio))
		t.row("RS encode (8+2)", bw(r.RSEncode), "memory copy "+bw(r.MemCopy), fmt.Sprintf("%.2f", r.RSEncodeRatio))
		t.row("restart with verify", bw(r.Restart), "raw read "+bw(r.RawRead), fmt.Sprintf("%.2f", r.RestartRatio))
		t.row("rebuild after node loss", bw(r.Rebuild), "raw write "+bw(r.RawWrite), fmt.Sprintf("%.2f", r.RebuildRatio))
		t.flush()
		fmt.Fprintf(w, "\nscenario, 4 ranks × %s, XOR over 4 nodes:\n", units.FormatSize(float64(cfg.ScenarioRank)))
		t = newTable(w)
		d := units.FormatDuration
		t.row("", "CACHE SYNCED", "NOT SYNCED")
		t.row("  checkpoint", d(r.ScenarioCheckpoint), d(r.ProcessCheckpoint), fmt.Sprintf("(4 raw writers of the same bytes, synced: %s)", d(r.ScenarioRawWrite)))
		t.row("  blocking flush", d(r.ScenarioFlush), d(r.ProcessFlush))
		t.row("  restart rebuilding one node", d(r.ScenarioRebuildRestart), d(r.ProcessRebuildRestart))
		return t.flush()
	}
	return c
}
