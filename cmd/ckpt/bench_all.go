package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ckpt/ckpt/examples/himeno"
	"github.com/ckpt/ckpt/internal/units"
)

// benchAllNames are the benchmarks `ckpt bench all` runs, in order, and the
// keys of their reports.
var benchAllNames = []string{"store", "stage", "coord", "overhead", "coord_simulate", "compress", "scaling"}

func newBenchAllCmd() *cobra.Command {
	c := leaf("all [--dir DIR] [--skip NAMES] [sizes] [--json]", "Every benchmark in sequence at sizes for a small machine, in one report", benchAllLong, "")
	fs := c.Flags()
	f := &benchAllFlags{
		dir:          fs.String("dir", os.TempDir(), "directory on the disk to measure (store, stage)"),
		storeSize:    sizeFlag(fs, "store-size", "store: bytes per measurement (default 64MiB)"),
		scenarioSize: sizeFlag(fs, "scenario-size", "store: bytes per rank in the scenario (default 64MiB)"),
		stageSize:    sizeFlag(fs, "stage-size", "stage: bytes of the checkpoint staged (default 64MiB)"),
		stageFull:    fs.Bool("stage-full", false, "stage: every point of the figures, not the few of --quick"),
		clients:      fs.Int("clients", 2048, "coord: ranks (client connections)"),
		perNode:      fs.Int("per-node", 64, "coord and coord_simulate: ranks per node in tree mode"),
		ohRanks:      fs.Int("overhead-ranks", 2, "overhead: ranks"),
		ohSize:       fs.String("overhead-size", "s", "overhead: Himeno grid"),
		ohIters:      fs.Int("overhead-iterations", 300, "overhead: iterations per run"),
		ohTrials:     fs.Int("overhead-trials", 3, "overhead: runs of each kind"),
		simRanks:     &intList{v: []int{1000, 10000, 100000}},
		cmHimeno:     fs.String("compress-himeno", "m", "compress: Himeno grid whose state is checkpointed"),
		cmRounds:     fs.Int("compress-rounds", 3, "compress: checkpoints per kind and setting"),
		scRanks:      &intList{v: []int{4, 8}},
		scRankSize:   sizeFlag(fs, "scaling-rank-size", "scaling: bytes per rank in the ranks sweep (default 16MiB)"),
		scSizes:      listFlag(fs, "scaling-sizes", "sizes", units.ParseSize, "scaling: sizes per rank of the size sweep at 4 ranks (default 16MiB,64MiB)"),
		skip:         fs.StringSlice("skip", nil, "benchmarks not to run, comma-separated: "+strings.Join(benchAllNames, ", ")),
	}
	fs.Var(f.simRanks, "sim-ranks", "coord_simulate: the rank counts, comma-separated (default 1000,10000,100000)")
	fs.Var(f.scRanks, "scaling-ranks", "scaling: rank counts of the ranks sweep, comma-separated (default 4,8)")
	f.asJSON = jsonFlag(c)
	return runs(c, f)
}

// benchAllFlags are the flags of the command newBenchAllCmd builds.
type benchAllFlags struct {
	dir, ohSize, cmHimeno              *string
	cmRounds                           *int
	scRanks                            *intList
	scRankSize                         *quantity
	scSizes                            *list
	storeSize, scenarioSize, stageSize *quantity
	stageFull, asJSON                  *bool
	clients, perNode                   *int
	ohRanks, ohIters, ohTrials         *int
	simRanks                           *intList
	skip                               *[]string
}

