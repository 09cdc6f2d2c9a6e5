package bench

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/ckpt/ckpt/internal/criu"
	"github.com/ckpt/ckpt/internal/engine"
	"github.com/ckpt/ckpt/internal/localcomm"
	"github.com/ckpt/ckpt/internal/storage/local"
	"github.com/ckpt/ckpt/internal/transparent"
)

// `ckpt bench transparent` measures a transparent checkpoint (issue 19's
// goals) against CRIU's own dump and restore of the same program, in the
// same run:
//
//   - a job of TransparentRanks ranks on as many simulated nodes (a cache
//     directory each, synced: a checkpoint survives its node's crash), XOR
//     across them, each rank an unmodified program holding Size bytes of
//     random data (incompressible: zstd does not pay, the images are
//     stored as CRIU wrote them);
//   - criu dump: CRIU alone dumps the same programs (started the same way,
//     stopped, the request the supervisor makes), one after another as a
//     host's dumps are (criu.CLI's lock), into a plain directory;
//   - checkpoint: the supervisors (transparent.Run, the code of ckpt run
//     --transparent) take one checkpoint: freeze all, dump each, resume,
//     copy the images into the node caches with their hashes, XOR parity
//     across the nodes, commit with the manifest written last;
//   - criu restore: CRIU alone restores each program from the images of
//     its own dump, intact;
//   - restore after loss: one node's cache is deleted (the node lost), and
//     the supervisors of a new launch restart: the engine rebuilds the
//     lost rank's images from parity and verifies every byte, and every
//     rank's program is restored from the checkpoint.
//
// Both sides do the same work per rank, so the ratios are what one node of
// a real job would see, up to the sharing of this machine's disk and cores
// by the simulated nodes.

// TransparentRanks is the job's ranks and nodes, one rank per node: XOR
// across the 4, as the goal says.
const TransparentRanks = 4

// HolderReady is the line the holder prints once its data is in memory.
const HolderReady = "ready"

// TransparentConfig is what `ckpt bench transparent` measures.
type TransparentConfig struct {
	// Dir holds the node caches, the supervisors' scratch and CRIU's own
	// images: the disk measured.
	Dir string
	// Size is the random data each rank's program holds.
	Size int64
	// CRIU is the tool both sides use.
	CRIU criu.Tool
	// Holder is the command line of the program that holds size bytes of
	// random data and then prints HolderReady (HoldRandom).
	Holder   func(size int64) []string
	Progress func(step string)
}

// TransparentResult holds durations in seconds, each the whole job's (the
// 4 ranks).
type TransparentResult struct {
	Checkpoint       float64 // ckpt's checkpoint, from the freeze to the commit
	CRIUDump         float64 // CRIU's own dumps of the same programs
	CheckpointRatio  float64 // Checkpoint / CRIUDump
	RestoreAfterLoss float64 // rebuild, verify, fetch and restore of every rank
	CRIURestore      float64 // CRIU's own restores from intact images
	RestoreRatio     float64 // RestoreAfterLoss / CRIURestore
	// SupervisorDump is the CRIU dumps within the checkpoint, from the
	// first one's start to the last one's end (the rest of Checkpoint is
	// the freeze, the copy into the caches, the parity and the commit).
	SupervisorDump float64
	// ImageBytes are the images as CRIU wrote them at the checkpoint (all
	// ranks), StoredBytes as they were stored, CompressedFiles how many
	// files zstd compressed.
	ImageBytes, StoredBytes int64
	CompressedFiles         int
	// RestoreSource is where the restart found its checkpoint ("rebuild"),
	// Rebuilt the ranks rebuilt.
	RestoreSource string
	Rebuilt       []int
}

