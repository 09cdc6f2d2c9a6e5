package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/ckpt/ckpt/internal/jobdir"
	"github.com/ckpt/ckpt/internal/policy"
)

// jobsRoot gives the test a temp directory of its own, so that the default
// root of jobs is the test's: TMPDIR/ckpt-run.
func jobsRoot(t *testing.T) string {
	t.Helper()
	tmp := filepath.Join(t.TempDir(), "a", "b")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", tmp)
	if jobdir.DefaultRoot() != filepath.Join(tmp, "ckpt-run") {
		t.Fatalf("the default root %s is not under TMPDIR %s", jobdir.DefaultRoot(), tmp)
	}
	return jobdir.DefaultRoot()
}

// cliSpec builds the job `ckpt run -n ranks FLAGS -- ckpt ARGS` would run
// (the test binary as ckpt), with its output in the returned log.
func cliSpec(t *testing.T, ranks int, args []string, flags ...string) (runSpec, *lockedLog) {
	t.Helper()
	t.Setenv(asCkpt, "1")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c := &cobra.Command{}
	rf := addRunFlags(c)
	if err := c.Flags().Parse(flags); err != nil {
		t.Fatal(err)
	}
	s, err := rf.spec(ranks, exe, args)
	if err != nil {
		t.Fatal(err)
	}
	w := &lockedLog{b: new(strings.Builder)}
	s.output, s.progress = w, w
	return s, w
}

// lockedLog collects the output of a job's ranks and launcher, and can be
// read while they write.
type lockedLog struct {
	mu sync.Mutex
	b  *strings.Builder
}

func (w *lockedLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *lockedLog) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// waitFor polls cond until it holds, failing the test after limit.
func waitFor(t *testing.T, what string, limit time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, limit)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestJobsOfOtherConfigurationsApart: the same program with another -n is
// another job. Its run neither restores nor deletes the checkpoints of a
// halted job of the first configuration, which 'ckpt ls' still finds; and
// a run naming the first job with the other configuration is refused.
func TestJobsOfOtherConfigurationsApart(t *testing.T) {
	jobsRoot(t)
	two, log2 := cliSpec(t, 2, himenoArgs, "--nodes", "2", "--interval", "5steps")
	four, log4 := cliSpec(t, 4, himenoArgs, "--nodes", "4", "--interval", "5steps")
	if two.cacheRoot == four.cacheRoot {
		t.Fatalf("-n 2 and -n 4 of one program share the directory %s", two.cacheRoot)
	}
	// The -n 2 job, halted after its second checkpoint: its caches stay.
	cfg, coords, err := two.config()
	if err != nil {
		t.Fatal(err)
	}
	afterCommits(coords, 2, func() { os.WriteFile(two.haltFile(), nil, 0o644) })
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	res, err := two.launch(ctx, cfg, coords)
	if err != nil || !res.Halted {
		t.Fatalf("the -n 2 job: halted %v, %v\n%s", res.Halted, err, log2)
	}
	name2 := two.dir().Name
	before := runJSON(t, "ls", "--job", name2, "--json")["checkpoints"].([]any)
	if len(before) < 2 {
		t.Fatalf("ckpt ls --job %s after the halt lists %d checkpoints, want at least 2", name2, len(before))
	}
	// The -n 4 job runs to its end from scratch and cleans up after itself.
	cfg, coords, err = four.config()
	if err != nil {
		t.Fatal(err)
	}
	res, err = four.launch(ctx, cfg, coords)
	if err != nil || res.Halted {
		t.Fatalf("the -n 4 job: %v\n%s", err, log4)
	}
	if got := res.Attempts[0].Restored; got != "none" {
		t.Errorf("the -n 4 job restored from %q: another configuration's checkpoint", got)
	}
	if _, err := os.Stat(four.cacheRoot); !os.IsNotExist(err) {
		t.Errorf("the finished -n 4 job's directory stayed: %v", err)
	}
	after := runJSON(t, "ls", "--job", name2, "--json")["checkpoints"].([]any)
	if len(after) != len(before) {
		t.Errorf("the halted -n 2 job had %d checkpoints, has %d after the -n 4 job ran", len(before), len(after))
	}
	// Its name with another configuration: refused before anything runs.
	exe, _ := os.Executable()
	checkBadInput(t, []string{name2, "another configuration", "-n 2 --nodes 2"},
		append([]string{"run", "-n", "4", "--job", name2, "--", exe}, himenoArgs...)...)
	if again := runJSON(t, "ls", "--job", name2, "--json")["checkpoints"].([]any); len(again) != len(before) {
		t.Errorf("the refused run changed the job's checkpoints: %d, were %d", len(again), len(before))
	}
	// ckpt ls without a job lists the jobs: the halted one, not running.
	jobs := runJSON(t, "ls", "--json")["jobs"].([]any)
	if len(jobs) != 1 || jobs[0].(map[string]any)["job"] != name2 || jobs[0].(map[string]any)["running"] != false {
		t.Errorf("ckpt ls lists %v, want the halted job %s alone", jobs, name2)
	}
	// inspect and verify find it too, by name or as the one job there.
	newest := before[0].(map[string]any)["name"].(string)
	if insp := runJSON(t, "inspect", newest, "--json"); insp["ranks"] != json.Number("2") {
		t.Errorf("ckpt inspect %s: ranks %v, want 2", newest, insp["ranks"])
	}
	if code, _, stderr := runCLI(t, "verify", newest, "--job", name2); code != exitOK {
		t.Errorf("ckpt verify %s --job %s: exit %d, %s", newest, name2, code, stderr)
	}
}

