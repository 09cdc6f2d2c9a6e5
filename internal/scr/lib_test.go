package scr

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/cachetier"
	"github.com/ckpt/ckpt/internal/localcomm"
	"github.com/ckpt/ckpt/internal/sharedtier"
	"github.com/ckpt/ckpt/internal/testwait"
)

// job is a job of n ranks as goroutines (localcomm), each rank on its own
// simulated node (CKPT_SCR_NODES=n), with one prefix and cache base. The
// "MPI" parts of the C layer (the AND of valid, rank 0's answers) are done
// by the tests by hand.
type job struct {
	n      int
	prefix string
	env    map[string]string
}

func newJob(t *testing.T, n int, env map[string]string) *job {
	dir := t.TempDir()
	j := &job{n: n, prefix: filepath.Join(dir, "prefix"), env: map[string]string{
		"SCR_CACHE_BASE": filepath.Join(dir, "cache"), "CKPT_SCR_NODES": fmt.Sprint(n), "SCR_JOB_ID": "t"}}
	for k, v := range env {
		j.env[k] = v
	}
	j.env["SCR_PREFIX"] = j.prefix
	os.MkdirAll(j.prefix, 0o755)
	return j
}

// launch opens every rank's Lib (SCR_Init), a new run of the job.
func (j *job) launch(t *testing.T) []*Lib {
	t.Helper()
	comms := localcomm.Job(j.n)
	libs := make([]*Lib, j.n)
	j.each(t, func(r int) error {
		l, err := Open(context.Background(), Setup{Rank: r, Size: j.n, Comm: comms[r],
			Params: NewParams(envOf(j.env)), Cwd: j.prefix})
		libs[r] = l
		return err
	})
	return libs
}

// each runs f on every rank at once and fails on any rank's error.
func (j *job) each(t *testing.T, f func(r int) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, j.n)
	for r := range j.n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[r] = f(r)
		}()
	}
	testwait.Group(t, &wg, "every rank's call")
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
}

func content(rank, step int) []byte {
	return []byte(strings.Repeat(fmt.Sprintf("rank %d step %d;", rank, step), 1000))
}

// checkpoint is the C sequence Start_checkpoint, Route_file, write,
// Complete_checkpoint on every rank; it returns the dataset's name.
func (j *job) checkpoint(t *testing.T, libs []*Lib, step int) {
	t.Helper()
	j.each(t, func(r int) error {
		l := libs[r]
		if err := l.StartOutput(context.Background(), "SCR_Start_checkpoint", "", FlagCheckpoint); err != nil {
			return err
		}
		p, err := l.RouteFile(fmt.Sprintf("ckpt.%d/rank_%d.ckpt", step, r))
		if err != nil {
			return err
		}
		if err := os.WriteFile(p, content(r, step), 0o600); err != nil {
			return err
		}
		ok, err := l.CompleteOutput(context.Background(), "SCR_Complete_checkpoint", true, true)
		if err == nil && !ok {
			err = fmt.Errorf("rank %d: checkpoint %d did not complete", r, step)
		}
		return err
	})
}

// restart is Have_restart, Start_restart, Route_file and a check of every
// byte, Complete_restart with the AND of valid (forced false if bad); it
// returns the dataset's name ("" when none) and the step its files hold.
func (j *job) restart(t *testing.T, libs []*Lib, bad bool) (string, int) {
	t.Helper()
	names := make([]string, j.n)
	steps := make([]int, j.n)
	j.each(t, func(r int) error {
		name, have, err := libs[r].HaveRestart(context.Background())
		if err != nil || !have {
			return err
		}
		got, err := libs[r].StartRestart()
		if err != nil || got != name {
			return fmt.Errorf("Start_restart: %q, %v, want %q", got, err, name)
		}
		names[r] = name
		return nil
	})
	if names[0] == "" {
		return "", 0
	}
	valid := make([]bool, j.n)
	j.each(t, func(r int) error {
		// The dataset holds one ckpt.STEP directory: find STEP by trying.
		for step := 1; step <= 100; step++ {
			p, err := libs[r].RouteFile(fmt.Sprintf("ckpt.%d/rank_%d.ckpt", step, r))
			if err != nil {
				continue
			}
			b, err := os.ReadFile(p)
			valid[r] = err == nil && bytes.Equal(b, content(r, step))
			steps[r] = step
			return nil
		}
		return fmt.Errorf("rank %d: no ckpt.STEP/rank_%d.ckpt in %q", r, r, names[r])
	})
	all := !bad
	for r := range j.n {
		all = all && valid[r]
		if names[r] != names[0] || steps[r] != steps[0] {
			t.Fatalf("ranks restarted from different datasets: %v steps %v", names, steps)
		}
	}
	j.each(t, func(r int) error {
		ok, err := libs[r].CompleteRestart(context.Background(), all)
		if err == nil && ok != all {
			err = fmt.Errorf("Complete_restart(%v) = %v", all, ok)
		}
		return err
	})
	if !all && !bad {
		t.Fatalf("restart from %s: a rank read wrong bytes", names[0])
	}
	return names[0], steps[0]
}

