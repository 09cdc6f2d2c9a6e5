package main

import (
	"fmt"
	"os"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/ckpt/ckpt/internal/bench"
	"github.com/ckpt/ckpt/internal/units"
)

// maxScalingRanks bounds --ranks: every rank is an engine of this process
// with a node cache of its own.
const maxScalingRanks = 256

func newBenchScalingCmd() *cobra.Command {
	c := leaf("scaling [--dir DIR] [--ranks N,...] [--rank-size B] [--sizes B,...] [--size-ranks N] [--rounds N] [--json]",
		"The scenario of bench store against ranks and size per rank, each step beside its limit (issue 17's scaling table)", benchScalingLong, "")
	fs := c.Flags()
	f := &benchScalingFlags{
		dir:       fs.String("dir", os.TempDir(), "directory on the disk of the node caches and the shared directory"),
		ranks:     &intList{v: []int{4, 8, 16, 32}},
		rankSize:  sizeFlag(fs, "rank-size", "bytes per rank in the ranks sweep (default 64MiB)"),
		sizes:     listFlag(fs, "sizes", "sizes", units.ParseSize, "sizes per rank of the size sweep, comma-separated (default 64MiB,128MiB,256MiB,512MiB,1GiB)"),
		sizeRanks: fs.Int("size-ranks", 4, "ranks in the size sweep"),
		rounds:    fs.Int("rounds", 2, "times each point's limits and scenario take turns (each keeps its shortest time)"),
	}
	fs.Var(f.ranks, "ranks", "rank counts of the ranks sweep, comma-separated: 2, 3, 4 or multiples of 4")
	f.asJSON = jsonFlag(c)
	return runs(c, f)
}

// benchScalingFlags are the flags of the command newBenchScalingCmd builds.
type benchScalingFlags struct {
	dir               *string
	ranks             *intList
	rankSize          *quantity
	sizes             *list
	sizeRanks, rounds *int
	asJSON            *bool
	// prefix is what the flags' names start with in the error messages:
	// "scaling-" in ckpt bench all.
	prefix string
}

// config checks the flags, naming the bad value, and returns the
// benchmark's configuration.
func (f *benchScalingFlags) config() (bench.ScalingConfig, error) {
	cfg := bench.ScalingConfig{Dir: *f.dir, Ranks: f.ranks.v, RankBytes: 64 << 20, SizeRanks: *f.sizeRanks, Rounds: *f.rounds,
		Sizes: []int64{64 << 20, 128 << 20, 256 << 20, 512 << 20, 1 << 30}}
	for _, n := range cfg.Ranks {
		if err := checkScalingRanks(f.prefix+"ranks", n); err != nil {
			return cfg, err
		}
	}
	if err := checkScalingRanks("size-ranks", cfg.SizeRanks); err != nil {
		return cfg, err
	}
	if err := benchSize(&cfg.RankBytes, f.rankSize, f.prefix+"rank-size"); err != nil {
		return cfg, err
	}
	if f.sizes.set {
		cfg.Sizes = nil
		for i, v := range f.sizes.v {
			if v < 1<<20 || v > 1<<40 {
				return cfg, usagef("--%ssizes: element %d (%s): want 1MiB to 1TiB per rank", f.prefix, i+1, units.FormatSize(v))
			}
			cfg.Sizes = append(cfg.Sizes, int64(v))
		}
	}
	if cfg.Rounds < 1 {
		return cfg, usagef("--rounds %d: want at least 1", cfg.Rounds)
	}
	return cfg, benchDir(cfg.Dir)
}

// checkScalingRanks checks a rank count of the scaling benchmark: at
// least 2 (one node to lose, one to rebuild it from), and whole XOR sets
// of 4 nodes above 4.
func checkScalingRanks(flag string, n int) error {
	if n < 2 || n > maxScalingRanks || (n > 4 && n%4 != 0) {
		return usagef("--%s %d: want 2, 3, 4 or a multiple of 4 up to %d (XOR sets of 4 nodes)", flag, n, maxScalingRanks)
	}
	return nil
}