// TestJobStatusCheckpointHalt runs a job that checkpoints only when asked
// (an interval of an hour) and works on it by its name while it runs: a
// second run is refused naming the PID, status says what it does,
// checkpoint makes it commit one, halt stops it; then, not running, halt
// is refused and status says so.
func TestJobStatusCheckpointHalt(t *testing.T) {
	jobsRoot(t)
	args := []string{"example", "himeno", "--size", "xs", "--iterations", "100000000"}
	spec, log := cliSpec(t, 2, args, "--nodes", "2", "--interval", "1h", "--job", "live")
	cfg, coords, err := spec.config()
	if err != nil {
		t.Fatal(err)
	}
	decided := make(chan struct{})
	var once sync.Once
	coords.OnDecision = func(int64, policy.Decision) { once.Do(func() { close(decided) }) }
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	type outcome struct {
		res runResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := spec.launch(ctx, cfg, coords)
		done <- outcome{res, err}
	}()
	select {
	case <-decided:
	case o := <-done:
		t.Fatalf("the job ended before its first decision round: %v\n%s", o.err, log)
	case <-time.After(2 * time.Minute):
		t.Fatalf("no decision round within 2 minutes\n%s", log)
	}

	exe, _ := os.Executable()
	pid := fmt.Sprint(os.Getpid())
	code, _, stderr := runCLI(t, append([]string{"run", "-n", "2", "--nodes", "2", "--interval", "1h", "--job", "live", "--", exe}, args...)...)
	if code != exitError || !strings.Contains(stderr, "pid "+pid) || !strings.Contains(stderr, "running") {
		t.Errorf("a second run of the running job: exit %d, stderr %q; want a refusal naming pid %s", code, stderr, pid)
	}

	var st map[string]any
	waitFor(t, "ckpt status shows the step", time.Minute, func() bool {
		st = runJSON(t, "status", "--job", "live", "--json")
		return st["step"] != nil
	})
	if st["running"] != true || st["pid"] != json.Number(pid) || st["attempt"] != json.Number("1") ||
		st["state"] != "running" || st["checkpoints"] != json.Number("0") || st["last_checkpoint"] != nil {
		t.Errorf("status of the running job before any checkpoint: %v", st)
	}

	ck := runJSON(t, "checkpoint", "--job", "live", "--json")
	name, _ := ck["checkpoint"].(string)
	if name == "" || ck["step"] == nil {
		t.Fatalf("ckpt checkpoint: %v, want the checkpoint committed and its step\n%s", ck, log)
	}
	st = runJSON(t, "status", "--job", "live", "--json")
	last, _ := st["last_checkpoint"].(map[string]any)
	if st["checkpoints"] != json.Number("1") || st["checkpoint_requests"] != json.Number("1") ||
		last == nil || last["name"] != name || last["step"] != ck["step"] || last["level"] != "cache" {
		t.Errorf("status after ckpt checkpoint: %v", st)
	}

	if code, stdout, stderr := runCLI(t, "halt", "--job", "live"); code != exitOK || !strings.Contains(stdout, pid) {
		t.Fatalf("ckpt halt of the running job: exit %d, %q %q", code, stdout, stderr)
	}
	var o outcome
	select {
	case o = <-done:
	case <-time.After(2 * time.Minute):
		t.Fatalf("the job did not halt within 2 minutes\n%s", log)
	}
	if o.err != nil || !o.res.Halted {
		t.Fatalf("halted %v, %v\n%s", o.res.Halted, o.err, log)
	}

	st = runJSON(t, "status", "--job", "live", "--json")
	if st["running"] != false || st["pid"] != nil || st["state"] != "halted" || st["checkpoints"] != json.Number("2") {
		t.Errorf("status of the halted job: %v", st)
	}
	code, stdout, stderr := runCLI(t, "halt", "--job", "live")
	if code != exitError || stdout != "" || !strings.Contains(stderr, "not running") {
		t.Errorf("halt of a job not running: exit %d, %q %q", code, stdout, stderr)
	}
	if _, err := os.Stat(spec.haltFile()); !os.IsNotExist(err) {
		t.Errorf("a refused halt left a request: %v", err)
	}
	if code, _, stderr := runCLI(t, "checkpoint", "--job", "live"); code != exitError || !strings.Contains(stderr, "not running") {
		t.Errorf("checkpoint of a job not running: exit %d, %q", code, stderr)
	}
	ls := runJSON(t, "ls", "--job", "live", "--json")["checkpoints"].([]any)
	if len(ls) != 2 {
		t.Errorf("ckpt ls --job live lists %d checkpoints, want 2 (the one asked for, the halt's)", len(ls))
	}
}