// expectRestart is a run that only restarts: it must restore dataset name
// at step, then finalizes.
func (j *job) expectRestart(t *testing.T, name string, step int) {
	t.Helper()
	libs := j.launch(t)
	if got, s := j.restart(t, libs, false); got != name || s != step {
		t.Fatalf("restarted from %q step %d, want %q step %d", got, s, name, step)
	}
	j.finalize(t, libs)
}

func (j *job) finalize(t *testing.T, libs []*Lib) {
	t.Helper()
	j.each(t, func(r int) error { return libs[r].Finalize(context.Background()) })
}

// N checkpoints, then a new run restarts from the newest; a checkpoint
// the application finds wrong (Complete_restart(0)) is passed over for the
// one before, in this run and the next.
func TestCheckpointsThenRestart(t *testing.T) {
	j := newJob(t, 4, nil)
	libs := j.launch(t)
	if name, _ := j.restart(t, libs, false); name != "" {
		t.Fatalf("a fresh job restarted from %q", name)
	}
	for step := 1; step <= 3; step++ {
		j.checkpoint(t, libs, step)
	}
	j.finalize(t, libs)

	libs = j.launch(t)
	if name, step := j.restart(t, libs, false); name != "scr.dataset.3" || step != 3 {
		t.Fatalf("restarted from %q step %d, want scr.dataset.3", name, step)
	}
	if name, _, _ := libs[0].HaveRestart(context.Background()); name != "" {
		t.Errorf("after a completed restart Have_restart offers %q", name)
	}
	j.finalize(t, libs)

	libs = j.launch(t)
	if name, _ := j.restart(t, libs, true); name != "scr.dataset.3" {
		t.Fatalf("restarted from %q, want scr.dataset.3", name)
	}
	if name, step := j.restart(t, libs, false); name != "scr.dataset.2" || step != 2 {
		t.Fatalf("after Complete_restart(0): %q step %d, want scr.dataset.2", name, step)
	}
	// Ids go on after the newest ever used.
	j.checkpoint(t, libs, 4)
	if e := libs[0].index.Find("scr.dataset.4"); e == nil || e.Ckpt != 4 {
		t.Errorf("the next checkpoint: %+v, want scr.dataset.4, checkpoint id 4", e)
	}
	j.finalize(t, libs)
	if _, err := os.Stat(filepath.Join(j.prefix, ".ckpt", "scr.dataset.3.manifest")); err != nil {
		t.Errorf("the failed checkpoint must stay on the prefix's tier: %v", err)
	}
	libs = j.launch(t)
	if name, step := j.restart(t, libs, false); name != "scr.dataset.4" || step != 4 {
		t.Fatalf("third run: %q step %d, want scr.dataset.4", name, step)
	}
	j.finalize(t, libs)
}

// A lost node's cache is rebuilt from the XOR set; with two nodes of the
// set lost, the checkpoint comes from the prefix (flushed at Finalize).
func TestNodesLost(t *testing.T) {
	j := newJob(t, 4, map[string]string{"SCR_COPY_TYPE": "XOR", "SCR_SET_SIZE": "4"})
	libs := j.launch(t)
	j.checkpoint(t, libs, 1)
	j.checkpoint(t, libs, 2)
	j.finalize(t, libs)
	cache := func(node int) string { return CacheDir(NewParams(envOf(j.env)), fmt.Sprintf("node%d", node)) }

	for _, c := range []struct {
		what  string
		lose  []int
		where string
	}{{"one node lost", []int{1}, "rebuild"}, {"two nodes lost", []int{0, 2}, "shared"}} {
		for _, n := range c.lose {
			os.RemoveAll(cache(n))
		}
		libs = j.launch(t)
		if name, step := j.restart(t, libs, false); name != "scr.dataset.2" || step != 2 {
			t.Fatalf("%s: %q step %d, want scr.dataset.2", c.what, name, step)
		}
		if src := libs[0].lastSource; src != c.where {
			t.Errorf("%s: restored from %q, want %s", c.what, src, c.where)
		}
		j.finalize(t, libs)
	}
}

