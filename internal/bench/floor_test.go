package bench

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestFloorBytes: XOR over N members stores one parity shard per member,
// a chunk of ceil(B/(N−1)) bytes: the scenario of issue 17 (4 × 512 MiB,
// xor:4) writes 2.67 GiB.
func TestFloorBytes(t *testing.T) {
	for _, c := range []struct {
		rank          int64
		members       int
		parity, total int64
	}{
		{512 << 20, 4, 178956971, 2863311532}, // ceil(512 MiB / 3); 4 × (data + parity)
		{3 << 20, 4, 1 << 20, 16 << 20},
		{10, 4, 4, 56},                 // 10/3 rounds up
		{1 << 20, 2, 1 << 20, 4 << 20}, // xor:2 is a mirror
		{9, 10, 1, 100},
	} {
		data, parity, err := FloorBytes(c.rank, c.members)
		if err != nil || data != c.rank || parity != c.parity || int64(c.members)*(data+parity) != c.total {
			t.Errorf("FloorBytes(%d, %d) = %d, %d, %v; want %d, %d (total %d)", c.rank, c.members, data, parity, err, c.rank, c.parity, c.total)
		}
	}
	if got := float64(scenarioMembers) * float64(512<<20+178956971) / (1 << 30); math.Abs(got-2.667) > 0.001 {
		t.Errorf("the issue's scenario writes %.3f GiB, want 2.667", got)
	}
	if _, _, err := FloorBytes(1<<20, 1); err == nil {
		t.Error("FloorBytes over 1 member: no error, want one (xor needs a set of 2 at least)")
	}
}

// TestBestRawWrite: the write limit is the fastest of the patterns the
// run measured, whichever it is; one the file system refused (NaN) does
// not count, and none measured is no limit at all.
func TestBestRawWrite(t *testing.T) {
	nan := math.NaN()
	for _, c := range []struct {
		in   []float64
		want float64
	}{
		{[]float64{1e9, 2e9, 3e9}, 3e9}, // O_DIRECT fastest
		{[]float64{3e9, 2e9, 1e9}, 3e9}, // fsync at the end fastest
		{[]float64{1e9, 3e9, 2e9}, 3e9}, // writeback fastest
		{[]float64{1e9, 2e9, nan}, 2e9}, // tmpfs refuses O_DIRECT
		{[]float64{nan, nan, 5}, 5},
		{[]float64{nan, nan, nan}, nan},
	} {
		got := bestRawWrite(c.in...)
		if !(got == c.want || math.IsNaN(got) && math.IsNaN(c.want)) {
			t.Errorf("bestRawWrite(%v) = %v, want %v", c.in, got, c.want)
		}
		for _, v := range c.in {
			if v > got {
				t.Errorf("bestRawWrite(%v) = %v: slower than a measured pattern %v", c.in, got, v)
			}
		}
	}
}

// TestSetRatios: every ratio is its figure over the limit measured beside
// it; restart_ratio takes the cold pair where the cache could be emptied,
// the hot pair otherwise, never one of each.
func TestSetRatios(t *testing.T) {
	base := StoreResult{
		RawWrite: 4, RawWriteFsync: 2, CacheWrite: 3, MemCopy: 10, XOREncode: 5, RSEncode: 2.5,
		XOREncodeTCP: 1, LoopbackTCP: 4, RawReadHot: 20, RestartHot: 5, RawReadCold: 2, RestartCold: 1.5,
		ScenarioRebuildRestart: 0.5, ScenarioCheckpoint: 3, ScenarioFloor: 2.5, ShmCheckpoint: 1, ShmFloor: 0.5,
	}
	r := base
	r.ColdMethod = coldDropCaches
	r.setRatios(1 << 20)
	want := map[string][2]float64{
		"cache write":        {r.CacheWriteRatio, 0.75},
		"cache write fsync":  {r.CacheWriteFsyncRatio, 1.5},
		"xor":                {r.XOREncodeRatio, 0.5},
		"rs":                 {r.RSEncodeRatio, 0.25},
		"tcp":                {r.XOREncodeTCPRatio, 0.25},
		"restart hot":        {r.RestartHotRatio, 0.25},
		"restart cold":       {r.RestartColdRatio, 0.75},
		"restart (cold)":     {r.RestartRatio, 0.75},
		"rebuild throughput": {r.Rebuild, 2 << 20},
		"rebuild":            {r.RebuildRatio, float64(2<<20) / 4},
		"floor":              {r.ScenarioFloorRatio, 2.5 / 3},
		"shm floor":          {r.ShmFloorRatio, 0.5},
	}
	for name, v := range want {
		if v[0] != v[1] {
			t.Errorf("%s ratio = %v, want %v", name, v[0], v[1])
		}
	}
	if r.RawRead != 2 || r.Restart != 1.5 {
		t.Errorf("cold: restart_ratio's pair = %v / %v, want the cold pair 1.5 / 2", r.Restart, r.RawRead)
	}
	if r.ScenarioFloorBytes != 4*(1<<20+349526) {
		t.Errorf("ScenarioFloorBytes = %d, want 4 × (1 MiB + ceil(1 MiB / 3))", r.ScenarioFloorBytes)
	}

	r = base
	r.ColdMethod = coldNone
	r.RawReadCold, r.RestartCold, r.ShmCheckpoint, r.ShmFloor = math.NaN(), math.NaN(), math.NaN(), math.NaN()
	r.setRatios(1 << 20)
	if r.RawRead != 20 || r.Restart != 5 || r.RestartRatio != 0.25 {
		t.Errorf("no cold cache: restart_ratio %v = %v / %v, want the hot pair 5 / 20 = 0.25", r.RestartRatio, r.Restart, r.RawRead)
	}
	if !math.IsNaN(r.RestartColdRatio) || !math.IsNaN(r.ShmFloorRatio) {
		t.Errorf("ratios of figures not measured: cold %v, shm %v; want NaN (null in the report)", r.RestartColdRatio, r.ShmFloorRatio)
	}
}