// TestJobNamesStayInTheirRoot: job names that are paths are refused, and
// nothing is written outside the job's own directory.
func TestJobNamesStayInTheirRoot(t *testing.T) {
	root := jobsRoot(t)
	// Directories where a name that escapes would land, made so that a
	// write there would succeed.
	escape := filepath.Join(filepath.Dir(filepath.Dir(root)), "etc")
	for _, d := range []string{escape, root} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"../../etc", ".", "..", "a/b", ".hidden"} {
		for _, cmd := range []string{"halt", "status", "checkpoint"} {
			checkBadInput(t, []string{"--job"}, cmd, "--job", name)
		}
		checkBadInput(t, []string{"--job"}, "ls", "--job", name)
		checkBadInput(t, []string{"--job"}, "run", "-n", "1", "--job", name, "--", "true")
	}
	for _, f := range []string{filepath.Join(escape, "halt"), filepath.Join(root, "halt")} {
		if _, err := os.Stat(f); !os.IsNotExist(err) {
			t.Errorf("%s was written: %v", f, err)
		}
	}
	// A job that does not exist, a root that does not: errors, not empty
	// lists.
	checkBadInput(t, []string{"--job", "nosuch"}, "halt", "--job", "nosuch")
	checkBadInput(t, []string{"--job", "nosuch"}, "ls", "--job", "nosuch")
	checkBadInput(t, []string{"--cache-root", "/does/not/exist"}, "ls", "--cache-root", "/does/not/exist")
	checkBadInput(t, []string{"--cache-root", "/does/not/exist"}, "inspect", "c1", "--cache-root", "/does/not/exist")
	checkBadInput(t, []string{"--cache-root", "/does/not/exist"}, "halt", "--cache-root", "/does/not/exist")
	checkBadInput(t, []string{"no jobs"}, "status")
	if code, stdout, _ := runCLI(t, "ls"); code != exitOK || !strings.Contains(stdout, "no jobs in "+root) {
		t.Errorf("ckpt ls with no jobs: exit %d, %q", code, stdout)
	}
	// A --cache-root with what no job made is not taken, and so never
	// deleted when the job finishes.
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, "notes.txt"), []byte("mine"), 0o644)
	checkBadInput(t, []string{"--cache-root", "notes.txt"}, "run", "-n", "1", "--cache-root", home, "--", "true")
	if b, err := os.ReadFile(filepath.Join(home, "notes.txt")); err != nil || string(b) != "mine" {
		t.Errorf("the foreign directory's file: %q, %v", b, err)
	}
}

