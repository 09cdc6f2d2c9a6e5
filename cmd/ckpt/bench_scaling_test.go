package main

import (
	"math"
	"strings"
	"testing"
)

// scalingRowKeys are the keys of each row of `ckpt bench scaling --json`,
// as its --help documents them.
var scalingRowKeys = []string{"ranks", "set_size", "rank_bytes", "data_bytes", "checkpoint_bytes",
	"checkpoint_seconds", "checkpoint_floor_seconds", "checkpoint_ratio",
	"flush_seconds", "flush_floor_seconds", "flush_ratio",
	"restart_seconds", "restart_floor_seconds", "restart_ratio"}

// scalingRowText are the non-numeric keys of a row.
var scalingRowText = []string{"sweep", "checkpoint_floor_pattern", "flush_floor_pattern", "restart_floor_pattern"}

// TestBenchScalingJSON runs the scaling table at 1 MiB per rank: one row
// per point of each sweep, ranks sweep first, every key there and
// documented in --help, every time and ratio finite and positive, and
// progress on stderr.
func TestBenchScalingJSON(t *testing.T) {
	code, stdout, stderr := runCLI(t, "bench", "scaling", "--dir", t.TempDir(), "--ranks", "2,4", "--rank-size", "1MiB",
		"--sizes", "1MiB,2MiB", "--size-ranks", "2", "--rounds", "1", "--json")
	if code != exitOK {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	obj := decodeOne(t, stdout)
	checkKeys(t, obj, []string{"rounds"}, []string{"dir", "cache", "load_average", "rows"})
	rows, ok := obj["rows"].([]any)
	if !ok || len(rows) != 4 {
		t.Fatalf("rows = %v, want 4", obj["rows"])
	}
	want := []struct {
		sweep        string
		ranks, bytes float64
	}{{"ranks", 2, 1 << 20}, {"ranks", 4, 1 << 20}, {"size", 2, 1 << 20}, {"size", 2, 2 << 20}}
	for i, w := range want {
		row := rows[i].(map[string]any)
		checkKeys(t, row, scalingRowKeys, scalingRowText, scalingRowText...)
		if row["sweep"] != w.sweep || getNum(t, row, "ranks") != w.ranks || getNum(t, row, "rank_bytes") != w.bytes {
			t.Errorf("row %d = %v, want %s at %v ranks × %v", i, row, w.sweep, w.ranks, w.bytes)
		}
		for _, k := range scalingRowKeys {
			if v := getNum(t, row, k); !(v > 0) || math.IsInf(v, 0) {
				t.Errorf("row %d: %s = %v", i, k, v)
			}
		}
	}
	if !strings.Contains(stderr, "point 3 of 3, 2 ranks") {
		t.Errorf("stderr %q: want the progress of 3 points", stderr)
	}
	_, help, _ := runCLI(t, "bench", "scaling", "--help")
	for _, k := range append(append([]string{"load_average", "rows"}, scalingRowKeys...), scalingRowText...) {
		if !strings.Contains(help, k) {
			t.Errorf("--help does not document %s", k)
		}
	}
}

// The text table has a row per point under its header.
func TestBenchScalingText(t *testing.T) {
	code, stdout, stderr := runCLI(t, "bench", "scaling", "--dir", t.TempDir(), "--ranks", "2", "--rank-size", "1MiB",
		"--sizes", "1MiB", "--size-ranks", "3", "--rounds", "1")
	if code != exitOK {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[2], "SWEEP") || !strings.HasPrefix(lines[3], "ranks  2") || !strings.HasPrefix(lines[4], "size   3") {
		t.Errorf("stdout %q: want a header and a row each for 2 ranks and 3", stdout)
	}
}

// Bad input is refused before anything is measured, naming the value.
func TestBenchScalingBadInput(t *testing.T) {
	checkBadInput(t, []string{"--ranks 6"}, "bench", "scaling", "--ranks", "4,6")
	checkBadInput(t, []string{"--ranks 1"}, "bench", "scaling", "--ranks", "1")
	checkBadInput(t, []string{"--ranks", "x"}, "bench", "scaling", "--ranks", "4,x")
	checkBadInput(t, []string{"--size-ranks 5"}, "bench", "scaling", "--size-ranks", "5")
	checkBadInput(t, []string{"--sizes: element 2 (524 kB)"}, "bench", "scaling", "--sizes", "64MiB,512KiB")
	checkBadInput(t, []string{"--sizes", "lots"}, "bench", "scaling", "--sizes", "64MiB,lots")
	checkBadInput(t, []string{"--rank-size"}, "bench", "scaling", "--rank-size", "1KiB")
	checkBadInput(t, []string{"--rounds 0"}, "bench", "scaling", "--rounds", "0")
	checkBadInput(t, []string{"--dir"}, "bench", "scaling", "--dir", "/nonexistent/x")
	checkBadInput(t, []string{"--scaling-ranks 7"}, "bench", "all", "--scaling-ranks", "4,7")
	checkBadInput(t, []string{"--scaling-sizes: element 1"}, "bench", "all", "--scaling-sizes", "1KiB")
	checkBadInput(t, []string{"--compress-himeno"}, "bench", "all", "--compress-himeno", "huge")
}
