package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/criu"
	"github.com/ckpt/ckpt/internal/criu/criutest"
	"github.com/ckpt/ckpt/internal/launch"
	"github.com/ckpt/ckpt/internal/policy"
)

// buildStencil compiles testdata/stencil.c, as ckpt demo --transparent
// does.
func buildStencil(t *testing.T) string {
	t.Helper()
	bin, err := buildDemoStencil(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// programOutput is what program prints run alone, without failures (its
// gate open).
func programOutput(t *testing.T, program string, args func(gate string) []string) string {
	t.Helper()
	gate := filepath.Join(t.TempDir(), "open-gate")
	os.WriteFile(gate, nil, 0o600)
	out, err := exec.Command(program, args(gate)...).Output()
	if err != nil {
		t.Fatalf("%s alone: %v", program, err)
	}
	return string(out)
}

// transparentTestJob is a job of ckpt run --transparent over the test
// binary: ranks ranks on as many nodes, XOR across them, a checkpoint
// every 40 of the supervisors' steps (2s of the programs' run between two
// checkpoints, however long a checkpoint takes), the caches kept for the
// test to look at. args gives the program's arguments with its gate file,
// closed.
//
// The interval is what bounds the tests' work: the dumps of a host's
// ranks run one at a time, and beside a CPU hog each takes seconds, so an
// interval short against them would have the job checkpoint back to back
// and the programs barely move.
func transparentTestJob(t *testing.T, ranks int, program string, args func(gate string) []string) (runSpec, string, *bytes.Buffer) {
	t.Helper()
	t.Setenv(criu.EnvVar, criutest.Path(t))
	t.Setenv(asCkpt, "1")
	p, err := policy.Parse("40steps")
	if err != nil {
		t.Fatal(err)
	}
	gate := filepath.Join(t.TempDir(), "gate")
	var log bytes.Buffer
	w := &syncWriter{b: &log}
	spec := runSpec{ranks: ranks, nodes: ranks, program: program, args: args(gate), redundancy: fmt.Sprintf("xor:%d", ranks),
		interval: p, cacheRoot: filepath.Join(t.TempDir(), "job"), retries: 4,
		heartbeat: 20 * time.Second, output: w, progress: w, keepCache: true}
	spec, err = transparentSpec(spec, false)
	if err != nil {
		t.Fatal(err)
	}
	return spec, gate, &log
}

// launchTransparent runs spec once; mod scripts its failures. Its
// deadline only bounds a hang: what the job does is bounded by the
// programs' gates and the interval in steps, not by the clock.
func launchTransparent(t *testing.T, spec runSpec, log *bytes.Buffer, mod func(*launch.Config, *launch.Coordinators)) runResult {
	t.Helper()
	return launchScripted(t, spec, log, mod, 15*time.Minute)
}

// openGateOnRestore opens the gate once a relaunch has restored the job.
func openGateOnRestore(c *launch.Config, gate string) {
	prev := c.Event
	var once sync.Once
	c.Event = func(e launch.Event) {
		prev(e)
		if e.Kind == "restored" && e.Incarnation > 0 {
			once.Do(func() { os.WriteFile(gate, nil, 0o600) })
		}
	}
}

// checkOutputs compares every rank's output with want.
func checkOutputs(t *testing.T, spec runSpec, want string, log *bytes.Buffer) {
	t.Helper()
	for r := range spec.ranks {
		out, _ := rankOutputs(transparentDir(spec.cacheRoot), r)
		got, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Errorf("rank %d printed:\n%s\nwant the failure-free:\n%s\n%s", r, got, want, log)
		}
	}
}

// TestTransparentNodeLoss loses a node, its rank and its cache, between
// checkpoints of a job of 3 unmodified programs (a shell loop that forks
// children at every step): the relaunch rebuilds the lost rank's images
// from XOR parity and restores every tree; each prints what it prints
// without failures. The programs wait at their gate until the relaunch
// has restored them, so the failure lands after the checkpoints it needs
// however slow the machine, and only the last third of their work runs
// after it. (ckpt demo --transparent, TestDemoTransparent, runs 4 ranks
// over 4 nodes.)
func TestTransparentNodeLoss(t *testing.T) {
	args := func(gate string) []string { return []string{"-c", criutest.ForkingProgram, "sh", gate} }
	spec, gate, log := transparentTestJob(t, 3, "/bin/sh", args)
	want := programOutput(t, "/bin/sh", args)
	res := launchTransparent(t, spec, log, func(c *launch.Config, coords *launch.Coordinators) {
		injectAfter(c, coords, 1)
		c.NodeFailures = true
		openGateOnRestore(c, gate)
	})
	if res.Injected != 1 || res.Restarts["rebuild"] != 1 || len(res.Attempts) != 2 {
		t.Errorf("injected %d, restarts %v, attempts %d; want one node lost and one restart rebuilding it\n%s",
			res.Injected, res.Restarts, len(res.Attempts), log)
	}
	checkOutputs(t, spec, want, log)
	if res.Result != lastLine(filepath.Join(transparentDir(spec.cacheRoot), "output", "rank-0.out")) || !strings.HasPrefix(res.Result, "final ") {
		t.Errorf("result %q: want rank 0's last line", res.Result)
	}
}

// TestTransparentCorruptImage corrupts one byte of a rank's image in the
// newest checkpoint while the job is halted: the restart finds it by its
// hash before anything is restored, and restores from another source (the
// rank's images rebuilt from parity, or an older checkpoint).
func TestTransparentCorruptImage(t *testing.T) {
	stencil := buildStencil(t)
	args := func(gate string) []string { return []string{gate, "20000", "200"} }
	spec, gate, log := transparentTestJob(t, 3, stencil, args)
	want := programOutput(t, stencil, args)
	stop := make(chan struct{})
	res := launchTransparent(t, spec, log, func(c *launch.Config, coords *launch.Coordinators) {
		c.Stop = stop
		afterCommits(coords, 2, func() { close(stop) })
	})
	if !res.Halted {
		t.Fatalf("the job did not halt: %+v\n%s", res.Outcome, log)
	}
	name, path := newestImage(t, spec.cacheRoot, 1)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(gate, nil, 0o600)
	log.Reset()
	res = launchTransparent(t, spec, log, nil)
	if res.Result == "" || !strings.Contains(log.String(), "restored") || strings.Contains(log.String(), "restored "+name+" from cache") {
		t.Errorf("want the corrupted %s passed over (rebuilt or an older one)\n%s", name, log)
	}
	checkOutputs(t, spec, want, log)
}

// newestImage finds rank's largest image file (its memory pages) in the
// newest checkpoint of the job's caches.
func newestImage(t *testing.T, root string, rank int) (name, path string) {
	t.Helper()
	type image struct {
		ckpt, path string
		size       int64
	}
	var imgs []image
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".img") || filepath.Base(filepath.Dir(p)) != fmt.Sprintf("rank-%d", rank) {
			return nil
		}
		fi, _ := d.Info()
		imgs = append(imgs, image{filepath.Base(filepath.Dir(filepath.Dir(p))), p, fi.Size()})
		return nil
	})
	if len(imgs) == 0 {
		t.Fatalf("no image of rank %d under %s", rank, root)
	}
	sort.Slice(imgs, func(i, j int) bool {
		if imgs[i].ckpt != imgs[j].ckpt {
			return imgs[i].ckpt > imgs[j].ckpt
		}
		return imgs[i].size > imgs[j].size
	})
	return imgs[0].ckpt, imgs[0].path
}

