package main

import (
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
	}, nil)
	for k, v := range obj {
		if f, ok := toFloat(v); !ok || f <= 0 {
			t.Errorf("%s = %v, want a positive number", k, v)
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
	if got := getNum(t, obj, "scenario_rank_bytes"); got != 2<<20 {
		t.Errorf("scenario_rank_bytes = %v, want %d", got, 2<<20)
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
		"decision_seconds", "accounted_overhead_ratio", "ranks", "iterations"}, nil)
	checkRel(t, "overhead_ratio", getNum(t, obj, "overhead_ratio"), getNum(t, obj, "on_seconds")/getNum(t, obj, "off_seconds")-1, 1e-9)
	if getNum(t, obj, "decision_rounds") < 1 {
		t.Errorf("no decision round in a run with checkpointing on")
	}
	checkBadInput(t, []string{"--ranks"}, "bench", "overhead", "--ranks", "0")
	checkBadInput(t, []string{"--size"}, "bench", "overhead", "--size", "huge")
}
