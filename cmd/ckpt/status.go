package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ckpt/ckpt/internal/inspect"
	"github.com/ckpt/ckpt/internal/jobdir"
)

// jobFlags name the job a command acts on: --job NAME under the default
// root, or --cache-root DIR for a job started with --cache-root.
type jobFlags struct {
	job, root *string
}

func addJobFlags(c *cobra.Command) *jobFlags {
	return &jobFlags{
		job:  c.Flags().String("job", "", "the job's name (shown by 'ckpt run' as it starts; 'ckpt ls' lists the jobs)"),
		root: c.Flags().String("cache-root", "", "the job's directory, for a job started with --cache-root"),
	}
}

// findHolder is find(true), and whether the job runs and as which PID.
func (f *jobFlags) findHolder() (d jobdir.Dir, pid int, running bool, err error) {
	if d, err = f.find(true); err != nil {
		return d, 0, false, err
	}
	pid, running, err = d.Holder()
	return d, pid, running, err
}

// find resolves the job. Without --job or --cache-root it is the one job
// under the default root (the one running job, if preferRunning and one
// runs); several, or none, is an error that lists them.
func (f *jobFlags) find(preferRunning bool) (jobdir.Dir, error) {
	switch {
	case *f.job != "" && *f.root != "":
		return jobdir.Dir{}, usagef("--job %s and --cache-root %s: give one", *f.job, *f.root)
	case *f.root != "":
		st, err := os.Stat(*f.root)
		if err != nil {
			return jobdir.Dir{}, usagef("--cache-root %s: %v", *f.root, err)
		}
		if !st.IsDir() {
			return jobdir.Dir{}, usagef("--cache-root %s: not a directory", *f.root)
		}
		return jobdir.At(*f.root), nil
	case *f.job != "":
		root := jobdir.DefaultRoot()
		d, err := jobdir.Named(root, *f.job)
		if err != nil {
			return d, usagef("--job: %v", err)
		}
		if !d.Exists() {
			return d, usagef("--job %s: no such job in %s ('ckpt ls' lists the jobs)", *f.job, root)
		}
		return d, nil
	}
	root := jobdir.DefaultRoot()
	d, err := jobdir.Only(root, preferRunning)
	var ae *jobdir.AmbiguousError
	switch {
	case errors.Is(err, jobdir.ErrNoJob):
		return d, usagef("no jobs in %s: name one with --job NAME or --cache-root DIR", root)
	case errors.As(err, &ae):
		return d, usagef("name the job with --job: %s holds %s", root, strings.Join(ae.Names, ", "))
	}
	return d, err
}

func newHaltCmd() *cobra.Command {
	c := leaf("halt [--job NAME | --cache-root DIR]", "Ask a job started by 'ckpt run' to stop cleanly after its next checkpoint", haltLong, "")
	jf := addJobFlags(c)
	c.RunE = func(c *cobra.Command, _ []string) error {
		d, pid, running, err := jf.findHolder()
		if err != nil {
			return err
		}
		if !running {
			return fmt.Errorf("job %s is not running: nothing to halt (its checkpoints stay in %s for its next 'ckpt run')", d.Name, d.Path)
		}
		if err := d.Request(jobdir.HaltFile); err != nil {
			return err
		}
		fmt.Fprintf(c.OutOrStdout(), "halt requested: job %s (pid %d) stops after its next checkpoint\n", d.Name, pid)
		return nil
	}
	return c
}

const haltLong = `Asks a running job to halt: it takes one more checkpoint at its next decision
round and stops, and its caches stay for a later 'ckpt run' of the same job
to resume from. Name the job by --job (its name, shown by 'ckpt run' as it
starts and by 'ckpt ls'), or by --cache-root if it was started with one;
without either, the one job running is meant.

A job that is not running is refused: there is nothing to halt, and a
request left for it would halt its next run instead.

  ckpt halt --job himeno-3f2a9c01d4e5`

func newStatusCmd() *cobra.Command {
	c := leaf("status [--job NAME | --cache-root DIR] [--json]", "Show what a job started by 'ckpt run' is doing: attempt, step, last checkpoint, failures", statusLong, "")
	f := &statusFlags{}
	f.jf = addJobFlags(c)
	f.asJSON = jsonFlag(c)
	return runs(c, f)
}

// statusFlags are the flags of the command newStatusCmd builds.
type statusFlags struct {
	jf     *jobFlags
	asJSON *bool
}