// args are the command lines of the benchmarks to run, by name, checked
// before any runs: bad input must not show after minutes of measuring.
func (f *benchAllFlags) args() (map[string][]string, error) {
	for _, s := range *f.skip {
		if !slices.Contains(benchAllNames, s) {
			return nil, usagef("--skip %s: not a benchmark (%s)", s, strings.Join(benchAllNames, ", "))
		}
	}
	size := func(q *quantity, flag string, def int64) (string, error) {
		v := def
		if err := benchSize(&v, q, flag); err != nil {
			return "", err
		}
		return strconv.FormatInt(v, 10), nil
	}
	storeSize, err := size(f.storeSize, "store-size", 64<<20)
	if err != nil {
		return nil, err
	}
	scenario, err := size(f.scenarioSize, "scenario-size", 64<<20)
	if err != nil {
		return nil, err
	}
	stageSize, err := size(f.stageSize, "stage-size", 64<<20)
	if err != nil {
		return nil, err
	}
	if err := benchDir(*f.dir); err != nil {
		return nil, err
	}
	grid, err := himeno.ParseSize(*f.ohSize)
	if err != nil {
		return nil, usagef("--overhead-size: %v", err)
	}
	switch {
	case *f.clients < 1 || *f.clients > 1<<20:
		return nil, usagef("--clients %d: want 1 to %d", *f.clients, 1<<20)
	case *f.perNode < 1:
		return nil, usagef("--per-node %d: want at least 1", *f.perNode)
	case *f.ohRanks < 1 || *f.ohRanks > grid.I-3:
		return nil, usagef("--overhead-ranks %d: need 1 to %d for size %s", *f.ohRanks, grid.I-3, grid)
	case *f.ohIters < 1:
		return nil, usagef("--overhead-iterations %d: need at least 1", *f.ohIters)
	case *f.ohTrials < 1:
		return nil, usagef("--overhead-trials %d: need at least 1", *f.ohTrials)
	case len(f.simRanks.v) == 0:
		return nil, usagef("--sim-ranks: want at least one rank count")
	}
	for _, n := range f.simRanks.v {
		if n < 1 || n > 1<<27 {
			return nil, usagef("--sim-ranks %d: want 1 to %d", n, 1<<27)
		}
	}
	compress, scaling, err := f.compressScalingArgs()
	if err != nil {
		return nil, err
	}
	stage := []string{"stage", "--dir", *f.dir, "--size", stageSize}
	if !*f.stageFull {
		stage = append(stage, "--quick")
	}
	all := map[string][]string{
		"store":          {"store", "--dir", *f.dir, "--size", storeSize, "--scenario-size", scenario},
		"stage":          stage,
		"coord":          {"coord", "--clients", strconv.Itoa(*f.clients), "--per-node", strconv.Itoa(*f.perNode)},
		"overhead":       {"overhead", "--ranks", strconv.Itoa(*f.ohRanks), "--size", *f.ohSize, "--iterations", strconv.Itoa(*f.ohIters), "--trials", strconv.Itoa(*f.ohTrials)},
		"coord_simulate": {"coord", "--simulate", "--ranks", f.simRanks.String(), "--per-node", strconv.Itoa(*f.perNode)},
		"compress":       compress,
		"scaling":        scaling,
	}
	for _, s := range *f.skip {
		delete(all, s)
	}
	return all, nil
}

// compressScalingArgs are the command lines of compress and scaling,
// checked as those commands check them.
func (f *benchAllFlags) compressScalingArgs() (compress, scaling []string, err error) {
	if _, err := himeno.ParseSize(*f.cmHimeno); err != nil {
		return nil, nil, usagef("--compress-himeno: %v", err)
	}
	if *f.cmRounds < 1 {
		return nil, nil, usagef("--compress-rounds %d: need at least 1", *f.cmRounds)
	}
	compress = []string{"compress", "--dir", *f.dir, "--himeno", *f.cmHimeno, "--rounds", strconv.Itoa(*f.cmRounds)}
	sc := benchScalingFlags{dir: f.dir, ranks: f.scRanks, rankSize: &quantity{v: 16 << 20, set: true},
		sizes: &list{v: []float64{16 << 20, 64 << 20}, set: true}, sizeRanks: new(int), rounds: new(int), prefix: "scaling-"}
	*sc.sizeRanks, *sc.rounds = 4, 2
	if f.scRankSize.set {
		sc.rankSize = f.scRankSize
	}
	if f.scSizes.set {
		sc.sizes = f.scSizes
	}
	cfg, err := sc.config()
	if err != nil {
		return nil, nil, err
	}
	scaling = []string{"scaling", "--dir", *f.dir, "--ranks", f.scRanks.String(), "--rank-size", strconv.FormatInt(cfg.RankBytes, 10),
		"--sizes", sizesArg(cfg.Sizes), "--size-ranks", strconv.Itoa(cfg.SizeRanks), "--rounds", strconv.Itoa(cfg.Rounds)}
	return compress, scaling, nil
}

// sizesArg is a list of sizes as a flag's value, in bytes.
func sizesArg(sizes []int64) string {
	s := make([]string, len(sizes))
	for i, b := range sizes {
		s[i] = strconv.FormatInt(b, 10)
	}
	return strings.Join(s, ",")
}