// RunTransparent measures; see the comment at the top of this file.
func RunTransparent(ctx context.Context, cfg TransparentConfig) (TransparentResult, error) {
	var r TransparentResult
	progress := cfg.Progress
	if progress == nil {
		progress = func(string) {}
	}
	work, err := os.MkdirTemp(cfg.Dir, "ckpt-bench-transparent-")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(work)
	progress(fmt.Sprintf("CRIU alone: dump and restore of %d programs", TransparentRanks))
	if r.CRIUDump, r.CRIURestore, err = criuAlone(ctx, cfg, filepath.Join(work, "criu")); err != nil {
		return r, fmt.Errorf("CRIU alone: %w", err)
	}
	progress("ckpt: checkpoint into the caches, XOR across the nodes, synced")
	reps, err := transparentLaunch(ctx, cfg, work, true)
	if err != nil {
		return r, fmt.Errorf("the checkpoint: %w", err)
	}
	for _, l := range reps {
		r.Checkpoint = max(r.Checkpoint, l.job.ckptTime.Seconds())
		// The dumps take turns (criu.CLI's lock): the last rank's
		// wait covers the others'.
		r.SupervisorDump = max(r.SupervisorDump, l.rep.DumpTime.Seconds())
		r.ImageBytes += l.rep.Compression.RawBytes
		r.StoredBytes += l.rep.Compression.StoredBytes
		r.CompressedFiles += l.rep.Compression.Compressed
	}
	progress("ckpt: node 1 lost with its cache; restart, rebuilding it from parity")
	if err := os.RemoveAll(filepath.Join(work, "cache", "node1")); err != nil {
		return r, err
	}
	start := time.Now()
	reps, err = transparentLaunch(ctx, cfg, work, false)
	if err != nil {
		return r, fmt.Errorf("the restart: %w", err)
	}
	for i, l := range reps {
		if l.rep.Restored == "" {
			return r, fmt.Errorf("rank %d restarted from scratch, not from the checkpoint", i)
		}
		// Each rank is restored once the engine recovered the checkpoint
		// and its own restore ended (the restores of a host take turns).
		done := l.job.restartEnd.Add(l.rep.RestoreTime)
		r.RestoreAfterLoss = max(r.RestoreAfterLoss, done.Sub(start).Seconds())
	}
	r.RestoreSource, r.Rebuilt = string(reps[0].job.source), reps[0].job.rebuilt
	if r.RestoreSource != string(engine.SourceRebuild) {
		return r, fmt.Errorf("the restart found its checkpoint in %s, want it rebuilt from parity", r.RestoreSource)
	}
	r.CheckpointRatio = r.Checkpoint / r.CRIUDump
	r.RestoreRatio = r.RestoreAfterLoss / r.CRIURestore
	return r, nil
}

// holder is rank r's program, printing into dir/output.
func holder(cfg TransparentConfig, dir string, r int) *transparent.Processes {
	argv := cfg.Holder(cfg.Size)
	base := filepath.Join(dir, "output", fmt.Sprintf("rank-%d", r))
	return &transparent.Processes{Program: argv[0], Args: argv[1:], Stdout: base + ".out", Stderr: base + ".err", Tool: cfg.CRIU}
}

// holderReady says whether the program printing into p's files has its
// data in memory.
func holderReady(p *transparent.Processes) bool {
	b, _ := os.ReadFile(p.Stdout)
	return bytes.Contains(b, []byte(HolderReady+"\n"))
}

// criuAlone starts the programs, stops them as the supervisor does, and
// times CRIU's dumps of them, one after another; then, the programs gone,
// CRIU's restores from those images.
func criuAlone(ctx context.Context, cfg TransparentConfig, dir string) (dump, restore float64, err error) {
	n := TransparentRanks
	procs := make([]*transparent.Processes, n)
	trees := make([]transparent.Tree, n)
	defer func() {
		for _, t := range trees {
			if t != nil {
				t.Kill()
			}
		}
	}()
	for r := range n {
		procs[r] = holder(cfg, dir, r)
		if trees[r], err = procs[r].Start(ctx); err != nil {
			return 0, 0, err
		}
	}
	for r, t := range trees {
		if err := waitReady(ctx, procs[r], t); err != nil {
			return 0, 0, fmt.Errorf("rank %d: %w", r, err)
		}
	}
	metas := make([]transparent.Meta, n)
	images := make([]string, n)
	for r, t := range trees {
		if err := t.Freeze(ctx); err != nil {
			return 0, 0, err
		}
		if metas[r].Stdout, metas[r].Stderr, err = t.Sync(); err != nil {
			return 0, 0, err
		}
		images[r] = filepath.Join(dir, fmt.Sprintf("images-%d", r))
		if err := os.MkdirAll(images[r], 0o700); err != nil {
			return 0, 0, err
		}
	}
	syscall.Sync()
	start := time.Now()
	for r, t := range trees {
		if err := cfg.CRIU.Dump(ctx, criu.DumpRequest{Pid: t.Pid(), Dir: images[r], LeaveRunning: true}); err != nil {
			return 0, 0, err
		}
	}
	dump = time.Since(start).Seconds()
	for r, t := range trees {
		t.Kill()
		<-t.Done()
		trees[r] = nil
	}
	syscall.Sync()
	start = time.Now()
	for r := range n {
		if trees[r], err = procs[r].Restore(ctx, images[r], "", metas[r]); err != nil {
			return 0, 0, err
		}
	}
	restore = time.Since(start).Seconds()
	for r, t := range trees {
		select {
		case <-t.Done():
			return 0, 0, fmt.Errorf("rank %d: the program restored by CRIU ended (status %d)", r, t.ExitCode())
		default:
		}
	}
	return dump, restore, nil
}

// waitReady waits for the program to have its data in memory.
func waitReady(ctx context.Context, p *transparent.Processes, t transparent.Tree) error {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !holderReady(p) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.Done():
			errb, _ := os.ReadFile(p.Stderr)
			return fmt.Errorf("the program ended (status %d) before it was ready: %s", t.ExitCode(), bytes.TrimSpace(errb))
		case <-tick.C:
		}
	}
	return nil
}

// launched is one rank's supervisor after a launch.
type launched struct {
	job *benchJob
	rep transparent.Report
}

