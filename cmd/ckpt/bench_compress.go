package main

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ckpt/ckpt/examples/himeno"
	"github.com/ckpt/ckpt/internal/bench"
	"github.com/ckpt/ckpt/internal/units"
)

func newBenchCompressCmd() *cobra.Command {
	c := leaf("compress [--dir DIR] [--himeno SIZE] [--iterations N] [--rounds N] [--json]",
		"Compression of checkpoint data: ratio and checkpoint time, on and off, on Himeno's, zero-heavy, noisy float and random state", benchCompressLong, "")
	f := &benchCompressFlags{}
	f.dir = c.Flags().String("dir", os.TempDir(), "directory on the disk of the node caches")
	f.grid = c.Flags().String("himeno", "l", "Himeno grid whose state is checkpointed (xs, s, m, l, xl or IxJxK); the other kinds take its size per rank")
	f.iterations = c.Flags().Int("iterations", 5, "Himeno sweeps before its state is taken")
	f.rounds = c.Flags().Int("rounds", 5, "checkpoints per kind and setting, taking turns (the median is reported)")
	f.asJSON = jsonFlag(c)
	return runs(c, f)
}

type benchCompressFlags struct {
	dir, grid          *string
	iterations, rounds *int
	asJSON             *bool
}

func (f *benchCompressFlags) run(c *cobra.Command) error {
	grid, err := himeno.ParseSize(*f.grid)
	if err != nil {
		return usageError{fmt.Errorf("--himeno: %w", err)}
	}
	if *f.iterations < 0 || *f.rounds < 1 {
		return usageError{fmt.Errorf("--iterations %d, --rounds %d: want ≥ 0 and ≥ 1", *f.iterations, *f.rounds)}
	}
	if err := benchDir(*f.dir); err != nil {
		return err
	}
	cfg := bench.CompressConfig{Dir: *f.dir, Himeno: grid, Iterations: *f.iterations, Rounds: *f.rounds, Progress: benchProgress(c)}
	r, err := bench.RunCompress(c.Context(), cfg)
	if err != nil {
		return err
	}
	w := c.OutOrStdout()
	if *f.asJSON {
		kinds := []object{}
		for _, k := range r.Kinds {
			kinds = append(kinds, object{
				{"state", k.State},
				{"rank_bytes", k.RankBytes},
				{"logical_bytes", k.Logical},
				{"stored_bytes", k.Stored},
				{"compression_ratio", num(k.Ratio)},
				{"forms", formList(k.Forms)},
				{"checkpoint_seconds_off", num(k.CheckpointOff)},
				{"checkpoint_seconds_auto", num(k.CheckpointAuto)},
				{"time_ratio", num(k.TimeRatio)},
				{"restart_seconds_off", num(k.RestartOff)},
				{"restart_seconds_auto", num(k.RestartAuto)},
				{"restart_time_ratio", num(k.RestartRatio)},
				{"raw_write_seconds", num(k.RawWrite)},
				{"floor_ratio", num(k.FloorRatio)},
			})
		}
		return writeJSON(w, object{{"himeno_grid", r.Grid}, {"himeno_iterations", r.Iterations},
			{"ranks", 4}, {"redundancy", "xor:4"}, {"rounds", cfg.Rounds}, {"kinds", kinds}})
	}
	fmt.Fprintf(w, "4 ranks over 4 nodes, xor:4, synced caches in %s; Himeno %s after %d iterations; medians of %d rounds\n\n",
		cfg.Dir, r.Grid, r.Iterations, cfg.Rounds)
	t := newTable(w)
	t.row("STATE", "PER RANK", "RATIO", "FORMS", "CHECKPOINT OFF", "AUTO", "TIME RATIO", "RESTART OFF", "AUTO", "RAW WRITE")
	for _, k := range r.Kinds {
		t.row(k.State, units.FormatSize(float64(k.RankBytes)), fmt.Sprintf("%.2f", k.Ratio), formList(k.Forms),
			fmt.Sprintf("%.3f s", k.CheckpointOff), fmt.Sprintf("%.3f s", k.CheckpointAuto), fmt.Sprintf("%.3f", k.TimeRatio),
			fmt.Sprintf("%.3f s", k.RestartOff), fmt.Sprintf("%.3f s", k.RestartAuto), fmt.Sprintf("%.3f s", k.RawWrite))
	}
	return t.flush()
}

// formList is the forms the files were stored in, "zstd×4", sorted.
func formList(forms map[string]int) string {
	var out []string
	for f, n := range forms {
		out = append(out, fmt.Sprintf("%s×%d", f, n))
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

const benchCompressLong = `Measures, in one run on this machine, what compressing checkpoint data
before redundancy (ckpt run --compress auto) costs and saves: 4 ranks over
4 nodes, XOR across them, node caches synced on DIR's disk, each rank
checkpointing one file, with compression off and auto taking turns, on
four kinds of state of the same size per rank:

  himeno        Himeno's pressure array after --iterations sweeps (float32s)
  zero-heavy    mostly zero pages with some repeated structures
  noisy-floats  a smooth float32 field with noise in the low mantissa bits
                (a shuffle saves about a fifth: too little to pay)
  random        random bytes (compression cannot pay: issue 17 allows
                them at most 5% more time than with compression off)

For each: the compression ratio (the application's bytes over the stored
ones), the forms the files were stored in, the checkpoint's seconds off and
auto and their ratio (time_ratio), the restart's after one node's cache is
lost (rebuild from XOR, then every rank reads its file back, verified), and
the raw write of the uncompressed data alone (4 writers, fsync) as the
floor compression must beat.`
