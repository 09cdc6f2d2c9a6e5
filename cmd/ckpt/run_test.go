package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/capitest/mpitest"
	"github.com/ckpt/ckpt/internal/inject"
	"github.com/ckpt/ckpt/internal/launch"
	"github.com/ckpt/ckpt/internal/policy"
	"github.com/ckpt/ckpt/internal/testwait"
)

// The test binary doubles as ckpt: ranks started by the jobs of these tests
// run it with asCkpt set.
const asCkpt = "CKPT_TEST_AS_CKPT"

func TestMain(m *testing.M) {
	if os.Getenv(asTorus) == "1" {
		os.Exit(torusMain(os.Args[1:]))
	}
	if os.Getenv(asCkpt) == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	code := m.Run()
	mpitest.Cleanup() // the C API installed by the SCR applications' tests
	os.Exit(code)
}

// himenoArgs is the example the job tests run: small enough for ranks
// built with the race detector; failures land after its second checkpoint
// (step 10), long before its end.
var himenoArgs = []string{"example", "himeno", "--size", "xs", "--iterations", "200"}

// reference is the example's result computed by one process without
// failures: the checksum is the same for any number of ranks.
var reference = sync.OnceValues(func() (string, error) {
	var out, errb bytes.Buffer
	if code := run(himenoArgs, &out, &errb); code != exitOK {
		return "", fmt.Errorf("reference run: exit %d: %s", code, errb.String())
	}
	return strings.TrimSpace(out.String()), nil
})

// jobSpec is a job of the test binary's himeno example: 4 ranks, one per
// node, XOR across the 4, a checkpoint every 5 steps.
func jobSpec(t *testing.T) (runSpec, *bytes.Buffer) {
	t.Helper()
	exe, p := selfEvery5(t, asCkpt)
	var log bytes.Buffer
	w := &syncWriter{b: &log}
	return runSpec{ranks: 4, nodes: 4, program: exe, args: himenoArgs, redundancy: "xor:4",
		interval: p, cacheRoot: filepath.Join(t.TempDir(), "caches"), retries: 6,
		heartbeat: 10 * time.Second, output: w, progress: w}, &log
}

// selfEvery5 is the test binary, to run as the program that role (an
// environment variable set here) names, and a policy of a checkpoint
// every 5 steps.
func selfEvery5(t *testing.T, role string) (string, policy.Policy) {
	t.Helper()
	t.Setenv(role, "1")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.Parse("5steps")
	if err != nil {
		t.Fatal(err)
	}
	return exe, p
}