func (f *benchAllFlags) run(c *cobra.Command) error {
	all, err := f.args()
	if err != nil {
		return err
	}
	stdout, stderr := c.OutOrStdout(), c.ErrOrStderr()
	report := object{}
	seconds := object{}
	var failed []string
	load := object{{"start", loadAverage()}}
	k := 0
	for _, name := range benchAllNames {
		args, ok := all[name]
		if !ok {
			continue
		}
		k++
		args = append([]string{"bench"}, args...)
		fmt.Fprintf(stderr, "bench all: %s (%d of %d): ckpt %s\n", name, k, len(all), strings.Join(args, " "))
		var out bytes.Buffer
		w := io.Writer(&out)
		if *f.asJSON {
			args = append(args, "--json")
		} else {
			fmt.Fprintf(stdout, "== %s: ckpt %s\n", name, strings.Join(args, " "))
			w = stdout
		}
		start := time.Now()
		err := benchAllRun(c, args, w, stderr)
		seconds = append(seconds, kv{name, time.Since(start).Seconds()})
		switch {
		case err != nil:
			fmt.Fprintf(stderr, "bench all: %s failed: %v\n", name, err)
			failed = append(failed, name)
			report = append(report, kv{name, object{{"error", err.Error()}}})
		case *f.asJSON:
			if !json.Valid(out.Bytes()) {
				failed = append(failed, name)
				report = append(report, kv{name, object{{"error", "not one JSON report: " + out.String()}}})
				break
			}
			report = append(report, kv{name, json.RawMessage(bytes.TrimSpace(out.Bytes()))})
		default:
			fmt.Fprintln(stdout)
		}
	}
	load = append(load, kv{"end", loadAverage()})
	skipped := slices.Clone(*f.skip)
	if skipped == nil {
		skipped = []string{}
	}
	report = append(report, kv{"seconds", seconds}, kv{"skipped", skipped}, kv{"load_average", load})
	if *f.asJSON {
		if err := writeJSON(stdout, report); err != nil {
			return err
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("bench all: %s failed (see above)", strings.Join(failed, ", "))
	}
	return nil
}

// benchAllRun runs one benchmark's command line as `ckpt` would, its
// report to w and its progress to stderr. A variable: a test makes one
// fail.
var benchAllRun = func(c *cobra.Command, args []string, w, stderr io.Writer) error {
	root := newRootCmd()
	root.SetArgs(args)
	root.SetOut(w)
	root.SetErr(stderr)
	return root.ExecuteContext(c.Context())
}

// loadAverage is the machine's load average over the last minute, from
// /proc/loadavg: a benchmark report says how busy the machine was. null
// where there is none.
func loadAverage() any {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return nil
	}
	fields := strings.Fields(string(b))
	if len(fields) == 0 {
		return nil
	}
	v, err := units.ParseFloat(fields[0])
	if err != nil {
		return nil
	}
	return v
}

const benchAllLong = `Runs every benchmark in sequence — store, stage, coord, overhead,
coord --simulate, compress and scaling — at sizes a 2-core machine gets
through in minutes, and prints one report: with --json, one JSON object
holding each benchmark's own JSON report under its name (store, stage,
coord, overhead, coord_simulate, compress, scaling), then seconds (each benchmark's elapsed time),
skipped (the names --skip left out) and load_average (the machine's
1-minute load average at the start and at the end: a loaded machine's
figures spread). Without --json, each benchmark's tables under a header.
Progress, each benchmark's command line included, goes to stderr.

Each runs as its own command would (see ckpt bench NAME --help), with:
  store           --size 64MiB --scenario-size 64MiB (--store-size, --scenario-size)
  stage           --quick --size 64MiB (--stage-size; --stage-full: every point)
  coord           --clients 2048 --per-node 64 (--clients, --per-node)
  overhead        --ranks 2 --size s --iterations 300 --trials 3 (--overhead-*)
  coord_simulate  --ranks 1000,10000,100000 --per-node 64 (--sim-ranks, --per-node)
  compress        --himeno m --rounds 3 (--compress-himeno, --compress-rounds)
  scaling         --ranks 4,8 --rank-size 16MiB --sizes 16MiB,64MiB --size-ranks 4
                  --rounds 2 (--scaling-ranks, --scaling-rank-size, --scaling-sizes)
store, stage, compress and scaling write in --dir. A benchmark that fails has {"error": ...}
as its report; the others still run, and the command exits with status 1
after printing the report.`
