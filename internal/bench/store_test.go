package bench

import (
	"context"
	"crypto/rand"
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkScenarioProcess runs the scenario of `ckpt bench store` with
// process durability at 64 MiB per rank and reports each step's seconds,
// so that a profile of the checkpoint (go test -bench ScenarioProcess
// -cpuprofile, then pprof -focus Commit) can be compared across versions
// without the rest of the tool's measurements.
func BenchmarkScenarioProcess(b *testing.B) { benchScenario(b, false) }

// BenchmarkScenarioSynced is the same with the default cache durability
// (every file synced), the scenario of issue 17's side by side with SCR:
// go test -trace, then go tool trace -pprof=syscall, shows the fsyncs.
func BenchmarkScenarioSynced(b *testing.B) { benchScenario(b, true) }

func benchScenario(b *testing.B, synced bool) {
	buf := make([]byte, block)
	if _, err := rand.Read(buf); err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	var sum [3]float64
	for i := 0; i < b.N; i++ {
		out, err := scenario(context.Background(), filepath.Join(dir, "scenario"), 64<<20, buf, synced)
		if err != nil {
			b.Fatal(err)
		}
		for s := range sum {
			sum[s] += out[s]
		}
	}
	n := float64(b.N)
	b.ReportMetric(sum[0]/n, "checkpoint-s/op")
	b.ReportMetric(sum[1]/n, "flush-s/op")
	b.ReportMetric(sum[2]/n, "rebuild-restart-s/op")
}

// TestRunScaling runs the scaling table at 1 MiB per rank: one row per
// point of each sweep in order, the point in both sweeps measured once and
// shown in both, every time and ratio finite and positive, the bytes the
// checkpoint writes those of xor sets of min(ranks, 4), and nothing left
// behind.
func TestRunScaling(t *testing.T) {
	dir := t.TempDir()
	var progress []string
	cfg := ScalingConfig{Dir: dir, Ranks: []int{2, 4}, RankBytes: 1 << 20, Sizes: []int64{1 << 20, 2 << 20}, SizeRanks: 2,
		Rounds: 1, Progress: func(s string) { progress = append(progress, s) }}
	rows, err := RunScaling(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		sweep string
		ranks int
		bytes int64
	}{{SweepRanks, 2, 1 << 20}, {SweepRanks, 4, 1 << 20}, {SweepSize, 2, 1 << 20}, {SweepSize, 2, 2 << 20}}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d: %+v", len(rows), len(want), rows)
	}
	for i, w := range want {
		r := rows[i]
		if r.Sweep != w.sweep || r.Ranks != w.ranks || r.RankBytes != w.bytes {
			t.Errorf("row %d: %s, %d ranks × %d, want %s, %d × %d", i, r.Sweep, r.Ranks, r.RankBytes, w.sweep, w.ranks, w.bytes)
		}
		set := min(w.ranks, 4)
		data, parity, _ := FloorBytes(w.bytes, set)
		if r.SetSize != set || r.CheckpointBytes != int64(w.ranks)*(data+parity) {
			t.Errorf("row %d: set %d, checkpoint bytes %d, want %d and %d", i, r.SetSize, r.CheckpointBytes, set, int64(w.ranks)*(data+parity))
		}
		for name, v := range map[string]float64{
			"checkpoint": r.Checkpoint, "checkpoint floor": r.CheckpointFloor, "checkpoint ratio": r.CheckpointRatio,
			"flush": r.Flush, "flush floor": r.FlushFloor, "flush ratio": r.FlushRatio,
			"restart": r.Restart, "restart floor": r.RestartFloor, "restart ratio": r.RestartRatio,
		} {
			if !(v > 0) || math.IsInf(v, 0) {
				t.Errorf("row %d: %s = %v, want finite and positive", i, name, v)
			}
		}
		if math.Abs(r.CheckpointRatio-r.CheckpointFloor/r.Checkpoint) > 1e-12 || math.Abs(r.RestartRatio-r.RestartFloor/r.Restart) > 1e-12 {
			t.Errorf("row %d: ratios are not the limit over the step: %+v", i, r)
		}
		for _, p := range []string{r.CheckpointPattern, r.FlushPattern, r.RestartPattern} {
			if !map[string]bool{"fsync": true, "writeback": true, "O_DIRECT": true}[p] {
				t.Errorf("row %d: pattern %q", i, p)
			}
		}
	}
	if rows[0] != (func() ScalingPoint { r := rows[2]; r.Sweep = SweepRanks; return r })() {
		t.Errorf("the point of both sweeps differs between them: %+v and %+v", rows[0], rows[2])
	}
	// 3 distinct points of 1 round, two steps each, said on the way.
	if len(progress) != 6 || !strings.Contains(progress[0], "point 1 of 3, 2 ranks") {
		t.Errorf("progress %q, want 6 lines over 3 points", progress)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("left behind in %s: %v", dir, left)
	}
}

// RunScaling fails, without measuring, in a missing directory and with no
// rounds to run.
func TestRunScalingFails(t *testing.T) {
	cfg := ScalingConfig{Dir: filepath.Join(t.TempDir(), "gone"), Ranks: []int{2}, RankBytes: 1 << 20, SizeRanks: 2, Rounds: 1}
	if _, err := RunScaling(context.Background(), cfg); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("RunScaling in a missing directory: %v", err)
	}
	cfg.Dir, cfg.Rounds = t.TempDir(), 0
	if _, err := RunScaling(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "0 rounds") {
		t.Errorf("RunScaling with 0 rounds: %v", err)
	}
}
