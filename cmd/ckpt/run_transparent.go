package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ckpt/ckpt"
	"github.com/ckpt/ckpt/internal/criu"
	"github.com/ckpt/ckpt/internal/jobdir"
	"github.com/ckpt/ckpt/internal/jobenv"
	"github.com/ckpt/ckpt/internal/launch"
	"github.com/ckpt/ckpt/internal/netns"
	"github.com/ckpt/ckpt/internal/storage/local"
	"github.com/ckpt/ckpt/internal/tcplock"
	"github.com/ckpt/ckpt/internal/transparent"
	"github.com/ckpt/ckpt/internal/units"
)

// ckpt run --transparent runs unmodified programs: each rank of the job is
// this binary's hidden command transparent-rank, a rank of ckpt's job
// runtime like any API program, which starts the program and checkpoints
// it with CRIU (internal/transparent). Everything else — the coordinator,
// the interval policy, the caches and their redundancy, the relaunches
// and restarts, the failures injected — is ckpt run's own.
const transparentRankCmd = "transparent-rank"

// runTransparent is ckpt run --transparent: CRIU is checked first (what is
// missing is a usage error, exit status 2), then the job runs with the
// supervisor as its program.
func (f *runCmdFlags) runTransparent(c *cobra.Command, args []string) error {
	if *f.launcher != launch.LauncherLocal {
		return usagef("--transparent: each rank's supervisor must run on this host beside its program: only --launcher local")
	}
	info, err := checkCRIU(c.Context())
	if err != nil {
		return err
	}
	spec, err := f.spec(*f.ranks, args[0], args[1:])
	if err != nil {
		return err
	}
	spec, err = transparentSpec(spec, *f.netns)
	if err != nil {
		return err
	}
	halt, grace, err := signalFlags(*f.signal, f.haltTimeout)
	if err != nil {
		return err
	}
	if *f.netns {
		hosts, err := transparentHosts(info, spec)
		if err != nil {
			return err
		}
		defer hosts.Close()
		spec.hosts = hosts
		fmt.Fprintf(c.ErrOrStderr(), "ckpt run: transparent: nodes as hosts: %s, the coordinator on %s; TCP connections between ranks checkpointed\n",
			hosts, hosts.Addr(coordHost))
	}
	fmt.Fprintf(c.ErrOrStderr(), "ckpt run: transparent: CRIU %s (%s); each rank's output in %s\n",
		info.Version, info.Path, transparentOutputs(transparentDir(spec.cacheRoot)))
	return runCommand(c, spec, halt, grace, *f.asJSON)
}

// transparentHosts makes a host per node of spec, and one for the
// coordinator (--netns), after checking that the connections can be
// checkpointed here; what is missing is a usage error. A rank's
// connections come back only on its own node (its address), so the
// ranks of a failed node cannot move to a spare.
func transparentHosts(info criu.Info, spec runSpec) (*netns.Net, error) {
	if !info.Version.AtLeast(criu.MinTCPVersion) {
		return nil, usagef("--netns: CRIU %s cannot dump TCP connections on this kernel (it fails on SO_PASSCRED of an inet socket, kernels from 6.16 on): want %s or newer (%s=sid scripts/criu.sh)",
			info.Version, criu.MinTCPVersion, jobenv.VarCRIUSuite)
	}
	if spec.spares > 0 {
		return nil, usagef("--netns with --spares: a rank's connections are restored only on its own node, whose address they hold")
	}
	if why := netns.Unavailable(); why != "" {
		return nil, usagef("--netns: no network namespaces here: %s", why)
	}
	return netns.New(append(launch.NodeNames(spec.nodes), coordHost)...)
}

// checkCRIU finds CRIU and checks that it can work here; what is missing
// is a usage error.
func checkCRIU(ctx context.Context) (criu.Info, error) {
	path, err := criu.Find(os.LookupEnv, exec.LookPath)
	if err != nil {
		return criu.Info{}, usageError{err}
	}
	info, err := criu.Check(ctx, path, criu.Exec)
	if err != nil {
		return criu.Info{}, usageError{err}
	}
	if _, set := os.LookupEnv(criu.FaultVar); !set && info.Version.NeedsFault() {
		// A 4.1.x from PATH rather than scripts/criu.sh's wrapper, which
		// sets it too: the ranks, and the CRIU they start, inherit it.
		os.Setenv(criu.FaultVar, criu.FaultNoHWBreakpoints)
	}
	return info, nil
}