func (f *benchScalingFlags) run(c *cobra.Command) error {
	cfg, err := f.config()
	if err != nil {
		return err
	}
	cfg.Progress = benchProgress(c)
	startLoad := loadAverage()
	rows, err := bench.RunScaling(c.Context(), cfg)
	if err != nil {
		return err
	}
	w := c.OutOrStdout()
	if *f.asJSON {
		out := []object{}
		for _, r := range rows {
			out = append(out, object{
				{"sweep", r.Sweep},
				{"ranks", r.Ranks},
				{"set_size", r.SetSize},
				{"rank_bytes", r.RankBytes},
				{"data_bytes", int64(r.Ranks) * r.RankBytes},
				{"checkpoint_bytes", r.CheckpointBytes},
				{"checkpoint_seconds", num(r.Checkpoint)},
				{"checkpoint_floor_seconds", num(r.CheckpointFloor)},
				{"checkpoint_floor_pattern", r.CheckpointPattern},
				{"checkpoint_ratio", num(r.CheckpointRatio)},
				{"flush_seconds", num(r.Flush)},
				{"flush_floor_seconds", num(r.FlushFloor)},
				{"flush_floor_pattern", r.FlushPattern},
				{"flush_ratio", num(r.FlushRatio)},
				{"restart_seconds", num(r.Restart)},
				{"restart_floor_seconds", num(r.RestartFloor)},
				{"restart_floor_pattern", r.RestartPattern},
				{"restart_ratio", num(r.RestartRatio)},
			})
		}
		return writeJSON(w, object{{"dir", cfg.Dir}, {"cache", "synced"}, {"rounds", cfg.Rounds},
			{"load_average", object{{"start", startLoad}, {"end", loadAverage()}}}, {"rows", out}})
	}
	fmt.Fprintf(w, "XOR sets of up to 4 nodes, one rank per node, synced caches in %s; each figure the shortest of %d; ratio = limit / ckpt\n\n", cfg.Dir, cfg.Rounds)
	t := newTable(w)
	d := func(x float64) string { return strconv.FormatFloat(x, 'f', 3, 64) }
	t.row("SWEEP", "RANKS", "PER RANK", "CHECKPOINT s", "FLOOR s", "RATIO", "FLUSH s", "FLOOR s", "RATIO", "RESTART s", "FLOOR s", "RATIO")
	for _, r := range rows {
		t.row(r.Sweep, strconv.Itoa(r.Ranks), units.FormatSize(float64(r.RankBytes)),
			d(r.Checkpoint), d(r.CheckpointFloor), fmt.Sprintf("%.2f", r.CheckpointRatio),
			d(r.Flush), d(r.FlushFloor), fmt.Sprintf("%.2f", r.FlushRatio),
			d(r.Restart), d(r.RestartFloor), fmt.Sprintf("%.2f", r.RestartRatio))
	}
	return t.flush()
}

const benchScalingLong = `Runs the scenario of ckpt bench store — one rank per simulated node, XOR
over the nodes in sets of 4 (of all the ranks below 4), node caches synced
in DIR, every byte hashed: checkpoint, blocking flush to a shared
directory in DIR, restart after losing node1's cache (a rebuild) — at
each rank count of --ranks (the "ranks" sweep, --rank-size per rank) and
at each size per rank of --sizes (the "size" sweep, --size-ranks ranks). A point
in both sweeps is measured once and shown in both. Each step is beside
its limit, measured in the same run, taking turns with the scenario
--rounds times (each keeps its shortest time):

  checkpoint  its floor: every rank's data and XOR parity (ceil(B/3) for
              sets of 4) written raw by as many writers at once, each file
              fsync'd, with the fastest of three patterns (fsync at the
              end, writeback every 8 MiB, O_DIRECT), as scenario_floor_-
              seconds in bench store
  flush       every rank's data written raw the same way into DIR
  restart     the ranks but node1's reading their data and parity raw
              while one writer writes node1's data and parity again,
              fsync'd; the surviving files are in the page cache (hot) on
              both sides, as the scenario's restart finds them after the
              flush read them

Each ratio is the limit over ckpt's time: 1 is at the limit. Progress
goes to stderr. DIR needs about 2.5 × the largest point's data free.

With --json, one object: dir, cache ("synced"), rounds, load_average
(start and end: the 1-minute load average) and rows, one per point, ranks
sweep first, each with the keys:
  sweep                       "ranks" or "size"
  ranks, set_size             ranks (one per node) and their XOR set size
  rank_bytes, data_bytes      bytes per rank, and all ranks'
  checkpoint_bytes            data and parity the checkpoint writes
  checkpoint_seconds, checkpoint_floor_seconds, checkpoint_floor_pattern,
  checkpoint_ratio
  flush_seconds, flush_floor_seconds, flush_floor_pattern, flush_ratio
  restart_seconds, restart_floor_seconds, restart_floor_pattern,
  restart_ratio
(patterns: fsync, writeback or O_DIRECT; times in seconds).`
