package capitest

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ckpt/ckpt"
	"github.com/ckpt/ckpt/internal/bench"
	"github.com/ckpt/ckpt/internal/capitest/mpitest"
)

// The C API's benchmarks (docs/PERFORMANCE.md, "The SCR-compatible C
// API"): each figure beside the limit it is compared to, measured in the
// same run. Run them one at a time:
//
//	go test -run XXX -bench CAPI -benchtime 1x ./internal/capitest
//
// CKPT_BENCH_MIB sets the checkpoint benchmark's size per rank (default
// 512) and CKPT_BENCH_ROUNDS its rounds (default 3).

// BenchmarkCAPICalls times SCR_Need_checkpoint, SCR_Route_file and empty
// SCR_Start_output/SCR_Complete_output pairs under plain mpirun, at 2
// ranks (one per core here) and 4, against MPI_Allreduce of one int in
// the same run: the least a collective call can cost.
func BenchmarkCAPICalls(b *testing.B) {
	install := mpitest.Install(b)
	bin := program(b, install, "scrbench.c")
	for _, np := range []int{2, 4} {
		b.Run(fmt.Sprintf("np=%d", np), func(b *testing.B) {
			for range b.N {
				dir := b.TempDir()
				env := []string{"SCR_PREFIX=" + dir, "SCR_CACHE_BASE=" + filepath.Join(dir, "cache"),
					"SCR_JOB_ID=bench", "CKPT_SCR_NODES=" + strconv.Itoa(np), "TMPDIR=" + dir}
				out, err := mpitest.Run(b, np, dir, env, bin, "calls", "2000")
				if err != nil {
					b.Fatalf("scrbench calls: %v\n%s", err, out)
				}
				calls := parseCalls(b, out)
				limit := calls["MPI_Allreduce"]
				for _, name := range []string{"MPI_Barrier", "MPI_Allreduce", "SCR_Need_checkpoint", "SCR_Route_file",
					"empty_output_pair_FLAG_NONE", "empty_output_pair_FLAG_OUTPUT", "empty_output_pair_FLAG_CHECKPOINT"} {
					s, ok := calls[name]
					if !ok {
						b.Fatalf("scrbench said nothing of %s:\n%s", name, out)
					}
					b.ReportMetric(s*1e6, name+"-µs")
					if !strings.HasPrefix(name, "MPI_") {
						b.ReportMetric(s/limit, name+"/allreduce")
					}
				}
			}
		})
	}
}

// parseCalls reads scrbench's "call NAME SECONDS" lines.
func parseCalls(b *testing.B, out string) map[string]float64 {
	calls := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 3 && f[0] == "call" {
			v, err := strconv.ParseFloat(f[2], 64)
			if err != nil {
				b.Fatalf("scrbench: %q: %v", sc.Text(), err)
			}
			calls[f[1]] = v
		}
	}
	return calls
}

// BenchmarkCAPICheckpoint sets a checkpoint through the C API against the
// same checkpoint through the Go API: 4 ranks × CKPT_BENCH_MIB MiB, XOR
// over 4 simulated nodes, the caches synced, both under ckpt run (the
// same coordinator, nodes, caches and durability; only the API differs).
// The C program writes its file with write(2) at the path
// SCR_Route_file gives; the Go program through Checkpoint.Create, as a
// Go application does. Rounds alternate C, Go and the machine's limit
// (4 writers × the same size with fsync, bench.ScenarioRaw); each
// figure is the median over every checkpoint of every round.
func BenchmarkCAPICheckpoint(b *testing.B) {
	mib := envInt(b, "CKPT_BENCH_MIB", 512)
	rounds := envInt(b, "CKPT_BENCH_ROUNDS", 3)
	const perRun = 3
	install := mpitest.Install(b)
	cbin := program(b, install, "scrbench.c")
	ckptBin := ckptBinary(b)
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 8<<20)
	for i := range buf {
		buf[i] = byte(i*131 + i>>13)
	}
	for range b.N {
		var cTimes, goTimes, raw []float64
		for round := range rounds {
			dir := b.TempDir()
			r, err := bench.ScenarioRaw(filepath.Join(dir, "raw"), int64(mib)<<20, buf)
			if err != nil {
				b.Fatal(err)
			}
			raw = append(raw, r)
			cTimes = append(cTimes, ckptRunBench(b, ckptBin, filepath.Join(dir, "c"), nil,
				cbin, "checkpoint", strconv.Itoa(mib), strconv.Itoa(perRun))...)
			goTimes = append(goTimes, ckptRunBench(b, ckptBin, filepath.Join(dir, "go"),
				[]string{goRankEnv + "=" + fmt.Sprintf("%d %d", mib, perRun)}, self)...)
			b.Logf("round %d: raw %.2fs, C %v, Go %v", round, r, cTimes[len(cTimes)-perRun:], goTimes[len(goTimes)-perRun:])
		}
		c, g, l := median(cTimes), median(goTimes), median(raw)
		b.ReportMetric(c, "C-s/ckpt")
		b.ReportMetric(g, "Go-s/ckpt")
		b.ReportMetric(l, "raw-s")
		b.ReportMetric(c/g, "C/Go")
		b.ReportMetric(l/c, "raw/C")
		b.ReportMetric(l/g, "raw/Go")
	}
}