// TestAlternate: the floor and the run take turns, twice, and each keeps
// its better: the floor's shortest time with its own pattern, each step's
// shortest time on its own.
func TestAlternate(t *testing.T) {
	var calls []string
	floors := []struct {
		d float64
		p string
	}{{2, "fsync"}, {1.5, "writeback"}}
	runs := [][3]float64{{3, 1, 5}, {4, 0.5, 6}}
	fi, ri := 0, 0
	var best float64
	var pattern string
	out, err := alternate(func() (float64, string, error) {
		calls = append(calls, "floor")
		f := floors[fi]
		fi++
		return f.d, f.p, nil
	}, func() ([3]float64, error) {
		calls = append(calls, "run")
		r := runs[ri]
		ri++
		return r, nil
	}, &best, &pattern)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(calls, []string{"floor", "run", "floor", "run"}) {
		t.Errorf("calls %v, want floor and run taking turns twice", calls)
	}
	if best != 1.5 || pattern != "writeback" || out != [3]float64{3, 0.5, 5} {
		t.Errorf("alternate = %v, floor %v (%s); want [3 0.5 5], 1.5 (writeback)", out, best, pattern)
	}
	// A failure stops it and is returned.
	boom := errors.New("disk full")
	_, err = alternate(func() (float64, string, error) { return 0, "", boom },
		func() ([3]float64, error) { t.Error("ran after the floor failed"); return [3]float64{}, nil }, &best, &pattern)
	if !errors.Is(err, boom) {
		t.Errorf("err = %v, want %v", err, boom)
	}
}

// TestShmVerdict: a missing tmpfs, one that cannot be looked at and one
// too small each say so, with the sizes; one with room says nothing.
func TestShmVerdict(t *testing.T) {
	need := shmNeed(512 << 20)
	if need < 4*(512<<20+178956971) {
		t.Fatalf("shmNeed(512 MiB) = %d: less than the scenario's data and parity", need)
	}
	for _, c := range []struct {
		free int64
		err  error
		want []string // substrings; none: ok
	}{
		{need, nil, nil},
		{need - 1, nil, []string{"/dev/shm has", "needs", "not measured"}},
		{0, fmt.Errorf("stat: %w", fs.ErrNotExist), []string{"/dev/shm does not exist", "not measured"}},
		{0, errors.New("permission denied"), []string{"permission denied", "not measured"}},
	} {
		got := shmVerdict("/dev/shm", c.free, need, c.err)
		if (got == "") != (c.want == nil) {
			t.Errorf("shmVerdict(free %d, %v) = %q", c.free, c.err, got)
		}
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("shmVerdict(free %d, %v) = %q, want it to say %q", c.free, c.err, got, w)
			}
		}
	}
}