// transparentLaunch runs one launch of the job's supervisors on the node
// caches under work. With checkpoint, the programs start, and the job
// takes one checkpoint once every program is ready and halts; without, the
// job restarts from the newest checkpoint it can recover and halts once
// every program is restored. The programs are killed when their
// supervisors return.
func transparentLaunch(ctx context.Context, cfg TransparentConfig, work string, checkpoint bool) ([]launched, error) {
	n := TransparentRanks
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	comms := localcomm.Job(n)
	out := make([]launched, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		node := fmt.Sprintf("node%d", r)
		cache, err := local.New(filepath.Join(work, "cache", node))
		if err != nil {
			return nil, err
		}
		eng := engine.New(engine.Config{Rank: r, Size: n, Node: node, Cache: cache, KeepCache: 2,
			Scheme: fmt.Sprintf("xor:%d", n), Comm: comms[r]})
		p := holder(cfg, work, r)
		j := &benchJob{e: eng, checkpoint: checkpoint, ready: func() bool { return holderReady(p) }}
		out[r].job = j
		scratch := filepath.Join(work, "scratch", node)
		// A launch starts with the scratch of none before it.
		if err := os.RemoveAll(scratch); err != nil {
			return nil, err
		}
		tcfg := transparent.Config{Runner: p, Tool: cfg.CRIU, Scratch: scratch}
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[r].rep, errs[r] = transparent.Run(ctx, j, tcfg)
			if errs[r] != nil {
				// The others would wait for this rank forever.
				cancel(fmt.Errorf("rank %d: %w", r, errs[r]))
			}
		}()
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return nil, err
	}
	for r, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("rank %d: %w", r, err)
		}
	}
	return out, nil
}

// benchJob is a transparent.Job over an engine of an in-process job.
type benchJob struct {
	e          *engine.Engine
	checkpoint bool        // this launch takes one checkpoint, then halts
	ready      func() bool // this rank's program is ready
	asked      bool        // the checkpoint was asked for
	ckptTime   time.Duration
	restartEnd time.Time
	source     engine.Source
	rebuilt    []int
}

var _ transparent.Job = (*benchJob)(nil)

func (j *benchJob) Rank() int { return j.e.Rank }

func (j *benchJob) AllGather(ctx context.Context, data []byte) ([][]byte, error) {
	return j.e.Comm.AllGather(ctx, data)
}

// NeedCheckpoint asks for one checkpoint, at the first step where every
// rank's program is ready.
func (j *benchJob) NeedCheckpoint(ctx context.Context, step int64) (bool, error) {
	if !j.checkpoint || j.asked {
		return false, nil
	}
	b := []byte{0}
	if j.ready() {
		b[0] = 1
	}
	all, err := j.AllGather(ctx, b)
	if err != nil {
		return false, err
	}
	for _, x := range all {
		if len(x) != 1 || x[0] != 1 {
			return false, nil
		}
	}
	j.asked = true
	// The checkpoint starts with no dirty pages left by what came before.
	syscall.Sync()
	return true, nil
}

// Halting ends the launch: after its checkpoint, or at once when the
// launch only restarts.
func (j *benchJob) Halting() bool { return !j.checkpoint || j.asked }

func (j *benchJob) Checkpoint(ctx context.Context, name string, save func(transparent.Files) error) error {
	start := time.Now()
	c, err := j.e.Start(name)
	if err != nil {
		return err
	}
	if err := save(engineFiles{c}); err != nil {
		return c.Fail(ctx, err)
	}
	err = c.Commit(ctx)
	j.ckptTime = time.Since(start)
	return err
}

func (j *benchJob) Restart(ctx context.Context) (transparent.Restored, error) {
	res, err := j.e.Restart(ctx)
	j.restartEnd = time.Now()
	switch {
	case errors.Is(err, engine.ErrNoCheckpoint):
		return nil, nil
	case err != nil:
		return nil, err
	}
	j.source, j.rebuilt = res.Source, res.Rebuilt
	return res, nil
}

func (j *benchJob) Finish(ctx context.Context, result string) error { return nil }

type engineFiles struct{ c *engine.Checkpoint }

func (f engineFiles) Create(name string) (io.WriteCloser, error) { return f.c.Create(name) }

// Path routes a file into the node cache: CRIU dumps straight into it.
func (f engineFiles) Path(name string) (string, error) { return f.c.Path(name) }

// HoldRandom is the program `ckpt bench transparent` checkpoints: it fills
// size bytes of memory with random data (incompressible, as encrypted or
// noisy state is), prints HolderReady on w, and holds the data until it is
// killed. It knows nothing of ckpt.
func HoldRandom(size int64, w io.Writer) error {
	var seed [32]byte
	if _, err := crand.Read(seed[:]); err != nil {
		return err
	}
	data := make([]byte, size)
	// ChaCha8 fills a GiB in about a second on one core.
	if _, err := rand.NewChaCha8(seed).Read(data); err != nil {
		return err
	}
	if _, err := fmt.Fprintln(w, HolderReady); err != nil {
		return err
	}
	for {
		time.Sleep(time.Hour)
		runtime.KeepAlive(data)
	}
}