// An OUTPUT dataset's files appear at their paths under the prefix; a
// checkpoint not flushed does not.
func TestOutputAtItsPaths(t *testing.T) {
	j := newJob(t, 2, nil)
	libs := j.launch(t)
	j.each(t, func(r int) error {
		l := libs[r]
		if err := l.StartOutput(context.Background(), "SCR_Start_output", "viz.1", FlagOutput); err != nil {
			return err
		}
		p, err := l.RouteFile(filepath.Join(j.prefix, "viz", "1", fmt.Sprintf("part.%d", r)))
		if err != nil {
			return err
		}
		if strings.HasPrefix(p, j.prefix) {
			return fmt.Errorf("routed to %s, under the prefix: want the cache", p)
		}
		os.WriteFile(p, content(r, 1), 0o600)
		ok, err := l.CompleteOutput(context.Background(), "SCR_Complete_output", true, true)
		if err == nil && !ok {
			err = errors.New("output did not complete")
		}
		return err
	})
	for r := range 2 {
		b, err := os.ReadFile(filepath.Join(j.prefix, "viz", "1", fmt.Sprintf("part.%d", r)))
		if err != nil || !bytes.Equal(b, content(r, 1)) {
			t.Errorf("rank %d's output file at its path: %v", r, err)
		}
	}
	j.checkpoint(t, libs, 1)
	if _, err := os.Stat(filepath.Join(j.prefix, "ckpt.1")); !os.IsNotExist(err) {
		t.Errorf("checkpoint 1 (SCR_FLUSH 10) is at the prefix before Finalize: %v", err)
	}
	if name, _ := j.restart(t, libs, false); name != "" {
		t.Errorf("after output, Have_restart offers %q", name)
	}
	j.finalize(t, libs)
	if _, err := os.Stat(filepath.Join(j.prefix, "ckpt.1", "rank_1.ckpt")); err != nil {
		t.Errorf("Finalize flushes the newest checkpoint: %v", err)
	}
	libs = j.launch(t)
	if name, _ := j.restart(t, libs, false); name != "scr.dataset.2" {
		t.Errorf("an output-only dataset is no checkpoint: restarted from %q, want scr.dataset.2", name)
	}
	j.finalize(t, libs)
}

// Drop forgets, Current picks an older one, Delete removes a dataset from
// the caches, the tier and the prefix.
func TestDropDeleteCurrent(t *testing.T) {
	j := newJob(t, 2, map[string]string{"SCR_FLUSH": "1"})
	libs := j.launch(t)
	for step := 1; step <= 3; step++ {
		j.checkpoint(t, libs, step)
	}
	ctx := context.Background()
	j.each(t, func(r int) error { return libs[r].Drop(ctx, "scr.dataset.3") })
	j.each(t, func(r int) error { return libs[r].Drop(ctx, "no such") })
	j.finalize(t, libs)

	libs = j.launch(t)
	if name, _ := j.restart(t, libs, false); name != "scr.dataset.2" {
		t.Fatalf("after dropping 3: %q, want scr.dataset.2", name)
	}
	j.finalize(t, libs)

	libs = j.launch(t)
	j.each(t, func(r int) error { return libs[r].Current(ctx, "scr.dataset.1") })
	if err := libs[0].Current(ctx, "scr.dataset.9"); err == nil {
		t.Errorf("Current of an unknown checkpoint succeeded")
	}
	if name, step := j.restart(t, libs, false); name != "scr.dataset.1" || step != 1 {
		t.Fatalf("Current(1): %q step %d", name, step)
	}
	j.each(t, func(r int) error { return libs[r].Delete(ctx, "scr.dataset.2") })
	if _, err := os.Stat(filepath.Join(j.prefix, "ckpt.2")); !os.IsNotExist(err) {
		t.Errorf("Delete left the prefix's ckpt.2: %v", err)
	}
	if _, err := os.Stat(filepath.Join(j.prefix, ".ckpt", "scr.dataset.2.manifest")); !os.IsNotExist(err) {
		t.Errorf("Delete left the tier's manifest: %v", err)
	}
	j.finalize(t, libs)

	libs = j.launch(t)
	if name, _ := j.restart(t, libs, false); name != "scr.dataset.1" {
		t.Fatalf("after Delete(2), with 3 dropped: %q, want scr.dataset.1", name)
	}
	j.finalize(t, libs)

	// SCR_CURRENT names the one to start from, as SCR_Current does.
	j.env["SCR_CURRENT"] = "scr.dataset.1"
	libs = j.launch(t)
	if name, _ := j.restart(t, libs, false); name != "scr.dataset.1" {
		t.Fatalf("SCR_CURRENT: %q", name)
	}
	j.finalize(t, libs)
}