func (f *statusFlags) run(c *cobra.Command) error {
	d, pid, running, err := f.jf.findHolder()
	if err != nil {
		return err
	}
	st, stErr := d.ReadStatus()
	haveStatus := stErr == nil
	if stErr != nil && !os.IsNotExist(stErr) {
		return stErr
	}
	w := c.OutOrStdout()
	if *f.asJSON {
		var pidV, step, restored, last, flush, updated any
		if running {
			pidV = pid
		}
		if haveStatus {
			updated = st.Updated.Format(time.RFC3339Nano)
			if st.Step != nil {
				step = *st.Step
			}
			if st.Restored != nil {
				restored = st.Restored
			}
			if st.LastCheckpoint != nil {
				last = st.LastCheckpoint
			}
			if st.Flush != nil {
				flush = json.RawMessage(st.Flush)
			}
		}
		state := st.State
		if !haveStatus {
			state = "unknown"
		}
		return writeJSON(w, object{
			{"job", d.Name}, {"dir", d.Path}, {"running", running}, {"pid", pidV},
			{"state", state}, {"attempt", st.Attempt}, {"incarnation", st.Incarnation},
			{"interval", st.Interval}, {"step", step}, {"last_checkpoint", last},
			{"checkpoints", st.Checkpoints}, {"failures", st.Failures}, {"last_failure", st.LastFailure},
			{"restored", restored}, {"halt_requested", st.HaltRequested},
			{"checkpoint_requests", st.CheckpointRequests}, {"flush", flush}, {"updated", updated},
		})
	}
	t := newTable(w)
	if running {
		t.row("job", d.Name, fmt.Sprintf("(running, pid %d)", pid))
	} else {
		t.row("job", d.Name, "(not running: no process holds its lock)")
	}
	t.row("dir", d.Path)
	if !haveStatus {
		t.row("status", "none written yet")
		return t.flush()
	}
	if running {
		t.row("state", statusLine(st))
	} else {
		t.row("last state", statusLine(st), "(as its run left it, "+st.Updated.Format(time.RFC3339)+")")
	}
	t.row("interval", st.Interval)
	if r := st.Restored; r != nil {
		if r.Source == "none" {
			t.row("restored", "nothing: started from scratch")
		} else {
			t.row("restored", fmt.Sprintf("%s from %s", r.Checkpoint, r.Source))
		}
	}
	if lc := st.LastCheckpoint; lc != nil {
		step := "step unknown (taken by the application itself)"
		if lc.Step != nil {
			step = fmt.Sprintf("step %d", *lc.Step)
		}
		t.row("last checkpoint", fmt.Sprintf("%s at %s, level %s (%s), %s ago", lc.Name, step, lc.Level, lc.Redundancy,
			time.Since(lc.Committed).Round(100*time.Millisecond)))
	} else {
		t.row("last checkpoint", "none yet")
	}
	t.row("checkpoints", fmt.Sprintf("%d committed", st.Checkpoints), fmt.Sprintf("(%d taken on request)", st.CheckpointRequests))
	failures := fmt.Sprint(st.Failures)
	if st.LastFailure != "" {
		failures += " (last: " + st.LastFailure + ")"
	}
	t.row("failures", failures)
	if st.HaltRequested && running {
		t.row("halt", "requested: stops after its next checkpoint")
	}
	return t.flush()
}

const statusLong = `Shows what a job is doing, from the status its 'ckpt run' keeps in the job's
directory: whether it runs (and its PID), its attempt (1, then one more for
every relaunch after a failure), the step of its last decision round, its
last committed checkpoint (name, the step that called for it, its level and
redundancy), the failures so far and where the current attempt restored
from. Of a job that is not running it shows the last status its run left.
What the runner does not know is left out, never guessed: a checkpoint the
application took of its own accord has no step.

Without --job or --cache-root it shows the one job running (or the one job
there is).

  ckpt status --job himeno-3f2a9c01d4e5
  ckpt status --json`

func newCheckpointCmd() *cobra.Command {
	c := leaf("checkpoint [--job NAME | --cache-root DIR] [--wait DURATION]", "Ask a job started by 'ckpt run' to checkpoint now, and wait for it", checkpointLong, "")
	f := &checkpointFlags{}
	f.jf = addJobFlags(c)
	f.wait = durationFlag(c.Flags(), "wait", "how long to wait for the checkpoint to commit (default 2m; 0: only ask)")
	f.asJSON = jsonFlag(c)
	return runs(c, f)
}

// checkpointFlags are the flags of the command newCheckpointCmd builds.
type checkpointFlags struct {
	jf     *jobFlags
	wait   *quantity
	asJSON *bool
}