// TestTransparentWithoutCRIU: no CRIU, or one too old, is a clear error
// before anything starts, exit status 2.
func TestTransparentWithoutCRIU(t *testing.T) {
	old := filepath.Join(t.TempDir(), "criu")
	if err := os.WriteFile(old, []byte("#!/bin/sh\necho 'Version: 3.17.1'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ criu, want string }{
		{filepath.Join(t.TempDir(), "no-criu"), "criu"},
		{old, "3.17.1"},
	} {
		t.Setenv(criu.EnvVar, c.criu)
		var out, errb bytes.Buffer
		code := run([]string{"run", "--transparent", "-n", "1", "--cache-root", filepath.Join(t.TempDir(), "job"), "--", "/bin/true"}, &out, &errb)
		if code != exitUsage || !strings.Contains(errb.String(), "transparent checkpointing is unavailable") || !strings.Contains(errb.String(), c.want) {
			t.Errorf("CKPT_CRIU=%s: exit %d, stderr %q; want 2 and what is missing (%s)", c.criu, code, errb.String(), c.want)
		}
	}
}

// TestDemoTransparent runs ckpt demo --transparent --json: the C stencil
// on 4 ranks over 4 nodes with node failures; every rank's output must
// be the failure-free one, and the contract's keys are there.
func TestDemoTransparent(t *testing.T) {
	t.Setenv(criu.EnvVar, criutest.Path(t))
	t.Setenv(asCkpt, "1")
	var out, errb bytes.Buffer
	code := run([]string{"demo", "--transparent", "--json", "--seed", "2"}, &out, &errb)
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out.String(), errb.String())
	}
	var rep map[string]any
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if rep["result_matches_reference"] != true || rep["result"] != rep["reference_result"] {
		t.Errorf("report %v\n%s", rep, errb.String())
	}
	for _, k := range []string{"failures_injected", "restarts_from_rebuild", "criu_version", "image_bytes", "dump_seconds", "restore_seconds"} {
		if _, ok := rep[k]; !ok {
			t.Errorf("no %q in %v", k, rep)
		}
	}
	n, _ := rep["image_bytes"].(float64)
	if n <= 0 {
		t.Errorf("image_bytes %v: want the images' size", rep["image_bytes"])
	}
	// The stencil's pages are mostly zeros: zstd pays on them.
	if z, _ := rep["image_stored_bytes"].(float64); z <= 0 || z >= n || rep["image_compressed_files"].(float64) < 1 {
		t.Errorf("images stored in %v bytes of %v, %v files compressed: want the pages compressed", rep["image_stored_bytes"], n, rep["image_compressed_files"])
	}
}