func envInt(b *testing.B, key string, def int) int {
	v := os.Getenv(key)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		b.Fatalf("%s=%q: want a whole number ≥ 1", key, v)
	}
	return n
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// ckptRunBench runs argv under ckpt run on 4 ranks and 4 nodes with XOR
// over the 4, in job directory dir, and returns the slowest rank's time
// of each checkpoint ("checkpoint K SECONDS" lines).
func ckptRunBench(b *testing.B, ckptBin, dir string, env []string, argv ...string) []float64 {
	b.Helper()
	prefix := filepath.Join(dir, "prefix")
	if err := os.MkdirAll(prefix, 0o755); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), mpitest.Timeout)
	defer cancel()
	args := append([]string{"run", "-n", "4", "--nodes", "4", "--redundancy", "xor:4", "--interval", "none",
		"--cache-root", filepath.Join(dir, "job"), "--"}, argv...)
	cmd := exec.CommandContext(ctx, ckptBin, args...)
	cmd.Dir = prefix
	cmd.Env = append(os.Environ(), "SCR_PREFIX="+prefix, "SCR_CACHE_BASE="+filepath.Join(dir, "scrcache"),
		"SCR_JOB_ID=bench", "SCR_FLUSH=0", "OMPI_MCA_mpi_yield_when_idle=1")
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("ckpt %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	slowest := map[int]float64{}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 5 && f[0] == "[rank" {
			f = f[2:] // ckpt run's prefix of a rank's line
		}
		if len(f) != 3 || f[0] != "checkpoint" {
			continue
		}
		k, err1 := strconv.Atoi(f[1])
		s, err2 := strconv.ParseFloat(f[2], 64)
		if err1 != nil || err2 != nil {
			b.Fatalf("%q: not \"checkpoint K SECONDS\"", sc.Text())
		}
		slowest[k] = max(slowest[k], s)
	}
	var times []float64
	for k := range slowest {
		times = append(times, slowest[k])
	}
	if len(times) == 0 {
		b.Fatalf("no checkpoint times from ckpt %s:\n%s", strings.Join(args, " "), out)
	}
	return times
}

// goRankEnv makes the test binary a rank of the Go side of
// BenchmarkCAPICheckpoint ("MIB COUNT"): see TestMain.
const goRankEnv = "CKPT_CAPITEST_GO_RANK"

// goCheckpointRank is the Go API's twin of scrbench's checkpoint mode:
// COUNT checkpoints of MIB MiB in one file per rank, each timed from
// before Checkpoint to its return, after a barrier.
func goCheckpointRank(spec string) error {
	var mib, count int
	if _, err := fmt.Sscan(spec, &mib, &count); err != nil {
		return fmt.Errorf("%s=%q: want \"MIB COUNT\"", goRankEnv, spec)
	}
	ctx := context.Background()
	job, err := ckpt.Join(ctx, ckpt.JobOptions{Interval: "none"})
	if err != nil {
		return err
	}
	defer job.Close()
	buf := make([]byte, 8<<20)
	for i := range buf {
		buf[i] = byte(i*131 + job.Rank()*7 + i>>13)
	}
	size := int64(mib) << 20
	for k := range count {
		if err := job.Barrier(ctx); err != nil {
			return err
		}
		start := time.Now()
		err := job.Checkpoint(ctx, fmt.Sprintf("bench-%d", k), func(c *ckpt.Checkpoint) error {
			f, err := c.Create(fmt.Sprintf("rank_%d.ckpt", job.Rank()))
			if err != nil {
				return err
			}
			buf[0] = byte(k)
			for off := int64(0); off < size; off += int64(len(buf)) {
				if _, err := f.Write(buf[:min(int64(len(buf)), size-off)]); err != nil {
					return err
				}
			}
			return f.Close()
		})
		if err != nil {
			return err
		}
		fmt.Printf("checkpoint %d %.6f\n", k, time.Since(start).Seconds())
	}
	return job.Finish(ctx, "")
}
