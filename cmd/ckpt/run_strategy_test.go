package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ckpt/ckpt"
	"github.com/ckpt/ckpt/examples/torus"
	"github.com/ckpt/ckpt/internal/capitest/mpitest"
	"github.com/ckpt/ckpt/internal/demo"
	"github.com/ckpt/ckpt/internal/jobenv"
	"github.com/ckpt/ckpt/internal/launch"
	"github.com/ckpt/ckpt/internal/policy"
)

// The tests of --strategy uncoordinated run Fialho et al. 2011's
// synthetic application (§4), as internal/uncoord's tests do, as the
// ranks of a real job: the test binary, with asTorus set, is a rank of a
// 3×2 torus that, every step, computes, sends to its right and lower
// neighbours and receives from its left and upper ones, checkpointing
// alone on its own schedule. A rank told to (--kill-rank, --kill-step)
// kills itself with SIGKILL at that step of its first process in the
// first launch — after its receives, so that its log holds what it
// received since its checkpoint — and, with --damage-log, first flips a
// byte of the first record in its log: the failure happens at the same
// point whatever the machine's speed.
const asTorus = "CKPT_TEST_AS_TORUS"

const (
	torusW, torusH = 3, 2
	torusSteps     = 30
)

// torusConfig is the tests' torus (examples/torus, no compute phase).
var torusConfig = torus.Config{W: torusW, H: torusH, Steps: torusSteps}

// torusReference is the result computed sequentially, without failures.
func torusReference() string { return torusConfig.Reference() }