// transparentSpec makes spec's ranks supervisors of its program. The
// job's name was derived from the program already.
func transparentSpec(spec runSpec, tcp bool) (runSpec, error) {
	exe, err := os.Executable()
	if err != nil {
		return spec, err
	}
	cmd := []string{transparentRankCmd, "--dir", transparentDir(spec.cacheRoot)}
	if tcp {
		cmd = append(cmd, "--tcp")
	}
	spec.args = append(append(cmd, "--", spec.program), spec.args...)
	spec.program = exe
	return spec, nil
}

func transparentDir(cacheRoot string) string { return filepath.Join(cacheRoot, jobdir.TransparentDir) }

func transparentOutputs(dir string) string { return filepath.Join(dir, "output") }

// rankOutputs are the files rank r's program prints into.
func rankOutputs(dir string, r int) (stdout, stderr string) {
	base := filepath.Join(transparentOutputs(dir), fmt.Sprintf("rank-%d", r))
	return base + ".out", base + ".err"
}

func newTransparentRankCmd() *cobra.Command {
	c := command(transparentRankCmd+" --dir DIR -- PROGRAM [ARGS...]", "A rank of 'ckpt run --transparent': runs PROGRAM and checkpoints it with CRIU", "", "", cobra.MinimumNArgs(1))
	c.Hidden = true
	c.Flags().SetInterspersed(false)
	dir := c.Flags().String("dir", "", "the job's directory for transparent mode (output, scratch)")
	tcp := c.Flags().Bool("tcp", false, "checkpoint the program's TCP connections (the rank runs in its node's network namespace)")
	c.RunE = func(c *cobra.Command, args []string) error {
		if *dir == "" {
			return usagef("--dir: required")
		}
		return runTransparentRank(c, *dir, *tcp, args)
	}
	return c
}

// runTransparentRank joins the job and supervises the program to its end.
func runTransparentRank(c *cobra.Command, dir string, tcp bool, args []string) error {
	job, err := ckpt.Join(c.Context(), ckpt.JobOptions{})
	if err != nil {
		return rankError(err)
	}
	defer job.Close()
	r := job.Rank()
	path, err := criu.Find(os.LookupEnv, exec.LookPath)
	if err != nil {
		return rankError(ckpt.ConfigError(err))
	}
	tool := criu.CLI{Path: path}
	stdout, stderr := rankOutputs(dir, r)
	cfg := transparent.Config{
		Runner: &transparent.Processes{Program: args[0], Args: args[1:], Env: programEnv(os.Environ()),
			Stdout: stdout, Stderr: stderr, Tool: tool},
		Tool:    tool,
		Scratch: filepath.Join(dir, "scratch", fmt.Sprintf("rank-%d", r)),
		Result:  func() string { return lastLine(stdout) },
	}
	if tcp {
		// The ranks of a node share its namespace: a table each.
		cfg.Net = tcplock.NFT{Table: fmt.Sprintf("ckpt-rank-%d", r)}
	}
	rep, err := transparent.Run(c.Context(), transparentJob{job}, cfg)
	var pe *transparent.ProgramError
	if errors.As(err, &pe) {
		return statusError{err: fmt.Errorf("rank %d: %w (its output: %s, %s)", r, err, stdout, stderr), status: pe.Code}
	}
	if err != nil {
		return rankError(fmt.Errorf("rank %d: %w", r, err))
	}
	from := "started from scratch"
	if rep.Restored != "" {
		from = fmt.Sprintf("restored %s in %s", rep.Restored, sec(rep.RestoreTime.Seconds()))
	}
	fmt.Fprintf(c.ErrOrStderr(), "transparent rank %d: %s; %d checkpoints, CRIU dumps %s, images %s\n",
		r, from, rep.Checkpoints, sec(rep.DumpTime.Seconds()), units.FormatSize(float64(rep.ImageBytes)))
	if rep.Checkpoints > 0 {
		fmt.Fprintf(c.ErrOrStderr(), "transparent rank %d: last checkpoint's images: %s\n", r, rep.Compression)
	}
	if err := writeRankStats(dir, r, rep); err != nil {
		return rankError(fmt.Errorf("rank %d: %w", r, err))
	}
	// What the program printed goes where an API rank's output goes.
	return errors.Join(copyFile(c.OutOrStdout(), stdout), copyFile(c.ErrOrStderr(), stderr))
}