// Misuses are *Misuse errors naming the call; SCR_ENABLE=0 fails Open.
func TestMisuseAndDisabled(t *testing.T) {
	j := newJob(t, 1, nil)
	libs := j.launch(t)
	l := libs[0]
	var m *Misuse
	if _, err := l.StartRestart(); !errors.As(err, &m) || m.Call != "SCR_Start_restart" {
		t.Errorf("Start_restart without a checkpoint: %v, want a misuse", err)
	}
	if _, err := l.CompleteOutput(context.Background(), "SCR_Complete_output", true, true); !errors.As(err, &m) {
		t.Errorf("Complete_output in IDLE: %v", err)
	}
	if err := l.StartOutput(context.Background(), "SCR_Start_output", "x", FlagOutput); err != nil {
		t.Fatal(err)
	}
	if _, err := l.RouteFile("/etc/passwd"); !errors.As(err, &m) || !strings.Contains(err.Error(), "not under the prefix") {
		t.Errorf("routing a file outside the prefix: %v", err)
	}
	if _, err := l.NeedCheckpoint(context.Background()); !errors.As(err, &m) {
		t.Errorf("Need_checkpoint in OUTPUT: %v", err)
	}
	if ok, err := l.CompleteOutput(context.Background(), "SCR_Complete_output", false, true); ok || err != nil {
		t.Errorf("Complete_output(0): %v %v, want false", ok, err)
	}
	if err := l.StartOutput(context.Background(), "SCR_Start_output", "x", 8); !errors.As(err, &m) {
		t.Errorf("unknown flags: %v", err)
	}
	if p, err := l.RouteFile("plain"); p != "plain" || err != nil {
		t.Errorf("Route_file outside a phase: %q %v", p, err)
	}
	j.finalize(t, libs)

	p := NewParams(envOf(map[string]string{"SCR_ENABLE": "0"}))
	if _, err := Open(context.Background(), Setup{Rank: 0, Size: 1, Params: p, Cwd: t.TempDir()}); !errors.Is(err, ErrDisabled) {
		t.Errorf("SCR_ENABLE=0: %v, want ErrDisabled", err)
	}
}

// Should_exit and Need_checkpoint follow the halt file and
// SCR_HALT_SECONDS before the end time.
func TestHalt(t *testing.T) {
	end := time.Now().Add(time.Hour).Unix()
	j := newJob(t, 1, map[string]string{"SCR_HALT_SECONDS": "7200", "CKPT_SCR_END_TIME": fmt.Sprint(end)})
	libs := j.launch(t)
	if exit, err := libs[0].ShouldExit(); !exit || err != nil {
		t.Errorf("an hour before the end with SCR_HALT_SECONDS=7200: Should_exit %v %v", exit, err)
	}
	j.finalize(t, libs)
	delete(j.env, "SCR_HALT_SECONDS")
	libs = j.launch(t)
	if exit, _ := libs[0].ShouldExit(); exit {
		t.Errorf("without a halt, Should_exit says yes")
	}
	if need, _ := libs[0].NeedCheckpoint(context.Background()); need {
		t.Errorf("without a halt or an interval, Need_checkpoint says yes")
	}
	os.WriteFile(HaltFile(j.prefix), nil, 0o644)
	if exit, _ := libs[0].ShouldExit(); !exit {
		t.Errorf("with the halt file, Should_exit says no")
	}
	if need, _ := libs[0].NeedCheckpoint(context.Background()); !need {
		t.Errorf("with the halt file, Need_checkpoint says no")
	}
	j.finalize(t, libs)
}