type syncWriter struct {
	mu sync.Mutex
	b  *bytes.Buffer
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// afterCommits calls fn once, when the first launch of the job has
// committed its n-th checkpoint: the moment a test makes something happen,
// whatever the machine's speed.
func afterCommits(coords *launch.Coordinators, n int, fn func()) {
	var count atomic.Int64
	coords.OnCommit = func(inc uint64, name string) {
		if inc == 0 && count.Add(1) == int64(n) {
			go fn() // not in the coordinator's loop
		}
	}
}

// injectAfter injects failures of targets once the first launch has
// committed its second checkpoint.
func injectAfter(c *launch.Config, coords *launch.Coordinators, targets ...int) {
	ch := make(chan []int, 1)
	c.Inject = ch
	afterCommits(coords, 2, func() { ch <- targets })
}

// launchScripted runs spec once; mod scripts its failures. Its deadline
// only bounds a hang.
func launchScripted(t *testing.T, spec runSpec, log *bytes.Buffer, mod func(*launch.Config, *launch.Coordinators), deadline time.Duration) runResult {
	t.Helper()
	cfg, coords, err := spec.config()
	if err != nil {
		t.Fatal(err)
	}
	if mod != nil {
		mod(&cfg, coords)
	}
	ctx, cancel := context.WithTimeout(t.Context(), deadline)
	defer cancel()
	res, err := spec.launch(ctx, cfg, coords)
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	return res
}

// runScripted runs spec with the scripted failures and checks that the
// result is the failure-free one.
func runScripted(t *testing.T, spec runSpec, log *bytes.Buffer, mod func(*launch.Config, *launch.Coordinators)) runResult {
	t.Helper()
	res := launchScripted(t, spec, log, mod, 3*time.Minute)
	want, err := reference()
	if err != nil {
		t.Fatal(err)
	}
	if res.Result != want {
		t.Fatalf("result %q, want the failure-free %q\n%s", res.Result, want, log)
	}
	return res
}

func TestRunNodeLossRebuilds(t *testing.T) {
	spec, log := jobSpec(t)
	runNodeLoss(t, spec, log)
	if _, err := os.Stat(spec.cacheRoot); !os.IsNotExist(err) {
		t.Errorf("a finished job's caches stayed: %v", err)
	}
}

// runNodeLoss runs spec with node 1 lost, with its cache, after the
// second checkpoint, and checks that one relaunch rebuilt it.
func runNodeLoss(t *testing.T, spec runSpec, log *bytes.Buffer) runResult {
	t.Helper()
	res := runScripted(t, spec, log, func(c *launch.Config, coords *launch.Coordinators) {
		injectAfter(c, coords, 1)
		c.NodeFailures = true
	})
	if res.Injected != 1 || res.Restarts["rebuild"] != 1 || len(res.Attempts) != 2 {
		t.Errorf("injected %d, restarts %v, attempts %d; want one node lost and one restart rebuilding it\n%s",
			res.Injected, res.Restarts, len(res.Attempts), log)
	}
	return res
}

func TestRunTwoNodesOfASetFromShared(t *testing.T) {
	spec, log := jobSpec(t)
	spec.shared = filepath.Join(t.TempDir(), "shared")
	spec.flushEvery = policy.FlushEvery{K: 2}
	res := runScripted(t, spec, log, func(c *launch.Config, coords *launch.Coordinators) {
		// Two nodes of the one XOR set at once: beyond what parity rebuilds.
		injectAfter(c, coords, 1, 2)
		c.NodeFailures = true
	})
	if res.Restarts["shared"] != 1 {
		t.Errorf("restarts %v: want one from the shared tier\n%s", res.Restarts, log)
	}
}

func TestRunHungRankDetected(t *testing.T) {
	spec, log := jobSpec(t)
	// Long enough that ranks that run do not miss it on a busy machine,
	// so that the hung rank is the one the coordinator names.
	spec.heartbeat = 3 * time.Second
	res := runScripted(t, spec, log, func(c *launch.Config, coords *launch.Coordinators) {
		injectAfter(c, coords, 2)
		c.HangFailures = true
	})
	if len(res.Attempts) != 2 || !strings.Contains(res.Attempts[0].Failure, "rank 2") ||
		!strings.Contains(res.Attempts[0].Failure, "heartbeat") {
		t.Errorf("attempts %+v: want the first ended by rank 2's heartbeat timeout\n%s", res.Attempts, log)
	}
	if res.Restarts["cache"] != 1 {
		t.Errorf("restarts %v: a hung rank loses no cache; want a restart from the caches", res.Restarts)
	}
}

// TestRunCoordinatorLost closes the first attempt's coordinator while the
// job runs, as its crash would: the ranks stop, the launcher starts a new
// coordinator and relaunches them.
func TestRunCoordinatorLost(t *testing.T) {
	spec, log := jobSpec(t)
	res := runScripted(t, spec, log, func(c *launch.Config, coords *launch.Coordinators) {
		first := firstCoord(c)
		afterCommits(coords, 2, func() { (<-first).Close() })
	})
	if len(res.Attempts) != 2 || res.Restarts["cache"] != 1 {
		t.Errorf("attempts %d, restarts %v: want one relaunch restoring from the caches\n%s", len(res.Attempts), res.Restarts, log)
	}
}

func TestRunHaltThenResume(t *testing.T) {
	spec, log := jobSpec(t)
	cfg, coords, err := spec.config()
	if err != nil {
		t.Fatal(err)
	}
	afterCommits(coords, 2, func() { os.WriteFile(spec.haltFile(), nil, 0o644) })
	res, err := spec.launch(t.Context(), cfg, coords)
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	if !res.Halted || !strings.Contains(res.Result, "halted") || len(res.Attempts) != 1 {
		t.Fatalf("halted %v, result %q, attempts %d\n%s", res.Halted, res.Result, len(res.Attempts), log)
	}
	// Started again on the same caches, it resumes and finishes.
	res = runScripted(t, spec, log, nil)
	if res.Attempts[0].Restored != "cache" {
		t.Errorf("the resumed job restored from %q, want the caches", res.Attempts[0].Restored)
	}
}

func TestRunBadInput(t *testing.T) {
	for _, tc := range []struct {
		mention []string
		args    []string
	}{
		{[]string{"-n"}, []string{"run", "--", "true"}},
		{[]string{"--nodes 5"}, []string{"run", "-n", "4", "--nodes", "5", "--", "true"}},
		{[]string{"--redundancy"}, []string{"run", "-n", "4", "--redundancy", "raid6", "--", "true"}},
		{[]string{"--interval", "forever"}, []string{"run", "-n", "2", "--interval", "forever", "--", "true"}},
		{[]string{"--inject-mtti"}, []string{"run", "-n", "2", "--inject-kind", "node", "--", "true"}},
		{[]string{"inject-kind", "host"}, []string{"run", "-n", "2", "--inject-mtti", "5s", "--inject-kind", "host", "--", "true"}},
		{[]string{"--flush-every"}, []string{"run", "-n", "2", "--flush-every", "0", "--", "true"}},
		{[]string{"--cache-durability"}, []string{"run", "-n", "2", "--cache-durability", "disk", "--", "true"}},
		{[]string{"--compress", "zstd"}, []string{"run", "-n", "2", "--compress", "zstd", "--", "true"}},
		{[]string{"--flush-every 3", "--shared"}, []string{"run", "-n", "2", "--flush-every", "3", "--", "true"}},
		{[]string{"--stage-rate", "--staging-servers"}, []string{"run", "-n", "2", "--stage-rate", "5MB/s", "--", "true"}},
		{[]string{"--flush-busy", "--staging-servers"}, []string{"run", "-n", "2", "--flush-busy", "wait", "--", "true"}},
		{[]string{"--staging-servers 2", "--shared"}, []string{"run", "-n", "2", "--staging-servers", "2", "--", "true"}},
		{[]string{"--shared", "s3:bucket", "s3://"}, []string{"run", "-n", "2", "--shared", "s3:bucket", "--", "true"}},
		{[]string{"--flush-every", "--flush"}, []string{"demo", "--flush-every", "3"}},
		{[]string{"--flush-busy", "never"}, []string{"demo", "--flush", "nonblocking", "--flush-busy", "never"}},
		{[]string{"--shared", "s3://"}, []string{"stage", "--shared", "s3:/bad", "--token", "t"}},
		{[]string{"--token"}, []string{"stage", "--shared", "/nonexistent-dir-of-ckpt"}},
		{[]string{"--listen", "nonsense"}, []string{"stage", "--shared", "/nonexistent-dir-of-ckpt", "--token", "t", "--listen", "nonsense"}},
		{[]string{"--buffer", "1 MB"}, []string{"stage", "--shared", "/nonexistent-dir-of-ckpt", "--token", "t", "--chunk-size", "2MB", "--buffer", "1MB"}},
		{[]string{"--writers 0"}, []string{"stage", "--shared", "/nonexistent-dir-of-ckpt", "--token", "t", "--writers", "0"}},
	} {
		checkBadInput(t, tc.mention, tc.args...)
	}
}

func TestDemoJSON(t *testing.T) {
	t.Setenv(asCkpt, "1")
	// The seeded schedule of MTTI 20 s and seed 474644 has its first
	// failure at 0.06 s of job time, which strikes the first launch as soon
	// as it is up however fast or slow the machine, and the second only at
	// 151 s: exactly one failure to recover from. (A seed whose first
	// failure came seconds in let a fast machine finish before it, and a
	// short MTTI let failures come faster than a busy machine relaunched.)
	const mtti, seed = 20 * time.Second, 474644
	sched, err := inject.NewSchedule(inject.Config{MTTI: mtti, Kind: inject.Node, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	first, second := sched.Next(4).At.Seconds(), sched.Next(4).At.Seconds()
	if first > 0.1 || second < 150 {
		t.Fatalf("the schedule changed: failures at %.2f s and %.2f s; pick another seed", first, second)
	}
	code, stdout, stderr := runCLI(t, "demo", "--size", "xs", "--iterations", "150",
		"--mtti", mtti.String(), "--seed", fmt.Sprint(seed), "--json")
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	obj := decodeOne(t, stdout)
	checkKeys(t, obj, []string{"failures_injected", "failures_expected", "restarts_from_cache", "restarts_from_rebuild",
		"restarts_from_shared", "restarts_from_scratch", "scratch_no_checkpoint", "scratch_unrecoverable",
		"efficiency", "attempts", "run_seconds", "reference_seconds", "checkpoint_seconds", "restart_seconds",
		"mtti_seconds", "mtti_applied_seconds", "recovery_seconds",
		"reference_seconds_before", "reference_seconds_after", "level2_failures", "level1_mtti_applied_seconds",
		"step_seconds", "work_in_run_seconds", "efficiency_in_run", "finite_checkpoints"},
		// The model's figures are null when the run took no checkpoint.
		[]string{"result_matches_reference", "result", "reference_result", "interval_seconds", "model_efficiency", "model_error",
			"model_efficiency_applied", "model_error_applied",
			"level2_mtti_applied_seconds", "multilevel_efficiency_applied", "multilevel_error_applied",
			"model_error_applied_chance", "model_error_applied_chance_bias", "model_error_applied_in_run", "multilevel_error_applied_in_run",
			"multilevel_error_applied_chance", "multilevel_error_applied_chance_bias",
			"model_finite_efficiency", "model_finite_error_in_run", "multilevel_finite_efficiency", "multilevel_finite_error_in_run",
			"level2_probability", "level2_failures_predicted", "level1_mtti_predicted_seconds", "level2_mtti_predicted_seconds",
			"multilevel_efficiency_predicted", "multilevel_error_predicted", "multilevel_error_predicted_in_run",
			"multilevel_finite_efficiency_predicted", "multilevel_finite_error_predicted_in_run",
			"multilevel_error_predicted_chance", "multilevel_error_predicted_chance_bias"})
	if obj["result_matches_reference"] != true {
		t.Errorf("result_matches_reference = %v\n%s", obj["result_matches_reference"], stderr)
	}
	runSecs := getNum(t, obj, "run_seconds")
	if runSecs >= second {
		t.Fatalf("the run took %v s, past the second failure at %.0f s", runSecs, second)
	}
	// The first failure was due before the job even started: it must
	// have struck the first launch, and only it.
	if n := getNum(t, obj, "failures_injected"); n != 1 {
		t.Errorf("%v failures injected, want 1 (at %.2f s; the next at %.0f s)\n%s", n, first, second, stderr)
	}
	if !strings.Contains(stderr, "inject: node") {
		t.Errorf("progress shows no injected failure:\n%s", stderr)
	}
	// The failures expected are the injector's job time over the MTTI:
	// the launcher's run, which the demo's run time encloses.
	if e := getNum(t, obj, "failures_expected"); e <= 0 || e*mtti.Seconds() > runSecs+1e-3 {
		t.Errorf("failures_expected %v for a run of %v s at MTTI %v", e, runSecs, mtti)
	}
	if m := getNum(t, obj, "mtti_applied_seconds"); m <= 0 || m > runSecs+1e-3 {
		t.Errorf("mtti_applied_seconds %v for one failure in %v s", m, runSecs)
	}
	// The restart from the failure includes the restart from the failed
	// launch's end.
	if rec, rs := getNum(t, obj, "recovery_seconds"), getNum(t, obj, "restart_seconds"); rec < rs || rec > runSecs {
		t.Errorf("recovery_seconds %v, restart_seconds %v", rec, rs)
	}
	restarts := getNum(t, obj, "restarts_from_cache") + getNum(t, obj, "restarts_from_rebuild") +
		getNum(t, obj, "restarts_from_shared") + getNum(t, obj, "restarts_from_scratch")
	if restarts < 1 {
		t.Errorf("no restart after the failure")
	}
	// An attempt killed before it restored anything counts in none.
	if restarts > getNum(t, obj, "attempts")-1 {
		t.Errorf("%v restarts for %v attempts", restarts, getNum(t, obj, "attempts"))
	}
	if e := getNum(t, obj, "efficiency"); e <= 0 || e > 1.5 {
		t.Errorf("efficiency %v", e)
	}
	t.Logf("%v failures injected (%.3f expected), %v restarts in %v attempts, %v s (reference %v s)", getNum(t, obj, "failures_injected"),
		getNum(t, obj, "failures_expected"), restarts, getNum(t, obj, "attempts"), runSecs, getNum(t, obj, "reference_seconds"))
}

// TestCoordinatorForAnotherLauncher runs `ckpt coordinator` and two ranks
// that take their identity from Slurm's variables, as under srun.
func TestCoordinatorForAnotherLauncher(t *testing.T) {
	t.Setenv(asCkpt, "1")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	coordCmd := exec.Command(exe, "coordinator", "--ranks", "2", "--listen", "127.0.0.1:0", "--interval", "10steps")
	out, err := coordCmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var coordErr bytes.Buffer
	coordCmd.Stderr = &coordErr
	if err := coordCmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer coordCmd.Process.Kill()
	var env []string
	sc := bufio.NewScanner(out)
	for len(env) < 4 && sc.Scan() {
		env = append(env, sc.Text())
	}
	if len(env) != 4 || !strings.HasPrefix(env[0], "CKPT_COORD=127.0.0.1:") || !strings.HasPrefix(env[1], "CKPT_TOKEN=") {
		t.Fatalf("coordinator printed %q", env)
	}
	want, err := reference()
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	outs := make([]bytes.Buffer, 2)
	errs := make([]error, 2)
	for r := range 2 {
		wg.Go(func() {
			cmd := exec.Command(exe, himenoArgs...)
			cmd.Env = append(os.Environ(), env...)
			cmd.Env = append(cmd.Env, fmt.Sprintf("SLURM_PROCID=%d", r), "SLURM_NTASKS=2",
				fmt.Sprintf("CKPT_NODE=n%d", r), "CKPT_CACHE="+filepath.Join(t.TempDir(), "cache"))
			cmd.Stdout = &outs[r]
			cmd.Stderr = &outs[r]
			errs[r] = cmd.Run()
		})
	}
	testwait.Group(t, &wg, "the ranks")
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v\n%s", r, err, outs[r].String())
		}
	}
	if !strings.Contains(outs[0].String(), want) {
		t.Errorf("rank 0 printed %q, want %q", outs[0].String(), want)
	}
	if err := testwait.Cmd(t, coordCmd, "the coordinator"); err != nil {
		t.Errorf("coordinator: %v\n%s", err, coordErr.String())
	}
	checkBadInput(t, []string{"--ranks"}, "coordinator")
	checkBadInput(t, []string{"--interval"}, "coordinator", "--ranks", "2", "--interval", "often")
}
