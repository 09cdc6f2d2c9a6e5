package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ckpt/ckpt/internal/inject"
	"github.com/ckpt/ckpt/internal/policy"
)

// stencilSource is the unmodified program of ckpt demo --transparent (and
// of the transparent tests): a C stencil that prints checksums.
//
//go:embed testdata/stencil.c
var stencilSource []byte

// The demo's stencil: 2^16 cells, 1500 steps of 2 ms at least (a few
// seconds, long enough for failures at the demo's MTTI to land).
var demoStencilArgs = []string{"-", "65536", "1500", "2000"}

// demoTransparent is ckpt demo --transparent: the C stencil, compiled
// here, run alone for its reference output, then as 4 unmodified ranks
// over 4 nodes with XOR across them while whole nodes fail, checkpointed
// with CRIU; every rank's output must be the reference's.
func demoTransparent(c *cobra.Command, m float64, seed uint64, asJSON bool) error {
	ctx := c.Context()
	progress := c.ErrOrStderr()
	info, err := checkCRIU(ctx)
	if err != nil {
		return err
	}
	root, err := os.MkdirTemp("", "ckpt-demo-transparent-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	prog, err := buildDemoStencil(ctx, root)
	if err != nil {
		return err
	}
	fmt.Fprintf(progress, "ckpt demo --transparent: an unmodified C stencil (%s) on 4 ranks over 4 nodes, XOR across the 4,\n", strings.Join(demoStencilArgs[1:], " "))
	fmt.Fprintf(progress, "checkpointed with CRIU %s while whole nodes fail at random (mean %gs apart, seed %d)\n", info.Version, m, seed)
	ref, err := exec.CommandContext(ctx, prog, demoStencilArgs...).Output()
	if err != nil {
		return fmt.Errorf("the reference run of the stencil: %w", err)
	}
	p, err := policy.Parse(fmt.Sprintf("auto:%gs", m))
	if err != nil {
		return err
	}
	cfg, err := inject.ParseFlags(fmt.Sprintf("%gs", m), "exp", "node", seed)
	if err != nil {
		return err
	}
	spec := runSpec{ranks: 4, nodes: 4, program: prog, args: demoStencilArgs, redundancy: "xor:4", interval: p,
		retries: 20, heartbeat: 10 * time.Second, inject: &cfg, cacheRoot: filepath.Join(root, "job"), keepCache: true,
		output: io.Discard, progress: progress}
	if spec, err = transparentSpec(spec, false); err != nil {
		return err
	}
	start := time.Now()
	res, err := spec.run(ctx)
	secs := time.Since(start).Seconds()
	if err != nil {
		return fmt.Errorf("the run with failures: %w", err)
	}
	dir := transparentDir(spec.cacheRoot)
	match := true
	var st rankStats
	var restore float64
	for r := range spec.ranks {
		out, _ := rankOutputs(dir, r)
		got, err := os.ReadFile(out)
		match = match && err == nil && string(got) == string(ref)
		var rs rankStats
		if b, err := os.ReadFile(rankStatsPath(dir, r)); err == nil && json.Unmarshal(b, &rs) == nil {
			st.Checkpoints += rs.Checkpoints
			st.DumpSeconds += rs.DumpSeconds
			st.ImageBytes += rs.ImageBytes
			st.StoredBytes += rs.StoredBytes
			st.CompressedFiles += rs.CompressedFiles
			restore = max(restore, rs.RestoreSeconds)
		}
	}
	dump := 0.0
	if st.Checkpoints > 0 {
		dump = st.DumpSeconds / float64(st.Checkpoints)
	}
	refResult := lastLineOf(string(ref))
	if asJSON {
		err = writeJSON(c.OutOrStdout(), object{
			{"result_matches_reference", match},
			{"failures_injected", res.Injected},
			{"restarts_from_cache", res.Restarts["cache"]},
			{"restarts_from_rebuild", res.Restarts["rebuild"]},
			{"restarts_from_shared", res.Restarts["shared"]},
			{"restarts_from_scratch", res.Restarts["none"]},
			{"attempts", len(res.Attempts)},
			{"run_seconds", num(secs)},
			{"checkpoint_seconds", num(res.Policy.Cost.Seconds())},
			{"result", res.Result},
			{"reference_result", refResult},
			{"criu_version", info.Version.String()},
			{"image_bytes", st.ImageBytes},
			{"image_stored_bytes", st.StoredBytes},
			{"image_compressed_files", st.CompressedFiles},
			{"dump_seconds", num(dump)},
			{"restore_seconds", num(restore)},
		})
	} else {
		t := newTable(c.OutOrStdout())
		t.row("failures injected", fmt.Sprint(res.Injected))
		t.row("restarts", fmt.Sprintf("from cache %d, rebuilt from parity %d, from the shared tier %d, from scratch %d",
			res.Restarts["cache"], res.Restarts["rebuild"], res.Restarts["shared"], res.Restarts["none"]))
		t.row("time", sec(secs), fmt.Sprintf("(%d attempts)", len(res.Attempts)))
		t.row("CRIU", info.Version.String(), info.Path)
		t.row("images", fmt.Sprintf("%d bytes over the 4 ranks at the last checkpoint", st.ImageBytes),
			fmt.Sprintf("(stored in %d: zstd on %d files, where it paid)", st.StoredBytes, st.CompressedFiles))
		t.row("dump", sec(dump), "(CRIU's dump of one rank, mean, last attempt)")
		t.row("restore", sec(restore), "(the slowest rank's restore in the last attempt, images fetched and verified)")
		t.row("checkpoint cost", sec(res.Policy.Cost.Seconds()), "(measured: freeze, dump, copy, commit)")
		t.row("result", res.Result)
		t.row("reference", refResult)
		verdict := "every rank's output identical to the failure-free run"
		if !match {
			verdict = "DIFFERENT from the failure-free run"
		}
		t.row("verdict", verdict)
		err = t.flush()
	}
	if err != nil {
		return err
	}
	if !match {
		return fmt.Errorf("%w: a rank's output with failures differs from the reference", errNotRecoverable)
	}
	return nil
}

// buildDemoStencil compiles the stencil with the C compiler on PATH.
func buildDemoStencil(ctx context.Context, dir string) (string, error) {
	cc := "cc"
	if _, err := exec.LookPath(cc); err != nil {
		cc = "gcc"
	}
	src := filepath.Join(dir, "stencil.c")
	if err := os.WriteFile(src, stencilSource, 0o600); err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "stencil")
	if out, err := exec.CommandContext(ctx, cc, "-O2", "-o", bin, src).CombinedOutput(); err != nil {
		return "", usagef("--transparent: compiling the demo's C stencil with %s: %v: %s", cc, err, strings.TrimSpace(string(out)))
	}
	return bin, nil
}

// lastLineOf is the last non-empty line of s.
func lastLineOf(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