// The collectives the C layer does over ckpt instead of MPI when ckpt run
// started the ranks as MPI singletons.
func TestAgreeOverCkpt(t *testing.T) {
	j := newJob(t, 3, nil)
	libs := j.launch(t)
	ctx := context.Background()
	j.each(t, func(r int) error {
		all, any, err := libs[r].AllValid(ctx, r != 1, 0)
		if err == nil && (all || any) {
			err = fmt.Errorf("AllValid with rank 1 invalid and no files said %v, any files %v", all, any)
		}
		return err
	})
	j.each(t, func(r int) error {
		all, any, err := libs[r].AllValid(ctx, true, r/2)
		if err == nil && (!all || !any) {
			err = fmt.Errorf("AllValid, all valid and rank 2 with a file, said %v, any files %v", all, any)
		}
		return err
	})
	j.each(t, func(r int) error {
		rc := 0
		if r == 2 {
			rc = 1 // this rank's call failed: every rank's does
		}
		worst, v, err := libs[r].RootAnswer(ctx, rc, 10+r)
		if err == nil && (v != 10 || worst != 1) {
			err = fmt.Errorf("RootAnswer = %d, %d, want rank 2's 1 and rank 0's 10", worst, v)
		}
		return err
	})
	j.each(t, func(r int) error { return libs[r].Same(ctx, "SCR_Start_output", "dataset name", "a") })
	j.each(t, func(r int) error {
		var m *Misuse
		err := libs[r].Same(ctx, "SCR_Start_output", "dataset name", fmt.Sprint("name", r%2))
		if !errors.As(err, &m) || !strings.Contains(err.Error(), `rank 1 has "name1", rank 0 "name0"`) {
			return fmt.Errorf("names differing: %v", err)
		}
		return nil
	})
	j.finalize(t, libs)

	for _, c := range []struct {
		mpiRank, mpiSize int
		env              map[string]string
		rank, size       int
		via, err         bool
	}{
		{2, 4, map[string]string{"CKPT_COORD": "x", "CKPT_RANK": "1", "CKPT_SIZE": "4"}, 2, 4, false, false},
		{0, 1, nil, 0, 1, false, false},
		{0, 1, map[string]string{"CKPT_COORD": "x", "CKPT_RANK": "3", "CKPT_SIZE": "4"}, 3, 4, true, false},
		{0, 1, map[string]string{"CKPT_COORD": "x", "CKPT_RANK": "4", "CKPT_SIZE": "4"}, 0, 0, false, true},
	} {
		r, s, via, err := Identity(c.mpiRank, c.mpiSize, envOf(c.env))
		if r != c.rank || s != c.size || via != c.via || (err != nil) != c.err {
			t.Errorf("Identity(%d, %d, %v) = %d %d %v %v", c.mpiRank, c.mpiSize, c.env, r, s, via, err)
		}
	}
}

