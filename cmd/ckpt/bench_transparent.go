package main

import (
	"fmt"
	"os"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/ckpt/ckpt/internal/bench"
	"github.com/ckpt/ckpt/internal/criu"
	"github.com/ckpt/ckpt/internal/units"
)

// holderCmd is the hidden command that is the program ckpt bench
// transparent checkpoints.
const holderCmd = "transparent-holder"

func newBenchTransparentCmd() *cobra.Command {
	c := leaf("transparent [--size B] [--dir DIR] [--json]", "Transparent checkpoint and restore after a node loss, as ratios to CRIU's own dump and restore (issue 19)", benchTransparentLong, "  sudo -E ckpt bench transparent --size 1GiB --json")
	f := &benchTransparentFlags{}
	f.size = sizeFlag(c.Flags(), "size", "random data each rank's program holds (default 1GiB)")
	f.dir = c.Flags().String("dir", os.TempDir(), "directory on the disk to measure: node caches, scratch, CRIU's images (about 3 × 4 × B free)")
	f.asJSON = jsonFlag(c)
	return runs(c, f)
}

// benchTransparentFlags are the flags of the command newBenchTransparentCmd
// builds.
type benchTransparentFlags struct {
	size   *quantity
	dir    *string
	asJSON *bool
}

func (f *benchTransparentFlags) run(c *cobra.Command) error {
	cfg := bench.TransparentConfig{Dir: *f.dir, Size: 1 << 30}
	if err := benchSize(&cfg.Size, f.size, "size"); err != nil {
		return err
	}
	if err := benchDir(cfg.Dir); err != nil {
		return err
	}
	info, err := checkCRIU(c.Context())
	if err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	cfg.CRIU = criu.CLI{Path: info.Path}
	cfg.Holder = func(size int64) []string {
		return []string{exe, "bench", holderCmd, "--bytes", strconv.FormatInt(size, 10)}
	}
	cfg.Progress = benchProgress(c)
	r, err := bench.RunTransparent(c.Context(), cfg)
	if err != nil {
		return err
	}
	w := c.OutOrStdout()
	if *f.asJSON {
		return writeJSON(w, object{
			{"checkpoint_seconds", num(r.Checkpoint)},
			{"criu_dump_seconds", num(r.CRIUDump)},
			{"checkpoint_ratio", num(r.CheckpointRatio)},
			{"restore_after_loss_seconds", num(r.RestoreAfterLoss)},
			{"criu_restore_seconds", num(r.CRIURestore)},
			{"restore_ratio", num(r.RestoreRatio)},
			{"size_bytes", cfg.Size},
			{"ranks", bench.TransparentRanks},
			{"redundancy", fmt.Sprintf("xor:%d", bench.TransparentRanks)},
			{"checkpoint_dump_seconds", num(r.SupervisorDump)},
			{"image_bytes", r.ImageBytes},
			{"image_stored_bytes", r.StoredBytes},
			{"image_compressed_files", r.CompressedFiles},
			{"restore_source", r.RestoreSource},
			{"criu_version", info.Version.String()},
		})
	}
	fmt.Fprintf(w, "%d ranks over %d nodes, each an unmodified program holding %s of random data; XOR across the %d, caches synced\n",
		bench.TransparentRanks, bench.TransparentRanks, units.FormatSize(float64(cfg.Size)), bench.TransparentRanks)
	t := newTable(w)
	t.row("", "CKPT", "CRIU ALONE", "RATIO", "GOAL")
	t.row("checkpoint", sec(r.Checkpoint), sec(r.CRIUDump), fmt.Sprintf("%.2f", r.CheckpointRatio), "≤ 1.3")
	t.row("restore after a node loss", sec(r.RestoreAfterLoss), sec(r.CRIURestore), fmt.Sprintf("%.2f", r.RestoreRatio), "≤ 2")
	if err := t.flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nof the checkpoint, CRIU's dumps took %s; images %s, stored in %s (zstd on %d files)\n",
		sec(r.SupervisorDump), units.FormatSize(float64(r.ImageBytes)), units.FormatSize(float64(r.StoredBytes)), r.CompressedFiles)
	fmt.Fprintf(w, "the restart found its checkpoint by %s (ranks %v rebuilt from parity); CRIU %s (%s)\n",
		r.RestoreSource, r.Rebuilt, info.Version, info.Path)
	return nil
}

const benchTransparentLong = `Measures issue 19's two goals for transparent checkpointing (ckpt run
--transparent), each as a ratio to CRIU doing the same work alone in the
same run.

The job: 4 ranks over 4 simulated nodes (a node cache each, a directory
of DIR, synced: a checkpoint survives its node's crash), XOR across the 4,
each rank an unmodified program (this binary's hidden command
` + holderCmd + `) holding SIZE of random data: incompressible, so the
images are stored as CRIU wrote them.

  criu_dump_seconds           CRIU alone dumps the 4 programs (stopped, left
                              running: the request ckpt makes), one after
                              another as ckpt's dumps on one host are, into
                              a plain directory, not synced.
  checkpoint_seconds          ckpt's checkpoint of the same job: freeze every
                              program, CRIU's dumps, resume, the images
                              copied into the node caches with their
                              hashes, XOR parity across the nodes, synced,
                              the manifest written last.
  checkpoint_ratio            checkpoint_seconds / criu_dump_seconds
                              (goal: at most 1.3, protection included).
  criu_restore_seconds        CRIU alone restores the 4 programs from the
                              intact images of its own dumps.
  restore_after_loss_seconds  node 1 is lost with its cache; a new launch
                              rebuilds its images from parity, verifies every
                              byte against its hash, and restores every
                              rank's program.
  restore_ratio               restore_after_loss_seconds / criu_restore_seconds
                              (goal: at most 2).

The seconds are the whole job's: on one machine the 4 nodes share its disk
and cores, on both sides of each ratio alike. Also printed: size_bytes,
ranks, redundancy, checkpoint_dump_seconds (CRIU's dumps within the
checkpoint), image_bytes and image_stored_bytes (all ranks), image_compressed_files,
restore_source ("rebuild") and criu_version.

Needs a working CRIU, 4.1 or newer (CKPT_CRIU, else criu in PATH;
scripts/criu.sh provides one), and root; without them the command says
what is missing and exits with status 2, as ckpt run --transparent does.
DIR needs about 3 × 4 × SIZE free, the machine 4 × SIZE of memory;
everything written is removed. See docs/TRANSPARENT.md and
docs/PERFORMANCE.md.`

// newBenchTransparentHolderCmd is the program bench transparent
// checkpoints.
func newBenchTransparentHolderCmd() *cobra.Command {
	c := leaf(holderCmd+" --bytes N", "Hold N bytes of random data until killed (the program of bench transparent)", "", "")
	c.Hidden = true
	n := c.Flags().Int64("bytes", 0, "bytes of random data")
	c.RunE = func(c *cobra.Command, _ []string) error {
		if *n <= 0 {
			return usagef("--bytes %d: want a positive size", *n)
		}
		return bench.HoldRandom(*n, c.OutOrStdout())
	}
	return c
}
