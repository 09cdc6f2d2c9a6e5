package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/internal/criu"
	"github.com/ckpt/ckpt/internal/criu/criutest"
)

// TestBenchTransparentJSON runs `ckpt bench transparent` at a small size
// with a real CRIU: the contract's keys are there, every figure is
// measured, each ratio is its two seconds' quotient, and the restart
// rebuilt the lost node from parity.
func TestBenchTransparentJSON(t *testing.T) {
	t.Setenv(criu.EnvVar, criutest.Path(t))
	t.Setenv(asCkpt, "1") // the programs are this test binary
	code, stdout, stderr := runCLI(t, "bench", "transparent", "--size", "16MiB", "--dir", t.TempDir(), "--json")
	if code != exitOK {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if !strings.Contains(stderr, "node 1 lost") {
		t.Errorf("stderr %q shows no progress through the node loss", stderr)
	}
	obj := decodeOne(t, stdout)
	checkKeys(t, obj, []string{
		"checkpoint_seconds", "criu_dump_seconds", "checkpoint_ratio",
		"restore_after_loss_seconds", "criu_restore_seconds", "restore_ratio",
		"size_bytes", "ranks", "redundancy", "checkpoint_dump_seconds",
		"image_bytes", "image_stored_bytes", "image_compressed_files",
		"restore_source", "criu_version",
	}, nil, "redundancy", "restore_source", "criu_version")
	for _, k := range []string{"checkpoint_seconds", "criu_dump_seconds", "checkpoint_ratio",
		"restore_after_loss_seconds", "criu_restore_seconds", "restore_ratio", "checkpoint_dump_seconds"} {
		if v := getNum(t, obj, k); !(v > 0) {
			t.Errorf("%s = %v, want a positive figure", k, v)
		}
	}
	checkRel(t, "checkpoint_ratio", getNum(t, obj, "checkpoint_ratio"),
		getNum(t, obj, "checkpoint_seconds")/getNum(t, obj, "criu_dump_seconds"), 1e-9)
	checkRel(t, "restore_ratio", getNum(t, obj, "restore_ratio"),
		getNum(t, obj, "restore_after_loss_seconds")/getNum(t, obj, "criu_restore_seconds"), 1e-9)
	// CRIU's dumps are part of the checkpoint.
	if d, c := getNum(t, obj, "checkpoint_dump_seconds"), getNum(t, obj, "checkpoint_seconds"); d >= c {
		t.Errorf("checkpoint_dump_seconds %v ≥ checkpoint_seconds %v: the dumps are within the checkpoint", d, c)
	}
	if obj["restore_source"] != "rebuild" || obj["redundancy"] != "xor:4" || getNum(t, obj, "ranks") != 4 {
		t.Errorf("restore_source %v, redundancy %v, ranks %v: want a rebuild from XOR across 4", obj["restore_source"], obj["redundancy"], obj["ranks"])
	}
	// Each of the 4 programs holds its 16 MiB, random: the images hold it
	// all, and zstd does not shrink it.
	size := getNum(t, obj, "size_bytes")
	if img := getNum(t, obj, "image_bytes"); size != 16<<20 || img < 4*size {
		t.Errorf("image_bytes %v for 4 programs of %v bytes: want at least their data", img, size)
	}
	if st := getNum(t, obj, "image_stored_bytes"); st < 4*size {
		t.Errorf("image_stored_bytes %v: random data cannot shrink below its %v bytes", st, 4*size)
	}
}

// TestBenchTransparentWithoutCRIU: no CRIU is a clear error, exit status
// 2, before anything runs; so is a size below 1MiB.
func TestBenchTransparentWithoutCRIU(t *testing.T) {
	t.Setenv(criu.EnvVar, filepath.Join(t.TempDir(), "no-criu"))
	code, stdout, stderr := runCLI(t, "bench", "transparent", "--size", "16MiB", "--dir", t.TempDir(), "--json")
	if code != exitUsage || stdout != "" || !strings.Contains(stderr, "transparent checkpointing is unavailable: criu") {
		t.Errorf("exit %d, stdout %q, stderr %q; want 2 and the missing CRIU named", code, stdout, stderr)
	}
	checkBadInput(t, []string{"--size"}, "bench", "transparent", "--size", "1KiB")
}