// Several ranks routing one file, each writing its own region (SCR's
// shared-file mode): each reads its region back at restart, and the file
// at the prefix holds every rank's region.
func TestSharedFile(t *testing.T) {
	const region = 10000 // not a multiple of a block: ranks share blocks
	j := newJob(t, 3, map[string]string{"SCR_FLUSH": "1"})
	libs := j.launch(t)
	j.each(t, func(r int) error {
		l := libs[r]
		if err := l.StartOutput(context.Background(), "SCR_Start_output", "shared.1", FlagCheckpoint|FlagOutput); err != nil {
			return err
		}
		p, err := l.RouteFile("shared.dat")
		if err != nil {
			return err
		}
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE, 0o600)
		if err != nil {
			return err
		}
		_, err = f.WriteAt(content(r, 1)[:region], int64(r)*region)
		f.Close()
		if err != nil {
			return err
		}
		ok, err := l.CompleteOutput(context.Background(), "SCR_Complete_output", true, true)
		if err == nil && !ok {
			err = errors.New("the shared-file dataset did not complete")
		}
		return err
	})
	b, err := os.ReadFile(filepath.Join(j.prefix, "shared.dat"))
	if err != nil || len(b) != 3*region {
		t.Fatalf("the shared file at the prefix: %d bytes, %v; want %d", len(b), err, 3*region)
	}
	for r := range 3 {
		if !bytes.Equal(b[r*region:(r+1)*region], content(r, 1)[:region]) {
			t.Errorf("rank %d's region of the shared file at the prefix is wrong", r)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(j.prefix, "shared.dat.*")); len(m) > 0 {
		t.Errorf("temporaries left at the prefix: %v", m)
	}
	j.finalize(t, libs)

	libs = j.launch(t)
	j.each(t, func(r int) error {
		name, have, err := libs[r].HaveRestart(context.Background())
		if err != nil || !have || name != "shared.1" {
			return fmt.Errorf("Have_restart: %q %v %v", name, have, err)
		}
		libs[r].StartRestart()
		p, err := libs[r].RouteFile("shared.dat")
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil || len(b) < (r+1)*region || !bytes.Equal(b[r*region:(r+1)*region], content(r, 1)[:region]) {
			return fmt.Errorf("rank %d: its region of the shared file after restart is wrong (%v)", r, err)
		}
		_, err = libs[r].CompleteRestart(context.Background(), true)
		return err
	})
	j.finalize(t, libs)
}

// A dataset name may be reused once its older dataset is gone: deleted,
// marked failed by Complete_restart(0), or dropped; reusing the name of
// one still there is a misuse.
func TestNameReuse(t *testing.T) {
	j := newJob(t, 2, nil)
	ctx := context.Background()
	libs := j.launch(t)
	write := func(name string, step int) error {
		return func() error {
			var errs = make([]error, j.n)
			var wg sync.WaitGroup
			for r := range j.n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					l := libs[r]
					if errs[r] = l.StartOutput(ctx, "SCR_Start_output", name, FlagCheckpoint); errs[r] != nil {
						return
					}
					p, _ := l.RouteFile(fmt.Sprintf("ckpt.%d/rank_%d.ckpt", step, r))
					os.WriteFile(p, content(r, step), 0o600)
					_, errs[r] = l.CompleteOutput(ctx, "SCR_Complete_output", true, true)
				}()
			}
			testwait.Group(t, &wg, "every rank's dataset")
			return errs[0]
		}()
	}
	if err := write("run", 1); err != nil {
		t.Fatal(err)
	}
	var m *Misuse
	if err := write("run", 2); !errors.As(err, &m) || !strings.Contains(err.Error(), "SCR_Delete it") {
		t.Fatalf("reusing the name of a dataset still there: %v, want a misuse", err)
	}
	j.finalize(t, libs)

	libs = j.launch(t)
	if name, _ := j.restart(t, libs, true); name != "run" {
		t.Fatalf("restarted from %q, want run", name)
	}
	if err := write("run", 3); err != nil {
		t.Fatalf("reusing the name of a failed checkpoint: %v", err)
	}
	if err := write("later", 4); err != nil {
		t.Fatal(err)
	}
	j.finalize(t, libs)

	// A run that goes back writes its steps again: the names earlier runs
	// wrote, older or newer than the checkpoint it resumed from, and that
	// checkpoint's own; a name this run wrote is not.
	libs = j.launch(t)
	j.each(t, func(r int) error { return libs[r].Current(ctx, "run") })
	if name, step := j.restart(t, libs, false); name != "run" || step != 3 {
		t.Fatalf("restarted from %q step %d, want the new run, step 3", name, step)
	}
	if err := write("later", 5); err != nil {
		t.Fatalf("writing again a name of the abandoned future: %v", err)
	}
	if err := write("run", 6); err != nil {
		t.Fatalf("writing again the name of the checkpoint restarted from: %v", err)
	}
	if err := write("later", 7); !errors.As(err, &m) {
		t.Fatalf("reusing a name this run wrote: %v, want a misuse", err)
	}
	j.finalize(t, libs)
	j.expectRestart(t, "run", 6)

	// A run that starts from the beginning (no restart) abandons every
	// earlier run's dataset: it may write their names again.
	libs = j.launch(t)
	if err := write("run", 8); err != nil {
		t.Fatalf("a run from the beginning writing an earlier run's name: %v", err)
	}
	j.finalize(t, libs)
	j.expectRestart(t, "run", 8)
}

