package main

import (
	"math"
	"strings"
	"testing"
)

// TestBenchStoreJSON runs `ckpt bench store` at a small size: every figure
// is measured and positive, and each ratio is its figure over its limit.
func TestBenchStoreJSON(t *testing.T) {
	if testing.Short() {
		t.Skip("writes tens of MiB")
	}
	code, stdout, stderr := runCLI(t, "bench", "store", "--dir", t.TempDir(), "--size", "4MiB", "--scenario-size", "2MiB", "--json")
	if code != exitOK {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	// Progress goes to stderr, one line per step.
	if !strings.Contains(stderr, "scenario") {
		t.Errorf("stderr %q shows no progress through the scenario", stderr)
	}
	obj := decodeOne(t, stdout)
	checkKeys(t, obj, []string{
		"cache_write_ratio", "xor_encode_ratio", "rs_encode_ratio", "xor_encode_tcp_ratio", "restart_ratio", "rebuild_ratio",
		"raw_write_bytes_per_second", "raw_read_bytes_per_second", "memcopy_bytes_per_second",
		"cache_write_bytes_per_second", "xor_encode_bytes_per_second", "rs_encode_bytes_per_second",
		"xor_encode_tcp_bytes_per_second", "loopback_tcp_bytes_per_second",
		"restart_bytes_per_second", "rebuild_bytes_per_second",
		"scenario_checkpoint_seconds", "scenario_flush_seconds", "scenario_rebuild_restart_seconds",
		"scenario_raw_write_seconds", "scenario_process_checkpoint_seconds",
		"scenario_process_flush_seconds", "scenario_process_rebuild_restart_seconds",
		"size_bytes", "scenario_rank_bytes",
		"raw_write_fsync_bytes_per_second", "raw_write_writeback_bytes_per_second",
		"cache_write_fsync_ratio", "restart_hot_bytes_per_second", "raw_read_hot_bytes_per_second", "restart_hot_ratio",
		"scenario_floor_seconds", "scenario_floor_pattern", "scenario_floor_bytes", "scenario_floor_ratio",
		"scenario_shm_checkpoint_seconds", "scenario_shm_floor_seconds", "scenario_shm_floor_ratio",
		"scenario_shm_status", "shm_dir",
	}, []string{"raw_write_direct_bytes_per_second", "restart_cache_state", "cold_cache_method",
		"raw_read_cold_bytes_per_second", "restart_cold_bytes_per_second", "restart_cold_ratio"},
		"restart_cache_state", "cold_cache_method", "scenario_floor_pattern", "scenario_shm_status", "shm_dir")
	// Figures this machine may not measure: O_DIRECT (tmpfs refuses it)
	// and the cold cache (where it cannot be emptied). They are null then,
	// never zero.
	cold := []string{"raw_read_cold_bytes_per_second", "restart_cold_bytes_per_second", "restart_cold_ratio"}
	method := obj["cold_cache_method"]
	maybe := map[string]bool{"raw_write_direct_bytes_per_second": true}
	switch method {
	case "drop_caches", "fadvise":
		if obj["restart_cache_state"] != "cold" {
			t.Errorf("restart_cache_state = %v with the cache emptied by %v, want cold", obj["restart_cache_state"], method)
		}
	case "none":
		for _, k := range cold {
			maybe[k] = true
			if obj[k] != nil {
				t.Errorf("%s = %v without a way to empty the cache, want null", k, obj[k])
			}
		}
		if obj["restart_cache_state"] != "hot" {
			t.Errorf("restart_cache_state = %v without a cold cache, want hot", obj["restart_cache_state"])
		}
	default:
		t.Errorf("cold_cache_method = %v", method)
	}
	for k, v := range obj {
		if maybe[k] && v == nil || k == "restart_cache_state" || k == "cold_cache_method" ||
			k == "scenario_floor_pattern" || k == "scenario_shm_status" || k == "shm_dir" {
			continue
		}
		// A ratio to a limit is finite and positive, as is every figure.
		if f, ok := toFloat(v); !ok || !(f > 0) || math.IsInf(f, 0) {
			t.Errorf("%s = %v, want a finite positive number", k, v)
		}
	}
	ratio := func(r, fig, limit string) {
		checkRel(t, r, getNum(t, obj, r), getNum(t, obj, fig)/getNum(t, obj, limit), 1e-9)
	}
	ratio("cache_write_ratio", "cache_write_bytes_per_second", "raw_write_bytes_per_second")
	ratio("xor_encode_ratio", "xor_encode_bytes_per_second", "memcopy_bytes_per_second")
	ratio("rs_encode_ratio", "rs_encode_bytes_per_second", "memcopy_bytes_per_second")
	ratio("xor_encode_tcp_ratio", "xor_encode_tcp_bytes_per_second", "loopback_tcp_bytes_per_second")
	ratio("restart_ratio", "restart_bytes_per_second", "raw_read_bytes_per_second")
	ratio("rebuild_ratio", "rebuild_bytes_per_second", "raw_write_bytes_per_second")
	ratio("cache_write_fsync_ratio", "cache_write_bytes_per_second", "raw_write_fsync_bytes_per_second")
	ratio("restart_hot_ratio", "restart_hot_bytes_per_second", "raw_read_hot_bytes_per_second")
	// The write limit is the best of the patterns the run measured.
	best := 0.0
	for _, k := range []string{"raw_write_fsync_bytes_per_second", "raw_write_writeback_bytes_per_second", "raw_write_direct_bytes_per_second"} {
		if obj[k] != nil {
			best = max(best, getNum(t, obj, k))
		}
	}
	checkRel(t, "raw_write_bytes_per_second", getNum(t, obj, "raw_write_bytes_per_second"), best, 1e-9)
	// restart_ratio is the cold pair's where the cache could be emptied,
	// the hot pair's otherwise: both sides in one state.
	state := "hot"
	if method != "none" {
		state = "cold"
		ratio("restart_cold_ratio", "restart_cold_bytes_per_second", "raw_read_cold_bytes_per_second")
	}
	checkRel(t, "restart_bytes_per_second", getNum(t, obj, "restart_bytes_per_second"), getNum(t, obj, "restart_"+state+"_bytes_per_second"), 1e-9)
	checkRel(t, "raw_read_bytes_per_second", getNum(t, obj, "raw_read_bytes_per_second"), getNum(t, obj, "raw_read_"+state+"_bytes_per_second"), 1e-9)
	// The scenario's floors, measured in this run (/dev/shm is there on
	// Linux: its absence would be reported, and fail here).
	if obj["scenario_shm_status"] != "ok" || obj["shm_dir"] != "/dev/shm" {
		t.Errorf("scenario_shm_status = %v on %v, want ok on /dev/shm", obj["scenario_shm_status"], obj["shm_dir"])
	}
	if p := obj["scenario_floor_pattern"]; p != "fsync" && p != "writeback" && p != "O_DIRECT" {
		t.Errorf("scenario_floor_pattern = %v", p)
	}
	floor := func(r, ckpt, limit string) {
		checkRel(t, r, getNum(t, obj, r), getNum(t, obj, limit)/getNum(t, obj, ckpt), 1e-9)
	}
	floor("scenario_floor_ratio", "scenario_checkpoint_seconds", "scenario_floor_seconds")
	floor("scenario_shm_floor_ratio", "scenario_shm_checkpoint_seconds", "scenario_shm_floor_seconds")
	// 4 × (2 MiB of data + ceil(2 MiB / 3) of parity).
	if got := getNum(t, obj, "scenario_floor_bytes"); got != 4*(2<<20+699051) {
		t.Errorf("scenario_floor_bytes = %v, want %d", got, 4*(2<<20+699051))
	}
	if got := getNum(t, obj, "scenario_rank_bytes"); got != 2<<20 {
		t.Errorf("scenario_rank_bytes = %v, want %d", got, 2<<20)
	}
}

// TestBenchStoreNoShm: without the tmpfs asked for, bench store still
// measures the rest and says, loudly, that the scenario on tmpfs was not
// measured, and why.
func TestBenchStoreNoShm(t *testing.T) {
	if testing.Short() {
		t.Skip("writes tens of MiB")
	}
	missing := t.TempDir() + "/no-shm"
	code, stdout, stderr := runCLI(t, "bench", "store", "--dir", t.TempDir(), "--size", "2MiB", "--scenario-size", "1MiB", "--shm-dir", missing)
	if code != exitOK {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	for name, out := range map[string]string{"stdout": stdout, "stderr": stderr} {
		if !strings.Contains(out, "WARNING: "+missing+" does not exist") {
			t.Errorf("%s %q: no WARNING that %s does not exist", name, out, missing)
		}
	}
	if !strings.Contains(stdout, "caches on ") || strings.Contains(stdout, "(tmpfs)") {
		t.Errorf("stdout %q: want the disk's floor row and no tmpfs row", stdout)
	}
}

func TestBenchStoreBadInput(t *testing.T) {
	checkBadInput(t, []string{"--size", "1MiB"}, "bench", "store", "--size", "1KiB")
	checkBadInput(t, []string{"--scenario-size"}, "bench", "store", "--scenario-size", "10")
	checkBadInput(t, []string{"--dir", "/nonexistent/x"}, "bench", "store", "--dir", "/nonexistent/x")
}

func TestBenchCoordJSON(t *testing.T) {
	t.Setenv(asCkpt, "1") // the workers are this test binary
	code, stdout, stderr := runCLI(t, "bench", "coord", "--clients", "64", "--per-node", "8", "--json")
	if code != exitOK {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	obj := decodeOne(t, stdout)
	checkKeys(t, obj, []string{"clients", "per_node", "raw_seconds", "flat_seconds", "tree_seconds", "flat_ratio", "tree_ratio"}, nil)
	checkRel(t, "flat_ratio", getNum(t, obj, "flat_ratio"), getNum(t, obj, "flat_seconds")/getNum(t, obj, "raw_seconds"), 1e-9)
	checkRel(t, "tree_ratio", getNum(t, obj, "tree_ratio"), getNum(t, obj, "tree_seconds")/getNum(t, obj, "raw_seconds"), 1e-9)
	if getNum(t, obj, "clients") != 64 {
		t.Errorf("clients = %v", obj["clients"])
	}
}

func TestBenchOverheadJSON(t *testing.T) {
	code, stdout, stderr := runCLI(t, "bench", "overhead", "--ranks", "2", "--size", "xs", "--iterations", "40", "--trials", "1", "--json")
	if code != exitOK {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	obj := decodeOne(t, stdout)
	checkKeys(t, obj, []string{"off_seconds", "on_seconds", "overhead_ratio", "decision_rounds",
		"decision_seconds", "accounted_overhead_ratio", "ranks", "iterations",
		"bare_seconds", "bare_overhead_ratio", "off_bare_ratio"}, nil)
	checkRel(t, "overhead_ratio", getNum(t, obj, "overhead_ratio"), getNum(t, obj, "on_seconds")/getNum(t, obj, "off_seconds")-1, 1e-9)
	// The baseline is bare Himeno, measured: a positive time, and the
	// ratios to it are the runs' own.
	bare := getNum(t, obj, "bare_seconds")
	if !(bare > 0) || math.IsInf(bare, 0) {
		t.Fatalf("bare_seconds = %v, want a finite positive time", bare)
	}
	checkRel(t, "bare_overhead_ratio", getNum(t, obj, "bare_overhead_ratio"), getNum(t, obj, "on_seconds")/bare-1, 1e-9)
	checkRel(t, "off_bare_ratio", getNum(t, obj, "off_bare_ratio"), getNum(t, obj, "off_seconds")/bare-1, 1e-9)
	if getNum(t, obj, "decision_rounds") < 1 {
		t.Errorf("no decision round in a run with checkpointing on")
	}
	checkBadInput(t, []string{"--ranks"}, "bench", "overhead", "--ranks", "0")
	checkBadInput(t, []string{"--size"}, "bench", "overhead", "--size", "huge")
}

// TestBenchStageJSON runs `ckpt bench stage --quick`: every figure is
// there, throughputs are positive, and every ratio and the fitted slope
// come from the same run's numbers.
func TestBenchStageJSON(t *testing.T) {
	if testing.Short() {
		t.Skip("writes tens of MiB")
	}
	code, stdout, stderr := runCLI(t, "bench", "stage", "--quick", "--dir", t.TempDir(), "--json")
	if code != exitOK {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	for _, fig := range []string{"fig. 9", "fig. 10", "fig. 11"} {
		if !strings.Contains(stderr, fig) {
			t.Errorf("stderr %q shows no progress through %s", stderr, fig)
		}
	}
	obj := decodeOne(t, stdout)
	checkKeys(t, obj, []string{
		"raw_write_bytes_per_second", "stage_write_ratio", "writers", "servers", "alpha",
		"alpha_slope_per_gbps", "paper_alpha_slope_per_gbps", "alpha_at_paper_rate",
		"raw_write_fsync_bytes_per_second", "stage_write_fsync_ratio",
	}, []string{"raw_writers", "himeno_seconds", "himeno_iterations", "size_bytes", "ranks", "nodes", "server_writers"},
		"writers", "servers", "alpha", "raw_writers")
	raw := getNum(t, obj, "raw_write_bytes_per_second")
	if raw <= 0 {
		t.Fatalf("raw_write_bytes_per_second = %v", raw)
	}
	rows := func(key string, fields ...string) []map[string]any {
		t.Helper()
		list, ok := obj[key].([]any)
		if !ok || len(list) == 0 {
			t.Fatalf("%s = %v, want a non-empty list", key, obj[key])
		}
		var out []map[string]any
		for i, v := range list {
			row, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("%s[%d] = %v, want an object", key, i, v)
			}
			checkKeys(t, row, fields, nil)
			out = append(out, row)
		}
		return out
	}
	// Each raw writers' row is the best of its patterns, fsync and
	// writeback measured, O_DIRECT where the file system takes it (null
	// where not); the limit is the best row, the fsync-only limit the
	// best of that pattern.
	bestRaw, bestFsync := 0.0, 0.0
	for _, row := range rows("raw_writers", "writers", "bytes_per_second", "fsync_bytes_per_second", "writeback_bytes_per_second", "direct_bytes_per_second") {
		fs, wb := getNum(t, row, "fsync_bytes_per_second"), getNum(t, row, "writeback_bytes_per_second")
		if !(fs > 0) || !(wb > 0) {
			t.Errorf("raw_writers row %v: want both patterns measured", row)
		}
		want := max(fs, wb)
		if row["direct_bytes_per_second"] != nil {
			d := getNum(t, row, "direct_bytes_per_second")
			if !(d > 0) {
				t.Errorf("raw_writers row %v: O_DIRECT %v, want positive or null", row, d)
			}
			want = max(want, d)
		}
		checkRel(t, "raw_writers bytes_per_second", getNum(t, row, "bytes_per_second"), want, 1e-9)
		bestRaw = max(bestRaw, getNum(t, row, "bytes_per_second"))
		bestFsync = max(bestFsync, fs)
	}
	checkRel(t, "raw_write_bytes_per_second", raw, bestRaw, 1e-9)
	checkRel(t, "raw_write_fsync_bytes_per_second", getNum(t, obj, "raw_write_fsync_bytes_per_second"), bestFsync, 1e-9)
	best := 0.0
	for _, key := range []string{"writers", "servers"} {
		for _, row := range rows(key, key, "bytes_per_second", "ratio") {
			bps := getNum(t, row, "bytes_per_second")
			if bps <= 0 || getNum(t, row, key) < 1 {
				t.Errorf("%s row %v: want a positive throughput", key, row)
			}
			checkRel(t, key+" ratio", getNum(t, row, "ratio"), bps/raw, 1e-9)
			if key == "writers" {
				best = max(best, bps)
			}
		}
	}
	checkRel(t, "stage_write_ratio", getNum(t, obj, "stage_write_ratio"), best/raw, 1e-9)
	checkRel(t, "stage_write_fsync_ratio", getNum(t, obj, "stage_write_fsync_ratio"), best/bestFsync, 1e-9)
	if r := getNum(t, obj, "stage_write_ratio"); !(r > 0) || math.IsInf(r, 0) {
		t.Errorf("stage_write_ratio = %v, want finite and positive", r)
	}
	fastest := getNum(t, obj, "himeno_seconds")
	var xy, xx float64
	for _, row := range rows("alpha", "read_rate_bytes_per_second", "measured_read_bytes_per_second", "alpha", "seconds", "baseline_seconds") {
		x := getNum(t, row, "measured_read_bytes_per_second") / 1e9
		a := getNum(t, row, "alpha")
		if getNum(t, row, "read_rate_bytes_per_second") <= 0 || x < 0 {
			t.Errorf("alpha row %v: want a positive cap and a measured rate", row)
		}
		alone := getNum(t, row, "baseline_seconds")
		checkRel(t, "alpha", a+1, getNum(t, row, "seconds")/alone, 1e-9)
		if alone < fastest {
			t.Errorf("alpha row %v: alone faster than himeno_seconds %v, the fastest run alone", row, fastest)
		}
		xy += x * a
		xx += x * x
	}
	if xx == 0 {
		// On a busy machine a quick run can end before the staging server
		// read anything while it ran: no rate was measured, so there is no
		// slope, and the report must say so (null) rather than invent one.
		t.Logf("no staged read overlapped a run (a busy machine): the slope must be null")
		for _, key := range []string{"alpha_slope_per_gbps", "alpha_at_paper_rate"} {
			if obj[key] != nil {
				t.Errorf("%s = %v with no measured read rate, want null", key, obj[key])
			}
		}
	} else {
		c := getNum(t, obj, "alpha_slope_per_gbps")
		checkRel(t, "alpha_slope_per_gbps", c, xy/xx, 1e-9)
		checkRel(t, "alpha_at_paper_rate", getNum(t, obj, "alpha_at_paper_rate"), c*0.2095, 1e-9)
	}
	if getNum(t, obj, "paper_alpha_slope_per_gbps") != 0.008768 {
		t.Errorf("paper_alpha_slope_per_gbps = %v", obj["paper_alpha_slope_per_gbps"])
	}
	checkBadInput(t, []string{"--size", "1MiB"}, "bench", "stage", "--size", "1KiB")
	checkBadInput(t, []string{"--dir", "/nonexistent/x"}, "bench", "stage", "--dir", "/nonexistent/x")
}
