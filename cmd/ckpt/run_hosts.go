package main

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/ckpt/ckpt/internal/jobenv"
	"github.com/ckpt/ckpt/internal/launch"
)

// exitTimeLimit is ckpt run's exit status when the job checkpointed and
// halted for its time limit (or was not launched again so near it): not
// finished, to be resumed by the same command, in the next allocation.
const exitTimeLimit = 3

// runTimeLimit is the job's time limit at now: --time-limit, or the Slurm
// allocation's end (SLURM_JOB_END_TIME, else squeue's for SLURM_JOB_ID if
// squeue is on PATH), the earlier of the two; with --halt-before's
// margin. A bad value, or an end too near to run at all, is a usage
// error.
func runTimeLimit(limit, before *quantity, now time.Time, lookup func(string) (string, bool),
	squeue func(jobID string) (time.Time, error)) (launch.TimeLimit, error) {
	if limit.set && limit.v <= 0 {
		return launch.TimeLimit{}, usagef("--time-limit %gs: need a positive duration such as 2h", limit.v)
	}
	if before.set && before.v <= 0 {
		return launch.TimeLimit{}, usagef("--halt-before %gs: need a positive duration such as 60s", before.v)
	}
	end, from, err := jobenv.EndTime(lookup, jobenv.VarSlurmEndTime)
	if err != nil {
		return launch.TimeLimit{}, usageError{err}
	}
	if id, ok := lookup("SLURM_JOB_ID"); end.IsZero() && ok && id != "" && squeue != nil {
		// No end in the environment (Slurm releases that set none,
		// such as Debian 12's 22.05: TestRunInSlurmAllocationHalts...):
		// ask squeue. A squeue that fails leaves the job without an
		// end, as outside an allocation.
		if t, err := squeue(id); err == nil && !t.IsZero() {
			end, from = t, "squeue"
		}
	}
	var l, b time.Duration
	if limit.set {
		l = time.Duration(limit.v * float64(time.Second))
	}
	if before.set {
		b = time.Duration(before.v * float64(time.Second))
	}
	if !limit.set && end.IsZero() && before.set {
		return launch.TimeLimit{}, usagef("--halt-before needs a time limit: --time-limit, or a Slurm allocation's end")
	}
	tl, err := launch.NewTimeLimit(now, l, end, from, b)
	if err != nil {
		return tl, usageError{err}
	}
	return tl, nil
}

// squeueEnd asks Slurm's squeue for a job's end time; an error when
// squeue is not on PATH or fails.
func squeueEnd(jobID string) (time.Time, error) {
	path, err := exec.LookPath("squeue")
	if err != nil {
		return time.Time{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "-h", "-j", jobID, "-o", "%e").Output()
	if err != nil {
		return time.Time{}, fmt.Errorf("squeue -j %s: %w", jobID, err)
	}
	return jobenv.ParseSqueueEnd(string(out), time.Local)
}

// timeLimitEnd is ckpt run's end when the job halted for its time limit:
// exit status 3, saying how to resume.
func timeLimitEnd(tl launch.TimeLimit, res runResult, cacheRoot string) error {
	var b strings.Builder
	what := "halted for the time limit"
	if n := len(res.Attempts); n > 0 && res.Attempts[n-1].Failure != "" {
		what = "stopped for the time limit, not launched again after: " + res.Attempts[n-1].Failure + ";"
	}
	fmt.Fprintf(&b, "%s (%s: the end at %s, halting %s before it)", what, tl.From, tl.Deadline.Format(time.RFC3339), tl.Margin)
	if res.Checkpoint != "" {
		fmt.Fprintf(&b, ": run the same command again (in the next allocation) to resume from checkpoint %s (caches in %s)", res.Checkpoint, cacheRoot)
	} else {
		fmt.Fprintf(&b, ": no checkpoint was taken; the same command starts again from scratch (caches in %s)", cacheRoot)
	}
	return statusError{err: fmt.Errorf("%s", b.String()), status: exitTimeLimit}
}

// excludedJSON is --json's "excluded_nodes": every node left out of a
// launch after its failure, with why and from which launch (an empty
// list, not null, when none was).
func excludedJSON(ex []launch.Exclusion) []launch.Exclusion {
	if ex == nil {
		return []launch.Exclusion{}
	}
	return ex
}

// excludedText is the table's line of the nodes excluded.
func excludedText(ex []launch.Exclusion) string {
	parts := make([]string, len(ex))
	for i, e := range ex {
		parts[i] = fmt.Sprintf("%s (%s, from launch %d", e.Node, e.Reason, e.Launch)
		if e.Readmitted {
			parts[i] += ", re-admitted"
		}
		parts[i] += ")"
	}
	return strings.Join(parts, "; ")
}