func (f *checkpointFlags) run(c *cobra.Command) error {
	limit := 2 * time.Minute
	if f.wait.set {
		if f.wait.v < 0 {
			return usagef("--wait %gs: need ≥ 0", f.wait.v)
		}
		limit = time.Duration(f.wait.v * float64(time.Second))
	}
	d, pid, running, err := f.jf.findHolder()
	if err != nil {
		return err
	}
	if !running {
		return fmt.Errorf("job %s is not running: nothing to checkpoint", d.Name)
	}
	before, _ := d.ReadStatus()
	if before.Interval == "none" {
		return fmt.Errorf("job %s checkpoints never (--interval none): it holds no decision round to take a checkpoint at", d.Name)
	}
	if err := d.Request(jobdir.CheckpointFile); err != nil {
		return err
	}
	w := c.OutOrStdout()
	report := func(lc *jobdir.Checkpoint) error {
		if *f.asJSON {
			var name, step any
			if lc != nil {
				name = lc.Name
				if lc.Step != nil {
					step = *lc.Step
				}
			}
			return writeJSON(w, object{{"job", d.Name}, {"pid", pid}, {"requested", true}, {"checkpoint", name}, {"step", step}})
		}
		if lc == nil {
			fmt.Fprintf(w, "checkpoint requested: job %s (pid %d) takes one at its next decision round\n", d.Name, pid)
		} else if lc.Step != nil {
			fmt.Fprintf(w, "checkpoint %s committed at step %d (job %s)\n", lc.Name, *lc.Step, d.Name)
		} else {
			fmt.Fprintf(w, "checkpoint %s committed (job %s)\n", lc.Name, d.Name)
		}
		return nil
	}
	if limit == 0 {
		return report(nil)
	}
	lc, err := d.WaitCommit(c.Context(), before.Checkpoints, limit)
	switch {
	case errors.Is(err, jobdir.ErrEnded):
		return fmt.Errorf("job %s ended before it committed a checkpoint", d.Name)
	case errors.Is(err, jobdir.ErrNoCommit):
		return fmt.Errorf("job %s committed no checkpoint within %v; the request stands ('ckpt status --job %s' shows it)", d.Name, limit, d.Name)
	case err != nil:
		return err
	}
	return report(lc)
}

const checkpointLong = `Asks a running job to take a checkpoint at its next decision round (the step
at which its ranks next agree whether to checkpoint: within a second or so
with --interval auto or a time, at the next multiple with Nsteps), without
stopping, and waits until the job commits its next checkpoint (at most
--wait; 0 only asks). A job with --interval none holds no decision rounds
and is refused.

  ckpt checkpoint --job himeno-3f2a9c01d4e5`

// listJobs lists the jobs in the default root: `ckpt ls` with no job named.
func listJobs(c *cobra.Command, asJSON bool) error {
	root := jobdir.DefaultRoot()
	rows, err := jobdir.Summarize(root, func(dir string) (int, string, error) {
		caches, err := inspect.OpenCacheRoot(dir)
		if err != nil {
			return 0, "", err
		}
		list, err := inspect.ListCheckpoints(c.Context(), inspect.Tiers{Caches: caches})
		if len(list) == 0 {
			return len(list), "", err
		}
		return len(list), list[0].Name, err
	})
	if err != nil {
		return err
	}
	w := c.OutOrStdout()
	if asJSON {
		items := []object{}
		for _, r := range rows {
			var pid, newest, spec, lerr any
			if r.Running {
				pid = r.PID
			}
			if r.Newest != "" {
				newest = r.Newest
			}
			if r.Spec != nil {
				spec = r.Spec
			}
			if r.CountErr != nil {
				lerr = r.CountErr.Error()
			}
			items = append(items, object{{"job", r.Name}, {"dir", r.Path}, {"running", r.Running}, {"pid", pid},
				{"checkpoints", r.Checkpoints}, {"newest", newest}, {"spec", spec}, {"error", lerr}})
		}
		return writeJSON(w, object{{"root", root}, {"jobs", items}})
	}
	if len(rows) == 0 {
		fmt.Fprintf(w, "no jobs in %s\n", root)
		return nil
	}
	t := newTable(w)
	t.row("JOB", "STATE", "CHECKPOINTS", "NEWEST", "CONFIGURATION")
	for _, r := range rows {
		state := "stopped"
		if r.Running {
			state = fmt.Sprintf("running (pid %d)", r.PID)
		}
		n := fmt.Sprint(r.Checkpoints)
		if r.CountErr != nil {
			n = "? (" + r.CountErr.Error() + ")"
		}
		newest, conf := r.Newest, ""
		if newest == "" {
			newest = "-"
		}
		if r.Spec != nil {
			conf = r.Spec.String()
		}
		t.row(r.Name, state, n, newest, conf)
	}
	if err := t.flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "(in %s; 'ckpt ls --job NAME' lists a job's checkpoints)\n", root)
	return nil
}