// Output datasets do not push the newest checkpoint out of the caches:
// it is the one a restart needs, though newer outputs fill the cache.
func TestOutputsKeepTheCheckpoint(t *testing.T) {
	j := newJob(t, 2, nil)
	ctx := context.Background()
	libs := j.launch(t)
	j.checkpoint(t, libs, 1)
	for i := range 3 {
		j.each(t, func(r int) error {
			if err := libs[r].StartOutput(ctx, "SCR_Start_output", fmt.Sprint("output.", i), FlagOutput); err != nil {
				return err
			}
			p, _ := libs[r].RouteFile(fmt.Sprintf("output.%d/rank_%d", i, r))
			os.WriteFile(p, content(r, 100+i), 0o600)
			_, err := libs[r].CompleteOutput(ctx, "SCR_Complete_output", true, true)
			return err
		})
	}
	// No Finalize: it would flush the checkpoint to the prefix.
	for _, l := range libs {
		l.Close()
	}
	libs = j.launch(t)
	if name, step := j.restart(t, libs, false); name != "scr.dataset.1" || step != 1 {
		t.Fatalf("after three outputs: restarted from %q step %d, want scr.dataset.1 from the caches", name, step)
	}
	j.finalize(t, libs)
}

// A dataset in which no rank routed a file is neither committed nor
// flushed nor recorded (the C layer's fast path): only the ids it took
// are, in the index on the prefix after the next dataset with files, or
// at Finalize.
func TestEmptyDatasetsAreNotRecorded(t *testing.T) {
	j := newJob(t, 2, nil)
	libs := j.launch(t)
	ctx := context.Background()
	onDisk := func() Index {
		t.Helper()
		b, err := os.ReadFile(IndexFile(j.prefix))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		x, err := DecodeIndex(b)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	empty := func(name string, flags int, valid bool) {
		t.Helper()
		j.each(t, func(r int) error {
			if err := libs[r].StartOutput(ctx, "SCR_Start_output", name, flags); err != nil {
				return err
			}
			ok, err := libs[r].CompleteOutput(ctx, "SCR_Complete_output", valid, false)
			if err == nil && ok != valid {
				err = fmt.Errorf("an empty dataset, valid %v: Complete_output said %v", valid, ok)
			}
			return err
		})
	}
	empty("empty.0", 0, true)
	empty("empty.2", FlagOutput, true)
	empty("empty.2", FlagOutput, true) // nothing holds it: its name is free
	empty("bad", FlagOutput, false)
	if x := onDisk(); x.LastID != 0 {
		t.Errorf("the index on the prefix changed at once: %+v", x)
	}
	if x := libs[1].index; len(x.Datasets) != 0 || x.LastID != 4 {
		t.Errorf("rank 1's index after 4 empty datasets: %+v, want no dataset and the last id 4", x)
	}
	j.checkpoint(t, libs, 1)
	if x := onDisk(); x.LastID != 5 || len(x.Datasets) != 1 {
		t.Errorf("after a checkpoint, the index on the prefix is %+v, want the checkpoint with id 5", x)
	}
	empty("last", 0, true)
	j.finalize(t, libs)
	if x := onDisk(); x.LastID != 6 {
		t.Errorf("after Finalize, the index on the prefix has the last id %d, want 6", x.LastID)
	}
}

// CKPT_CACHE_DURABILITY=process writes the cache without syncing; a value
// it does not know fails SCR_Init, naming it.
func TestCacheDurability(t *testing.T) {
	j := newJob(t, 1, map[string]string{"CKPT_CACHE_DURABILITY": "process"})
	libs := j.launch(t)
	j.checkpoint(t, libs, 1)
	j.finalize(t, libs)

	bad := newJob(t, 1, map[string]string{"CKPT_CACHE_DURABILITY": "fast"})
	_, err := Open(context.Background(), Setup{Rank: 0, Size: 1, Params: NewParams(envOf(bad.env)), Cwd: bad.prefix})
	if err == nil || !strings.Contains(err.Error(), `CKPT_CACHE_DURABILITY="fast"`) {
		t.Errorf("Open with CKPT_CACHE_DURABILITY=fast: %v, want an error naming it", err)
	}
}

// Writing again the name of the checkpoint a run restarted from keeps
// that checkpoint until the new one is committed: a run that finds its
// new one invalid, or dies writing it, restarts from the old one again.
// Once the new one is committed the old one is gone from every tier and
// the prefix.
func TestNameReuseKeepsTheOldUntilCommitted(t *testing.T) {
	j := newJob(t, 2, map[string]string{"SCR_FLUSH": "1"})
	ctx := context.Background()
	// write starts dataset "ck" on every rank and writes step's files;
	// complete ends it with valid, or not at all (the run dies).
	write := func(libs []*Lib, step int, complete, valid bool) {
		t.Helper()
		j.each(t, func(r int) error {
			l := libs[r]
			if err := l.StartOutput(ctx, "SCR_Start_output", "ck", FlagCheckpoint); err != nil {
				return err
			}
			p, err := l.RouteFile(fmt.Sprintf("ckpt.%d/rank_%d.ckpt", step, r))
			if err != nil {
				return err
			}
			if err := os.WriteFile(p, content(r, step), 0o600); err != nil {
				return err
			}
			if !complete {
				return nil
			}
			ok, err := l.CompleteOutput(ctx, "SCR_Complete_output", valid, true)
			if err == nil && ok != valid {
				err = fmt.Errorf("rank %d: Complete_output(%v) = %v", r, valid, ok)
			}
			return err
		})
	}
	die := func(libs []*Lib) {
		for _, l := range libs {
			l.Close()
		}
	}
	libs := j.launch(t)
	write(libs, 1, true, true)
	j.finalize(t, libs)
	plain := filepath.Join(j.prefix, "ckpt.1", "rank_0.ckpt")
	if _, err := os.Stat(plain); err != nil {
		t.Fatalf("the flushed checkpoint's plain file: %v", err)
	}

	libs = j.launch(t)
	if name, step := j.restart(t, libs, false); name != "ck" || step != 1 {
		t.Fatalf("restarted from %q step %d, want ck step 1", name, step)
	}
	write(libs, 2, true, false)
	die(libs)

	libs = j.launch(t)
	if name, step := j.restart(t, libs, false); name != "ck" || step != 1 {
		t.Fatalf("after an invalid rewrite: restarted from %q step %d, want ck step 1", name, step)
	}
	write(libs, 3, false, false)
	die(libs)

	libs = j.launch(t)
	if name, step := j.restart(t, libs, false); name != "ck" || step != 1 {
		t.Fatalf("after a run died rewriting it: restarted from %q step %d, want ck step 1", name, step)
	}
	write(libs, 4, true, true)
	e := libs[0].index.Find("ck")
	if e == nil || e.Object == "" {
		t.Fatalf("the rewritten dataset's entry: %+v, want an object name of its own", e)
	}
	if _, err := libs[0].cache.Stat(ctx, cachetier.ManifestObject(Encode("ck"))); err == nil {
		t.Errorf("the old ck is still in rank 0's cache after the new one committed")
	}
	if ok, _ := sharedtier.Exists(ctx, libs[0].eng.Shared, Encode("ck")); ok {
		t.Errorf("the old ck is still on the prefix after the new one committed")
	}
	if _, err := os.Stat(plain); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the old ck's plain file: %v, want it removed", err)
	}
	if _, err := os.Stat(filepath.Join(j.prefix, "ckpt.4", "rank_1.ckpt")); err != nil {
		t.Errorf("the new ck's plain file: %v", err)
	}
	j.finalize(t, libs)
	j.expectRestart(t, "ck", 4)
}

// NameOf finds a dataset's name from its object name: through the index,
// else by undoing Encode and ObjectFor's suffix.
func TestNameOf(t *testing.T) {
	x := Index{Datasets: []Entry{{ID: 7, Name: "a/b", Object: ObjectFor("a/b", 7)}, {ID: 8, Name: ".c"}}}
	for obj, want := range map[string]string{
		ObjectFor("a/b", 7): "a/b",
		Encode(".c"):        ".c",
		ObjectFor("x/y", 3): "x/y",
		Encode("p%231"):     "p%231",
		"plain":             "plain",
	} {
		if got := x.NameOf(obj); got != want {
			t.Errorf("NameOf(%q) = %q, want %q", obj, got, want)
		}
	}
}
