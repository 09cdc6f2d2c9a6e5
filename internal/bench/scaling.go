package bench

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/ckpt/ckpt/internal/units"
)

// The scaling table of issue 17: the scenario of `ckpt bench store` (XOR
// over the nodes, caches synced, every byte hashed) at several rank counts
// and sizes per rank, each step beside the limit of its bytes measured in
// the same run, so that a reader sees how the cost grows.

// ScalingConfig is what `ckpt bench scaling` measures: one point for each
// rank count in Ranks at RankBytes per rank, and one for each size in
// Sizes at SizeRanks ranks. A point in both sweeps is measured once.
type ScalingConfig struct {
	Dir       string // the disk of the node caches and of the shared directory
	Ranks     []int
	RankBytes int64
	Sizes     []int64
	SizeRanks int
	// Rounds is how often each point's limits and scenario take turns;
	// each keeps its shortest time.
	Rounds   int
	Progress func(step string)
}

// Sweeps, as a ScalingPoint names the one it belongs to.
const (
	SweepRanks = "ranks"
	SweepSize  = "size"
)

// ScalingPoint is one row of the table: the scenario at Ranks ranks over
// as many nodes, RankBytes each, in XOR sets of SetSize, in seconds, each
// step beside its limit. Each ratio is the limit over the step (1: at the
// limit), as scenario_floor_ratio in `ckpt bench store`.
type ScalingPoint struct {
	Sweep     string
	Ranks     int
	SetSize   int
	RankBytes int64
	// CheckpointBytes is what the checkpoint writes: every rank's data and
	// its parity shard.
	CheckpointBytes int64

	// The checkpoint against its floor: every rank's data and parity
	// written raw at once, each file fsync'd, with the fastest pattern.
	Checkpoint, CheckpointFloor, CheckpointRatio float64
	CheckpointPattern                            string
	// The blocking flush against the raw write of every rank's data into
	// the same disk at once, each file fsync'd, fastest pattern.
	Flush, FlushFloor, FlushRatio float64
	FlushPattern                  string
	// The restart after node1's cache is lost (every rank restarts; node1's
	// data and parity are rebuilt, every byte verified) against, at once,
	// the other ranks reading their data and parity raw and one writer
	// writing node1's data and parity, fsync'd, fastest pattern. Both sides
	// find the surviving files in the page cache (hot): the scenario's
	// restart comes right after its flush read them, the floor's right
	// after they were written.
	Restart, RestartFloor, RestartRatio float64
	RestartPattern                      string
}

// scalingPoint is one point to measure: ranks × rankBytes.
type scalingPoint struct {
	ranks     int
	rankBytes int64
}

// Points lists the rows of cfg's table in order, ranks sweep first: each
// row's sweep, rank count and size per rank.
func (cfg ScalingConfig) Points() []ScalingPoint {
	var out []ScalingPoint
	for _, n := range cfg.Ranks {
		out = append(out, ScalingPoint{Sweep: SweepRanks, Ranks: n, RankBytes: cfg.RankBytes})
	}
	for _, b := range cfg.Sizes {
		out = append(out, ScalingPoint{Sweep: SweepSize, Ranks: cfg.SizeRanks, RankBytes: b})
	}
	return out
}

// RunScaling measures every point of cfg, in the order of cfg.Points. It
// writes below cfg.Dir and removes what it wrote.
func RunScaling(ctx context.Context, cfg ScalingConfig) ([]ScalingPoint, error) {
	if cfg.Progress == nil {
		cfg.Progress = func(string) {}
	}
	if cfg.Rounds < 1 {
		return nil, fmt.Errorf("scaling: %d rounds, want at least 1", cfg.Rounds)
	}
	rows := cfg.Points()
	var unique []scalingPoint
	for _, r := range rows {
		if p := (scalingPoint{r.Ranks, r.RankBytes}); !slices.Contains(unique, p) {
			unique = append(unique, p)
		}
	}
	work, buf, err := workspace(cfg.Dir, "ckpt-bench-scaling-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	measured := map[scalingPoint]ScalingPoint{}
	for i, p := range unique {
		say := func(step string) {
			cfg.Progress(fmt.Sprintf("point %d of %d, %d ranks × %s: %s", i+1, len(unique), p.ranks, units.FormatSize(float64(p.rankBytes)), step))
		}
		m, err := measurePoint(ctx, work, p, cfg.Rounds, buf, say)
		if err != nil {
			return nil, fmt.Errorf("%d ranks × %s: %w", p.ranks, units.FormatSize(float64(p.rankBytes)), err)
		}
		measured[p] = m
	}
	for i, r := range rows {
		m := measured[scalingPoint{r.Ranks, r.RankBytes}]
		m.Sweep = r.Sweep
		rows[i] = m
	}
	return rows, nil
}

// measurePoint runs the limits and the scenario of one point in turn,
// rounds times, and keeps each one's shortest time.
func measurePoint(ctx context.Context, work string, p scalingPoint, rounds int, buf []byte, say func(string)) (ScalingPoint, error) {
	set := scenarioSetSize(p.ranks)
	data, parity, err := FloorBytes(p.rankBytes, set)
	if err != nil {
		return ScalingPoint{}, err
	}
	r := ScalingPoint{Ranks: p.ranks, SetSize: set, RankBytes: p.rankBytes,
		CheckpointBytes: int64(p.ranks) * (data + parity)}
	r.Checkpoint, r.Flush, r.Restart = math.Inf(1), math.Inf(1), math.Inf(1)
	r.CheckpointFloor, r.FlushFloor, r.RestartFloor = math.Inf(1), math.Inf(1), math.Inf(1)
	keep := func(best *float64, pattern *string, d float64, name string) {
		if d < *best {
			*best, *pattern = d, name
		}
	}
	for round := range rounds {
		say(fmt.Sprintf("round %d of %d: the limits (checkpoint, restart, flush)", round+1, rounds))
		ck, ckName, rs, rsName, err := checkpointRestartFloors(filepath.Join(work, "floor"), p.ranks, data, parity, buf)
		if err != nil {
			return r, err
		}
		keep(&r.CheckpointFloor, &r.CheckpointPattern, ck, ckName)
		keep(&r.RestartFloor, &r.RestartPattern, rs, rsName)
		dir := filepath.Join(work, "floor-flush")
		fl, flName, err := bestPattern("flush floor", allPatterns, func() { os.RemoveAll(dir) }, func(pt writePattern) (float64, error) {
			return writersFloor(dir, p.ranks, []floorFile{{"data", data}}, buf, pt)
		})
		os.RemoveAll(dir)
		if err != nil {
			return r, err
		}
		keep(&r.FlushFloor, &r.FlushPattern, fl, flName)

		say(fmt.Sprintf("round %d of %d: checkpoint, flush, restart after losing node%d", round+1, rounds, scalingLost))
		sc, err := scenarioSteps(ctx, filepath.Join(work, "scenario"), filepath.Join(work, "scenario"), p.ranks, p.rankBytes, buf, true, false)
		if err != nil {
			return r, err
		}
		r.Checkpoint, r.Flush, r.Restart = min(r.Checkpoint, sc[0]), min(r.Flush, sc[1]), min(r.Restart, sc[2])
	}
	r.CheckpointRatio = r.CheckpointFloor / r.Checkpoint
	r.FlushRatio = r.FlushFloor / r.Flush
	r.RestartRatio = r.RestartFloor / r.Restart
	return r, nil
}