// torusMain is a rank of the torus (the test binary run with asTorus).
func torusMain(args []string) int {
	fs := flag.NewFlagSet("torus", flag.ContinueOnError)
	killRank := fs.Int("kill-rank", -1, "the rank that kills itself")
	killStep := fs.Int("kill-step", 0, "at this step")
	midCheckpoint := fs.Bool("kill-mid-checkpoint", false, "in the middle of its first checkpoint at or after the step, not after the step")
	damage := fs.Bool("damage-log", false, "after damaging its log")
	starts := fs.String("starts", "", "a directory where each process of a rank leaves a file")
	noRestart := fs.Bool("no-restart", false, "never call Restart: always start from the beginning")
	killEarly := fs.Int("kill-early", -1, "the rank that kills itself before joining, in its first process of the second launch")
	holdRank := fs.Int("hold-rank", -1, "the rank that stops at --kill-step, in its first process of the first launch, and waits to be killed")
	held := fs.String("held", "", "where the held rank says it is held (a file it creates)")
	loseLogRank := fs.Int("lose-log-rank", -1, "the rank whose log is lost at its protector once it decided to checkpoint at --kill-step, in its first process of the first launch")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if r, err := strconv.Atoi(os.Getenv(jobenv.VarRank)); err == nil && r == *killEarly &&
		os.Getenv(jobenv.VarIncarnation) == "1" && os.Getenv(jobenv.VarRecoverAlone) == "" {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
	err := torusRank(context.Background(), torusFaults{killRank: *killRank, killStep: *killStep, midCheckpoint: *midCheckpoint,
		damage: *damage, holdRank: *holdRank, held: *held, loseLogRank: *loseLogRank}, *noRestart, *starts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	return ckpt.ExitStatus(err)
}

// torusFaults is what a torus rank of the tests does to itself: kill
// itself (after damaging its log, or in the middle of its checkpoint),
// or stop and wait to be killed with its node, at a step of its first
// process.
type torusFaults struct {
	killRank, killStep int
	midCheckpoint      bool
	damage             bool
	holdRank           int
	held               string
	loseLogRank        int
}

func torusRank(ctx context.Context, f torusFaults, noRestart bool, starts string) error {
	job, err := ckpt.Join(ctx, ckpt.JobOptions{})
	if err != nil {
		return err
	}
	defer job.Close()
	me := job.Rank()
	alone := os.Getenv(jobenv.VarRecoverAlone) != ""
	if starts != "" {
		f, err := os.CreateTemp(starts, fmt.Sprintf("rank%d-inc%d-alone%v-", me, job.Incarnation(), alone))
		if err != nil {
			return err
		}
		f.Close()
	}
	cfg := torusConfig
	cfg.NoRestart = noRestart
	midVictim := -1
	if f.midCheckpoint {
		midVictim, f.killRank = f.killRank, -1 // in the checkpoint, not after the step
	}
	cfg.AfterStep = func(job *ckpt.Job, step int) error {
		// After the step's receives: its log holds what it received
		// since its checkpoint.
		if me == f.holdRank && step == f.killStep && !alone && job.Incarnation() == 0 {
			// Its checkpoint of step 10 saved, its log holding what it
			// received since: the test loses its node now.
			if err := os.WriteFile(f.held, nil, 0o644); err != nil {
				return err
			}
			select {}
		}
		if me == f.killRank && step == f.killStep && !alone && job.Incarnation() == 0 {
			if f.damage {
				if err := damageOwnLog(me); err != nil {
					return err
				}
			}
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
		return nil
	}
	cfg.InCheckpoint = func(job *ckpt.Job, step int) error {
		// Its state written into the checkpoint, nothing of it saved:
		// the restart must go back to the checkpoint before.
		if me == midVictim && step >= f.killStep && !alone && job.Incarnation() == 0 {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
		// In its checkpoint, once the runtime looked for its log and
		// before it truncates it: its protector's node lost, as far as
		// its log is concerned.
		if me == f.loseLogRank && step == f.killStep && !alone && job.Incarnation() == 0 {
			return loseOwnLog(me)
		}
		return nil
	}
	result, err := torus.Run(ctx, job, cfg)
	if result != "" {
		fmt.Println(result)
	}
	return err
}

// damageOwnLog flips a byte of the data of the first record in the
// rank's message log, at its protector's node (a cache directory beside
// its own): that record is after the rank's checkpoint, so the replay
// reaches it.
func damageOwnLog(rank int) error {
	logs, err := filepath.Glob(filepath.Join(filepath.Dir(os.Getenv(jobenv.VarCache)), "*", "msglog", fmt.Sprintf("rank-%d.log", rank)))
	if err != nil || len(logs) != 1 {
		return fmt.Errorf("rank %d's log: found %v, %v", rank, logs, err)
	}
	f, err := os.OpenFile(logs[0], os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	// The file's header is 24 bytes, a frame's head 32 (logstore.File).
	const firstData = 24 + 32
	var b [1]byte
	if _, err := f.ReadAt(b[:], firstData); err != nil {
		return fmt.Errorf("rank %d's log holds no record to damage: %w", rank, err)
	}
	b[0] ^= 0x40
	if _, err := f.WriteAt(b[:], firstData); err != nil {
		return err
	}
	return f.Sync()
}

// loseOwnLog removes the directory of the rank's message log at its
// protector's node (a cache directory beside its own), as the loss of
// that node's cache does.
func loseOwnLog(rank int) error {
	logs, err := filepath.Glob(filepath.Join(filepath.Dir(os.Getenv(jobenv.VarCache)), "*", "msglog", fmt.Sprintf("rank-%d.log", rank)))
	if err != nil || len(logs) != 1 {
		return fmt.Errorf("rank %d's log: found %v, %v", rank, logs, err)
	}
	return os.RemoveAll(filepath.Dir(logs[0]))
}

// torusSpec is a job of 6 ranks of the torus on 6 nodes under the
// uncoordinated strategy, each rank checkpointing every 5 steps.
func torusSpec(t *testing.T, args ...string) (runSpec, *bytes.Buffer, string) {
	t.Helper()
	exe, p := selfEvery5(t, asTorus)
	starts := t.TempDir()
	var log bytes.Buffer
	w := &syncWriter{b: &log}
	return runSpec{ranks: torusW * torusH, nodes: torusW * torusH, program: exe,
		args:     append([]string{"--starts", starts}, args...),
		interval: p, cacheRoot: filepath.Join(t.TempDir(), "caches"), retries: 4,
		heartbeat: 10 * time.Second, uncoordinated: true, output: w, progress: w}, &log, starts
}

// processes counts the processes each rank ran in, and how many of them
// were restarted alone.
func processes(t *testing.T, dir string) (per map[int]int, alone map[int]int) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	per, alone = map[int]int{}, map[int]int{}
	for _, e := range ents {
		f := strings.Split(e.Name(), "-")
		r, err := strconv.Atoi(strings.TrimPrefix(f[0], "rank"))
		if err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		per[r]++
		if f[2] == "alonetrue" {
			alone[r]++
		}
	}
	return per, alone
}

// torusCLI runs the torus as `ckpt run --strategy uncoordinated --json`
// with flags, the ranks given app's arguments; it returns the JSON, the
// progress (stderr) and the directory of the ranks' processes.
func torusCLI(t *testing.T, flags []string, app ...string) (map[string]any, string, string) {
	t.Helper()
	t.Setenv(asTorus, "1")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	starts := t.TempDir()
	args := append([]string{"run", "-n", strconv.Itoa(torusW * torusH), "--nodes", strconv.Itoa(torusW * torusH),
		"--strategy", "uncoordinated", "--interval", "5steps", "--retries", "4",
		"--cache-root", filepath.Join(t.TempDir(), "caches"), "--json"}, flags...)
	args = append(append(args, "--", exe, "--starts", starts), app...)
	code, stdout, stderr := runCLI(t, args...)
	if code != exitOK {
		t.Fatalf("ckpt %s: exit %d\n%s", strings.Join(args, " "), code, stderr)
	}
	obj := decodeOne(t, stdout)
	if want := torusReference(); obj["result"] != want {
		t.Fatalf("result %v, want the failure-free (sequential) %q\n%s", obj["result"], want, stderr)
	}
	if obj["strategy"] != "uncoordinated" {
		t.Errorf("strategy %v, want uncoordinated", obj["strategy"])
	}
	return obj, stderr, starts
}

func TestRunUncoordinatedFailureFree(t *testing.T) {
	obj, stderr, starts := torusCLI(t, nil)
	for k, want := range map[string]float64{"attempts": 1, "ranks_recovered_alone": 0, "whole_job_restarts": 0, "log_replay_seconds": 0} {
		if got := getNum(t, obj, k); got != want {
			t.Errorf("%s = %v, want %v\n%s", k, got, want, stderr)
		}
	}
	// Every rank received and logged: the logging took some time.
	if getNum(t, obj, "log_protect_seconds") <= 0 {
		t.Errorf("log_protect_seconds %v, want some logging", obj["log_protect_seconds"])
	}
	per, _ := processes(t, starts)
	for r := range torusW * torusH {
		if per[r] != 1 {
			t.Errorf("rank %d ran in %d processes, want 1", r, per[r])
		}
	}
}

// A rank killed mid-run is restarted alone: it reloads its checkpoint of
// step 10, replays its log and re-executes, while the other ranks go on
// in their first process; the result is the failure-free one, bit for
// bit.
func TestRunUncoordinatedRankKilledRecoversAlone(t *testing.T) {
	const victim = 4
	obj, stderr, starts := torusCLI(t, nil, "--kill-rank", strconv.Itoa(victim), "--kill-step", "13")
	for k, want := range map[string]float64{"attempts": 1, "ranks_recovered_alone": 1, "whole_job_restarts": 0} {
		if got := getNum(t, obj, k); got != want {
			t.Errorf("%s = %v, want %v\n%s", k, got, want, stderr)
		}
	}
	if getNum(t, obj, "log_replay_seconds") <= 0 {
		t.Errorf("log_replay_seconds %v: the victim replayed nothing", obj["log_replay_seconds"])
	}
	if !strings.Contains(stderr, fmt.Sprintf("rank %d restarted alone (rank %d (node node%[1]d) killed by signal", victim, victim)) {
		t.Errorf("no progress line says rank %d restarted alone:\n%s", victim, stderr)
	}
	per, alone := processes(t, starts)
	for r := range torusW * torusH {
		want, wantAlone := 1, 0
		if r == victim {
			want, wantAlone = 2, 1
		}
		if per[r] != want || alone[r] != wantAlone {
			t.Errorf("rank %d ran in %d processes (%d restarted alone), want %d (%d)", r, per[r], alone[r], want, wantAlone)
		}
	}
}

// A rank killed in the middle of a checkpoint — its state written into
// the checkpoint of step 15, nothing of it saved, its log not truncated —
// is restarted alone from its checkpoint of step 10, replays its log and
// re-executes: one attempt, no whole-job restart, the failure-free result.
func TestRunUncoordinatedRankKilledMidCheckpointRecoversAlone(t *testing.T) {
	const victim = 2
	obj, stderr, starts := torusCLI(t, nil, "--kill-rank", strconv.Itoa(victim), "--kill-step", "13", "--kill-mid-checkpoint")
	for k, want := range map[string]float64{"attempts": 1, "ranks_recovered_alone": 1, "whole_job_restarts": 0} {
		if got := getNum(t, obj, k); got != want {
			t.Errorf("%s = %v, want %v\n%s", k, got, want, stderr)
		}
	}
	if getNum(t, obj, "log_replay_seconds") <= 0 {
		t.Errorf("log_replay_seconds %v: the victim replayed nothing", obj["log_replay_seconds"])
	}
	per, alone := processes(t, starts)
	for r := range torusW * torusH {
		want := 1 + boolInt(r == victim)
		if per[r] != want || alone[r] != want-1 {
			t.Errorf("rank %d ran in %d processes (%d restarted alone), want %d (%d)", r, per[r], alone[r], want, want-1)
		}
	}
}

// Under mpirun the strategy runs, with a warning that a failure
// relaunches the whole job there.
func TestRunUncoordinatedUnderMPIRunWarns(t *testing.T) {
	mpitest.RequireTools(t, "mpirun")
	obj, stderr, _ := torusCLI(t, []string{"--launcher", "mpirun"})
	if !strings.Contains(stderr, "warning: --strategy uncoordinated under --launcher mpirun") {
		t.Errorf("no warning:\n%s", stderr)
	}
	if getNum(t, obj, "attempts") != 1 || obj["launcher"] != "mpirun" {
		t.Errorf("attempts %v, launcher %v", obj["attempts"], obj["launcher"])
	}
}

// A rank killed after a record of its log was damaged cannot recover
// alone: its replay stops at the record (its hash), it exits with 66, and
// the whole job is relaunched from the beginning with fresh logs; the
// result is still the failure-free one.
func TestRunUncoordinatedDamagedLogFallsBackToWholeJob(t *testing.T) {
	const victim = 2
	spec, log, starts := torusSpec(t, "--kill-rank", strconv.Itoa(victim), "--kill-step", "13", "--damage-log")
	res := launchRelaunched(t, spec, log, 1)
	wantExit66(t, res, victim)
	if !strings.Contains(log.String(), "record corrupt: hash mismatch") {
		t.Errorf("the victim's output does not say its log record failed its hash:\n%s", log)
	}
	per, alone := processes(t, starts)
	for r := range spec.ranks {
		// Every rank's process of the first launch, and of the second;
		// the victim's restart alone in between.
		want := 2 + boolInt(r == victim)
		if per[r] != want || alone[r] != boolInt(r == victim) {
			t.Errorf("rank %d ran in %d processes (%d restarted alone), want %d", r, per[r], alone[r], want)
		}
	}
}

// A rank killed in a whole-job relaunch before its fresh start removed
// its checkpoint and log of the earlier launch is restarted alone: it
// must not take them for its own in this launch (it would resume at the
// earlier launch's step 10 while its peers start at step 1, and replay
// messages they never sent in this launch), but start from the
// beginning. Rank 1 is the damaged victim's left neighbour: it sent its
// step-13 message, so it had checkpointed at step 10 in the first launch.
func TestRunUncoordinatedRelaunchIgnoresEarlierLaunchsCheckpoint(t *testing.T) {
	const victim, early = 2, 1
	spec, log, starts := torusSpec(t, "--kill-rank", strconv.Itoa(victim), "--kill-step", "13", "--damage-log",
		"--kill-early", strconv.Itoa(early))
	launchRelaunched(t, spec, log, 2)
	_, alone := processes(t, starts)
	if alone[early] != 1 {
		t.Errorf("rank %d restarted alone %d times, want 1\n%s", early, alone[early], log)
	}
}

// A rank restarted alone whose program does not call Restart starts
// from the beginning: its driver must too, replaying its whole log, not
// resume behind its checkpoint (the messages before it would be lost to
// the program, which would wait for more than its peers send). Its log
// was truncated behind its checkpoint of step 10, so it cannot serve
// that: the victim exits with 66 and the whole job is relaunched.
func TestRunUncoordinatedRankWithoutRestartStartsFromTheBeginning(t *testing.T) {
	const victim = 4
	spec, log, _ := torusSpec(t, "--kill-rank", strconv.Itoa(victim), "--kill-step", "13", "--no-restart")
	res := launchRelaunched(t, spec, log, 1)
	wantExit66(t, res, victim)
}

// launchRelaunched runs spec, a torus job whose victim cannot recover
// alone, and checks that it still got the failure-free result, in two
// attempts with one whole-job relaunch between, alone of its ranks
// having been restarted alone.
func launchRelaunched(t *testing.T, spec runSpec, log *bytes.Buffer, alone int) runResult {
	t.Helper()
	res := launchScripted(t, spec, log, nil, 3*time.Minute)
	if want := torusReference(); res.Result != want {
		t.Fatalf("result %q, want the failure-free %q\n%s", res.Result, want, log)
	}
	if len(res.Attempts) != 2 || res.RanksRecoveredAlone != alone || res.WholeJobRestarts != 1 {
		t.Fatalf("%d attempts, %d restarted alone, %d whole-job restarts; want 2, %d, 1\n%s", len(res.Attempts), res.RanksRecoveredAlone, res.WholeJobRestarts, alone, log)
	}
	return res
}

// wantExit66 checks that res's first attempt ended with victim's exit
// status 66: its log could not serve its replay.
func wantExit66(t *testing.T, res runResult, victim int) {
	t.Helper()
	if c := res.Attempts[0].Cause; !strings.Contains(c, fmt.Sprintf("rank %d (node node%d) exited with status 66", victim, victim)) {
		t.Errorf("the first attempt ended with %q, want the victim's exit status 66", c)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// The flags: --strategy takes coordinated or uncoordinated; what the
// strategy does not offer is refused before anything starts, naming the
// flag.
func TestRunStrategyFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--strategy", "optimistic"}, "--strategy"},
		{[]string{"--strategy", "uncoordinated", "--tree"}, "--tree"},
		{[]string{"--strategy", "uncoordinated", "--transparent"}, "--transparent"},
		{[]string{"--strategy", "uncoordinated", "--inject-mtti", "10s", "--inject-kind", "hang"}, "--inject-kind hang"},
		{[]string{"--strategy", "uncoordinated", "--shared", t.TempDir()}, "--shared"},
		{[]string{"--strategy", "uncoordinated", "--time-limit", "1h"}, "--time-limit"},
	} {
		var out, errb bytes.Buffer
		args := append(append([]string{"run", "-n", "2", "--cache-root", filepath.Join(t.TempDir(), "c")}, c.args...), "--", "/bin/true")
		if code := run(args, &out, &errb); code != exitUsage || !strings.Contains(errb.String(), c.want) {
			t.Errorf("ckpt %s: exit %d, stderr %q; want %d naming %s", strings.Join(args, " "), code, errb.String(), exitUsage, c.want)
		}
	}
}

// An allocation's end under the uncoordinated strategy is warned of (the
// job runs on to it), not refused; --time-limit is refused (above).
func TestUncoordinatedAllocationEndWarns(t *testing.T) {
	end := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	var warn bytes.Buffer
	s := runSpec{uncoordinated: true, timeLimit: launch.TimeLimit{Deadline: end, From: "SLURM_JOB_END_TIME"}}
	if err := s.uncoordinatedTimeLimit(&warn); err != nil || !strings.Contains(warn.String(), "does not halt before the allocation's end (SLURM_JOB_END_TIME") {
		t.Errorf("allocation's end: %v, warning %q", err, warn.String())
	}
	s.uncoordinated = false
	warn.Reset()
	if err := s.uncoordinatedTimeLimit(&warn); err != nil || warn.Len() != 0 {
		t.Errorf("coordinated: %v, warning %q", err, warn.String())
	}
}

// ckpt run's summary of an uncoordinated job: its counts and the logging
// times, as text and as --json's keys (the sums over ranks and launches);
// φ, and with failures injected (an MTTI) eq. 10's model fed with the
// run's measurements as model_efficiency.
func TestPrintRunUncoordinated(t *testing.T) {
	st := jobenv.MsgLogStats{Protect: 1500 * time.Millisecond, Replay: 250 * time.Millisecond, Checkpoints: 12, CheckpointTime: 600 * time.Millisecond}
	r := runResult{Strategy: jobenv.StrategyUncoordinated, Outcome: launch.Outcome{Restarts: map[string]int{},
		Report: launch.Report{Attempts: []launch.Attempt{{}, {}}, Result: "ok", RanksRecoveredAlone: 2, WholeJobRestarts: 1,
			MsgLog: st, Phi: 0.5, Elapsed: 20 * time.Second}}}
	auto := policy.Policy{Kind: policy.Auto, MTTI: 10 * time.Second}
	pred := predict(0, 0, 10, r).withFialho(r, 6, 10, auto)
	want := demo.CompareFialho(st, 6, 2, 0.5, 20, 10, auto).Efficiency
	if !(want > 0 && want < 1) {
		t.Fatalf("eq. 10 gives %v at these inputs", want)
	}
	var text bytes.Buffer
	if err := printRun(&text, r, pred, false); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"uncoordinated: 2 ranks recovered alone, 1 whole-job restarts", "φ = 0.5 (Fialho et al. 2011 eq. 12",
		fmt.Sprintf("eq. 10 predicts %.1f%% efficiency (t_c = ", 100*want)} {
		if !strings.Contains(text.String(), line) {
			t.Errorf("summary without %q:\n%s", line, text.String())
		}
	}
	var js bytes.Buffer
	if err := printRun(&js, r, pred, true); err != nil {
		t.Fatal(err)
	}
	obj := decodeOne(t, js.String())
	for k, want := range map[string]float64{"ranks_recovered_alone": 2, "whole_job_restarts": 1, "log_protect_seconds": 1.5, "log_replay_seconds": 0.25,
		"phi": 0.5, "model_efficiency": want} {
		if got := getNum(t, obj, k); got != want {
			t.Errorf("%s = %v, want %v", k, got, want)
		}
	}
	// Without failures injected there is no MTTI: no model.
	js.Reset()
	if err := printRun(&js, r, predict(0, 0, 0, r).withFialho(r, 6, 0, auto), true); err != nil {
		t.Fatal(err)
	}
	if obj := decodeOne(t, js.String()); obj["model_efficiency"] != nil {
		t.Errorf("model_efficiency %v without an MTTI, want null", obj["model_efficiency"])
	}
	// φ not measured (a coordinated run, or no rank stepped): null, not 0.
	js.Reset()
	coordinated := runResult{Outcome: launch.Outcome{Restarts: map[string]int{}, Report: launch.Report{Result: "ok"}}}
	if err := printRun(&js, coordinated, predict(0, 0, 0, coordinated), true); err != nil {
		t.Fatal(err)
	}
	if obj := decodeOne(t, js.String()); obj["phi"] != nil {
		t.Errorf("phi %v unmeasured, want null", obj["phi"])
	}
	// At --interval 10steps eq. 11 is not what the ranks used, and their
	// σ is unknown: no model rather than one at the wrong interval.
	js.Reset()
	if err := printRun(&js, r, predict(0, 0, 10, r).withFialho(r, 6, 10, policy.Policy{Kind: policy.Steps, Steps: 10}), true); err != nil {
		t.Fatal(err)
	}
	if obj := decodeOne(t, js.String()); obj["model_efficiency"] != nil {
		t.Errorf("model_efficiency %v at --interval 10steps, want null", obj["model_efficiency"])
	}
}

// Himeno (ckpt example himeno, which all-gathers every iteration's
// residual) runs under the strategy: its collectives are built from the
// ranks' logged messages. One of its 8 ranks, on 4 nodes, is killed once
// it has a checkpoint of its own: it recovers alone — reloads it, replays
// its log, re-executes its halo exchanges and all-gathers while the
// others are not disturbed — and the result is the failure-free run's,
// bit for bit. Under process durability: the logs are not synced.
func TestRunUncoordinatedHimenoRankKilledRecoversAlone(t *testing.T) {
	const victim = 5
	want, err := reference()
	if err != nil {
		t.Fatal(err)
	}
	exe, p := selfEvery5(t, asCkpt)
	var log bytes.Buffer
	w := &syncWriter{b: &log}
	caches := filepath.Join(t.TempDir(), "caches")
	spec := runSpec{ranks: 8, nodes: 4, program: exe, args: himenoArgs, interval: p, durability: "process",
		cacheRoot: caches, retries: 4, heartbeat: 10 * time.Second, uncoordinated: true, output: w, progress: w}
	res := launchScripted(t, spec, &log, func(c *launch.Config, _ *launch.Coordinators) {
		ch := make(chan []int, 1)
		c.Inject = ch
		go func() {
			// Once the victim's own checkpoint exists (step 5 of 200),
			// it is killed mid-run.
			for ctx := t.Context(); ctx.Err() == nil; {
				found := false
				filepath.WalkDir(caches, func(path string, d os.DirEntry, err error) error {
					if err == nil && d.Name() == fmt.Sprintf("rank-%d.ckpt", victim) {
						found = true
						return filepath.SkipAll
					}
					return nil
				})
				if found {
					ch <- []int{victim}
					return
				}
				select {
				case <-ctx.Done():
				case <-time.After(20 * time.Millisecond):
				}
			}
		}()
	}, 3*time.Minute)
	if res.Result != want {
		t.Fatalf("result %q, want the failure-free %q\n%s", res.Result, want, &log)
	}
	if res.Injected != 1 || len(res.Attempts) != 1 || res.RanksRecoveredAlone != 1 || res.WholeJobRestarts != 0 {
		t.Fatalf("%d injected, %d attempts, %d restarted alone, %d whole-job restarts; want 1, 1, 1, 0\n%s",
			res.Injected, len(res.Attempts), res.RanksRecoveredAlone, res.WholeJobRestarts, &log)
	}
}

// loseNodeWhenHeld runs spec, whose rank told to (--hold-rank) stops at
// its step and waits, and loses node lostNode with its cache once it has
// stopped: mid-run on any machine (the test waits for a condition, not a
// time).
func loseNodeWhenHeld(t *testing.T, spec runSpec, log *bytes.Buffer, held string, lostNode int) runResult {
	t.Helper()
	return launchScripted(t, spec, log, func(c *launch.Config, _ *launch.Coordinators) {
		c.NodeFailures = true
		ch := make(chan []int, 1)
		c.Inject = ch
		go func() {
			for ctx := t.Context(); ctx.Err() == nil; {
				if _, err := os.Stat(held); err == nil {
					ch <- []int{lostNode}
					return
				}
				select {
				case <-ctx.Done():
				case <-time.After(20 * time.Millisecond):
				}
			}
		}()
	}, 3*time.Minute)
}

// A whole node lost mid-run under the strategy: 6 ranks of the torus on
// 3 nodes (ranks 0 and 1 on node0, 2 and 3 on node1, 4 and 5 on node2).
// Rank 2 stops at step 13, after its checkpoint of step 10, and node1 is
// lost with its cache: ranks 2 and 3, their checkpoints' node copies,
// and what node1 protected for others — the logs and checkpoint copies
// of ranks 0 and 1, whose protector (uncoord.ProtectorOf) is rank 2.
// (Before, ranks 2 and 3 were restarted alone and rank 0 then failed
// truncating its log at its lost protector, which stopped the job.)
// Ranks 2 and 3 are restarted alone on node1's replacement, from their
// copies and logs at rank 4's node; ranks 0 and 1 see their logs gone and
// re-protect at once, with a checkpoint and a new log at rank 2's node;
// ranks 4 and 5 go on untouched. One attempt, the failure-free result.
func TestRunUncoordinatedNodeLostRecoversInPlace(t *testing.T) {
	held := filepath.Join(t.TempDir(), "held")
	spec, log, starts := torusSpec(t, "--hold-rank", "2", "--kill-step", "13", "--held", held)
	spec.nodes = 3
	res := loseNodeWhenHeld(t, spec, log, held, 1)
	if want := torusReference(); res.Result != want {
		t.Fatalf("result %q, want the failure-free %q\n%s", res.Result, want, log)
	}
	if res.Injected != 1 || len(res.Attempts) != 1 || res.RanksRecoveredAlone != 2 || res.WholeJobRestarts != 0 {
		t.Fatalf("%d injected, %d attempts, %d restarted alone, %d whole-job restarts; want 1, 1, 2, 0\n%s",
			res.Injected, len(res.Attempts), res.RanksRecoveredAlone, res.WholeJobRestarts, log)
	}
	for _, want := range []string{
		"node node1 lost under the uncoordinated strategy: ranks 2,3 restart alone from their checkpoint copies and logs at their protectors; ranks 0,1, whose logs and checkpoint copies it held, re-protect with a checkpoint at once (0 → 2 on node1, 1 → 2 on node1)",
		"[rank 0] rank 0: its protector's node was lost with its log: re-protected at step",
		"[rank 1] rank 1: its protector's node was lost with its log: re-protected at step",
	} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("the output does not say %q:\n%s", want, log)
		}
	}
	per, alone := processes(t, starts)
	for r := range spec.ranks {
		want := 1 + boolInt(r == 2 || r == 3)
		if per[r] != want || alone[r] != want-1 {
			t.Errorf("rank %d ran in %d processes (%d restarted alone), want %d (%d)", r, per[r], alone[r], want, want-1)
		}
	}
}

// Beyond tolerance: the 6 ranks on one node, which nothing can protect
// (one failure domain: each rank's log and checkpoint live in its own
// cache), and that node lost. The whole job is relaunched, the event
// saying why, and the result is the failure-free one.
func TestRunUncoordinatedNodeLostBeyondToleranceRelaunchesWholeJob(t *testing.T) {
	held := filepath.Join(t.TempDir(), "held")
	spec, log, starts := torusSpec(t, "--hold-rank", "2", "--kill-step", "13", "--held", held)
	spec.nodes = 1
	res := loseNodeWhenHeld(t, spec, log, held, 0)
	if want := torusReference(); res.Result != want {
		t.Fatalf("result %q, want the failure-free %q\n%s", res.Result, want, log)
	}
	if res.Injected != 1 || len(res.Attempts) != 2 || res.RanksRecoveredAlone != 0 || res.WholeJobRestarts != 1 {
		t.Fatalf("%d injected, %d attempts, %d restarted alone, %d whole-job restarts; want 1, 2, 0, 1\n%s",
			res.Injected, len(res.Attempts), res.RanksRecoveredAlone, res.WholeJobRestarts, log)
	}
	if want := "a failure relaunches the whole job: node node0 lost under the uncoordinated strategy with ranks 0,1,2,3,4,5 and every copy of the checkpoints and logs of ranks 0,1,2,3,4,5"; !strings.Contains(log.String(), want) {
		t.Errorf("no progress line says %q:\n%s", want, log)
	}
	per, alone := processes(t, starts)
	for r := range spec.ranks {
		if per[r] != 2 || alone[r] != 0 {
			t.Errorf("rank %d ran in %d processes (%d restarted alone), want 2 (0): one a launch", r, per[r], alone[r])
		}
	}
}

// A rank's protector lost in the middle of its checkpoint, after the
// runtime looked for its log (which would have re-protected it) and
// before the log's truncation (its log's directory removed from the
// application's save): the truncation fails, and the rank exits with 66 (its log cannot
// serve) rather than 1, which the launcher would not relaunch (no
// checkpoint is ever committed under the strategy): the whole job is
// relaunched, with the failure-free result.
func TestRunUncoordinatedProtectorLostMidCheckpointRelaunchesWholeJob(t *testing.T) {
	const victim = 3
	spec, log, _ := torusSpec(t, "--lose-log-rank", strconv.Itoa(victim), "--kill-step", "10")
	res := launchRelaunched(t, spec, log, 0)
	wantExit66(t, res, victim)
	if !strings.Contains(log.String(), "its protector was lost with its log during its checkpoint") {
		t.Errorf("the victim's output does not say its protector was lost:\n%s", log)
	}
}
