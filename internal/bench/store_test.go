package bench

import (
	"context"
	"crypto/rand"
	"path/filepath"
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