// TestScenarioFloorWrites writes the floor of a small scenario: 4 data
// files of the rank's size and 4 parity files of ceil(size/3), and a
// positive time; floorPatterns takes the best pattern and leaves nothing.
func TestScenarioFloorWrites(t *testing.T) {
	buf := make([]byte, block)
	rand.Read(buf)
	dir := filepath.Join(t.TempDir(), "floor")
	const rank = 3<<20 + 5
	d, err := scenarioFloor(dir, rank, buf, writeFsync)
	if err != nil || !(d > 0) {
		t.Fatalf("scenarioFloor = %v, %v", d, err)
	}
	for r := range scenarioMembers {
		for name, want := range map[string]int64{"data": rank, "parity": 1<<20 + 2} {
			st, err := os.Stat(filepath.Join(dir, fmt.Sprintf("%s%d", name, r)))
			if err != nil || st.Size() != want {
				t.Errorf("%s%d: %v, want %d bytes", name, r, err, want)
			}
		}
	}
	best, pattern, err := floorPatterns(dir, rank, buf)
	if err != nil || !(best > 0) || !slices.Contains([]string{"fsync", "writeback", "O_DIRECT"}, pattern) {
		t.Fatalf("floorPatterns = %v, %q, %v", best, pattern, err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("floorPatterns left %s (%v)", dir, err)
	}
}

// TestShmScenarioMissing: with no tmpfs where it is asked for, the figures
// are NaN (null in the report), the status says why, and the progress
// shouts it; the run goes on.
func TestShmScenarioMissing(t *testing.T) {
	var said []string
	cfg := StoreConfig{ShmDir: filepath.Join(t.TempDir(), "no-shm"), ScenarioRank: 1 << 20,
		Progress: func(s string) { said = append(said, s) }}
	r := StoreResult{ShmCheckpoint: 1, ShmFloor: 1}
	if err := shmScenario(context.Background(), &r, cfg, t.TempDir(), make([]byte, block)); err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(r.ShmCheckpoint) || !math.IsNaN(r.ShmFloor) {
		t.Errorf("shm figures %v, %v without a tmpfs, want NaN", r.ShmCheckpoint, r.ShmFloor)
	}
	if !strings.Contains(r.ShmStatus, "does not exist") {
		t.Errorf("ShmStatus = %q, want it to say the directory does not exist", r.ShmStatus)
	}
	if len(said) != 1 || !strings.HasPrefix(said[0], "WARNING: ") {
		t.Errorf("progress %q, want one WARNING", said)
	}
}

// TestShmScenarioRuns runs the checkpoint on tmpfs at 1 MiB per rank
// beside its floor: both measured and positive, nothing left behind.
func TestShmScenarioRuns(t *testing.T) {
	if _, err := shmRoom(DefaultShmDir); err != nil {
		// Every Linux system mounts it (containers too): on Linux its
		// absence is a failure, never a skip that CI would not see.
		if runtime.GOOS == "linux" {
			t.Fatalf("%s: %v (on Linux this test must run)", DefaultShmDir, err)
		}
		t.Skipf("SKIPPED: %s unusable here (%v): the checkpoint on tmpfs is not tested", DefaultShmDir, err)
	}
	buf := make([]byte, block)
	rand.Read(buf)
	cfg := StoreConfig{ShmDir: DefaultShmDir, ScenarioRank: 1 << 20}
	cfg.Progress = func(string) {}
	before, _ := filepath.Glob(filepath.Join(DefaultShmDir, "ckpt-bench-*"))
	var r StoreResult
	if err := shmScenario(context.Background(), &r, cfg, t.TempDir(), buf); err != nil {
		t.Fatal(err)
	}
	if r.ShmStatus != "" || !(r.ShmCheckpoint > 0) || !(r.ShmFloor > 0) {
		t.Errorf("on %s: checkpoint %v s, floor %v s, status %q", DefaultShmDir, r.ShmCheckpoint, r.ShmFloor, r.ShmStatus)
	}
	after, _ := filepath.Glob(filepath.Join(DefaultShmDir, "ckpt-bench-*"))
	if len(after) > len(before) {
		t.Errorf("left behind in %s: %v", DefaultShmDir, after)
	}
}

// TestRestartFloor: the restart's limit reads every surviving rank's files
// and writes the lost rank's again, whole; a survivor's missing file fails
// it.
func TestRestartFloor(t *testing.T) {
	buf := make([]byte, block)
	rand.Read(buf)
	dir := filepath.Join(t.TempDir(), "floor")
	files := []floorFile{{"data", 2<<20 + 7}, {"parity", 1 << 20}}
	if _, err := writersFloor(dir, 4, files, buf, writeFsync); err != nil {
		t.Fatal(err)
	}
	lost := filepath.Join(dir, fmt.Sprintf("data%d", scalingLost))
	os.Remove(lost)
	d, err := restartFloor(dir, 4, files, buf, writeWriteback)
	if err != nil || !(d > 0) {
		t.Fatalf("restartFloor = %v, %v", d, err)
	}
	if st, err := os.Stat(lost); err != nil || st.Size() != files[0].size {
		t.Errorf("the lost rank's data after the floor: %v, %v", st, err)
	}
	os.Remove(filepath.Join(dir, "parity3"))
	if _, err := restartFloor(dir, 4, files, buf, writeFsync); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("restartFloor with a survivor's parity missing: %v", err)
	}
}