// rankStats is what a rank's last attempt measured, for ckpt demo
// --transparent: JOBDIR/transparent/stats/rank-R.json.
type rankStats struct {
	Restored       string  `json:"restored"`
	RestoreSeconds float64 `json:"restore_seconds"`
	Checkpoints    int     `json:"checkpoints"`
	DumpSeconds    float64 `json:"dump_seconds"`
	ImageBytes     int64   `json:"image_bytes"`
	// StoredBytes are those images as stored, compressed where it paid.
	StoredBytes     int64 `json:"stored_bytes"`
	CompressedFiles int   `json:"compressed_files"`
}

func rankStatsPath(dir string, r int) string {
	return filepath.Join(dir, "stats", fmt.Sprintf("rank-%d.json", r))
}

func writeRankStats(dir string, r int, rep transparent.Report) error {
	b, err := json.Marshal(rankStats{Restored: rep.Restored, RestoreSeconds: rep.RestoreTime.Seconds(),
		Checkpoints: rep.Checkpoints, DumpSeconds: rep.DumpTime.Seconds(), ImageBytes: rep.ImageBytes,
		StoredBytes: rep.Compression.StoredBytes, CompressedFiles: rep.Compression.Compressed})
	if err != nil {
		return err
	}
	path := rankStatsPath(dir, r)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	// Whole or not at all: a half-written file would be dropped as
	// unreadable, and the demo's figures with it.
	return local.WriteFile(path, b, 0o600)
}

// programEnv is the supervisor's environment less the job's variables,
// which are the supervisor's business (an unmodified program has no use
// for them, and a ckpt program would join the job a second time), but
// for the rank and the size.
func programEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		if strings.HasPrefix(kv, "CKPT_") && !strings.HasPrefix(kv, jobenv.VarRank+"=") && !strings.HasPrefix(kv, jobenv.VarSize+"=") {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// lastLine is the last non-empty line of a file ("" if none).
func lastLine(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return lastLineOf(string(b))
}

func copyFile(w io.Writer, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(w, f)
	return err
}

// transparentJob is a ckpt.Job as the supervisor sees it.
type transparentJob struct{ j *ckpt.Job }

var _ transparent.Job = transparentJob{}

func (a transparentJob) Rank() int { return a.j.Rank() }
func (a transparentJob) AllGather(ctx context.Context, data []byte) ([][]byte, error) {
	return a.j.AllGather(ctx, data)
}
func (a transparentJob) NeedCheckpoint(ctx context.Context, step int64) (bool, error) {
	return a.j.NeedCheckpoint(ctx, step)
}
func (a transparentJob) Halting() bool { return a.j.Halting() }
func (a transparentJob) Finish(ctx context.Context, result string) error {
	return a.j.Finish(ctx, result)
}

func (a transparentJob) Checkpoint(ctx context.Context, name string, save func(transparent.Files) error) error {
	return a.j.Checkpoint(ctx, name, func(c *ckpt.Checkpoint) error { return save(checkpointFiles{c}) })
}

func (a transparentJob) Restart(ctx context.Context) (transparent.Restored, error) {
	res, err := a.j.Restart(ctx)
	switch {
	case errors.Is(err, ckpt.ErrNoCheckpoint):
		return nil, nil
	case err != nil:
		return nil, err
	}
	return res, nil
}

type checkpointFiles struct{ c *ckpt.Checkpoint }

// Path routes a file into the node cache: the supervisor has CRIU dump
// straight into the checkpoint's directory there.
func (f checkpointFiles) Path(name string) (string, error) { return f.c.Path(name) }

func (f checkpointFiles) Create(name string) (io.WriteCloser, error) {
	w, err := f.c.Create(name)
	if err != nil {
		return nil, err
	}
	return w, nil
}