// TestLsAfterRun: after `ckpt run --keep-cache`, `ckpt ls` (no flags) finds
// the job, and `ckpt ls --job NAME` its checkpoints: one default root for
// every command.
func TestLsAfterRun(t *testing.T) {
	jobsRoot(t)
	t.Setenv(asCkpt, "1")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCLI(t, append([]string{"run", "-n", "2", "--interval", "5steps", "--keep-cache", "--json", "--", exe}, himenoArgs...)...)
	if code != exitOK {
		t.Fatalf("ckpt run: exit %d\n%s", code, stderr)
	}
	jobs := runJSON(t, "ls", "--json")["jobs"].([]any)
	if len(jobs) != 1 {
		t.Fatalf("ckpt ls lists %d jobs after one run, want 1: %v", len(jobs), jobs)
	}
	job := jobs[0].(map[string]any)
	name, _ := job["job"].(string)
	if !strings.Contains(stderr, "job "+name) {
		t.Errorf("ckpt run did not name its job %q as it started:\n%s", name, stderr)
	}
	if n, _ := toFloat(job["checkpoints"]); n < 1 || job["running"] != false {
		t.Errorf("ckpt ls: %v, want a finished job with checkpoints", job)
	}
	ckpts := runJSON(t, "ls", "--job", name, "--json")["checkpoints"].([]any)
	if len(ckpts) < 1 {
		t.Errorf("ckpt ls --job %s lists no checkpoints after a run that kept its caches", name)
	}
	if code, stdout, _ := runCLI(t, "ls"); code != exitOK || !strings.Contains(stdout, name) {
		t.Errorf("ckpt ls: exit %d\n%s", code, stdout)
	}
}

// TestCheckpointRequests works on a job whose lock this test holds, as
// its runner would: --wait 0 only leaves the request, in the job's
// directory; a job that never checkpoints is refused; a bad --wait is bad
// input.
func TestCheckpointRequests(t *testing.T) {
	root := jobsRoot(t)
	d, err := jobdir.Named(root, "held")
	if err != nil {
		t.Fatal(err)
	}
	l, err := d.Acquire(jobdir.Spec{Program: "app", Ranks: 1, Nodes: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if err := d.WriteStatus(jobdir.Status{Job: "held", PID: os.Getpid(), State: "running", Attempt: 1, Interval: "auto"}); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, "checkpoint", "--job", "held", "--wait", "0")
	if code != exitOK || !strings.Contains(stdout, "requested") {
		t.Fatalf("checkpoint --wait 0: exit %d, %q %q", code, stdout, stderr)
	}
	if !d.Take(jobdir.CheckpointFile) {
		t.Error("no request left in the job's directory")
	}
	checkBadInput(t, []string{"--wait"}, "checkpoint", "--job", "held", "--wait", "-1s")
	d.WriteStatus(jobdir.Status{Job: "held", PID: os.Getpid(), State: "running", Attempt: 1, Interval: "none"})
	code, _, stderr = runCLI(t, "checkpoint", "--job", "held")
	if code != exitError || !strings.Contains(stderr, "--interval none") {
		t.Errorf("checkpoint of a job that never checkpoints: exit %d, %q", code, stderr)
	}
	if d.Pending(jobdir.CheckpointFile) {
		t.Error("a refused request was left")
	}
	// The one running job is meant when none is named.
	if st := runJSON(t, "status", "--json"); st["job"] != "held" || st["running"] != true {
		t.Errorf("status without --job: %v", st)
	}
}

// TestJobCommandsHelp: the commands that act on a job teach how to name it.
func TestJobCommandsHelp(t *testing.T) {
	for _, cmd := range []string{"status", "checkpoint", "halt", "ls", "inspect", "verify", "run"} {
		code, stdout, stderr := runCLI(t, cmd, "--help")
		if code != exitOK || stderr != "" {
			t.Errorf("ckpt %s --help: exit %d, stderr %q", cmd, code, stderr)
		}
		for _, want := range []string{"--job", "--cache-root"} {
			if !strings.Contains(stdout, want) {
				t.Errorf("ckpt %s --help does not mention %s", cmd, want)
			}
		}
	}
}
