package demo

import (
	"math"

	"github.com/ckpt/ckpt/internal/launch"
)

// InRun is the work of a run measured in the run itself rather than by the
// failure-free reference: the job's start (its first launch to the moment
// rank 0 began computing) plus the job's steps at the mean step time rank
// 0 measured while no flush ran (flushstats.StepSeconds; steps that took a
// checkpoint excluded). The reference runs minutes away from the run, and
// on a shared machine the job's speed drifts by more than the errors being
// measured (references of one seed 7.8 s before and 12.1 s after its runs);
// the run's own steps measure the speed of the moments the run ran. What
// it leaves out is the per-step cost of ckpt's runtime (a decision round
// about once a second), which a step measured in the run includes.
type InRun struct {
	Start       float64 // seconds from the first launch to the start of computing
	StepSeconds float64 // mean step measured in the run
	Work        float64 // Start + steps × StepSeconds; NaN if either is unknown
}

// WorkInRun is the in-run work of a job of steps steps that ran attempts,
// with the mean step measured in the run. The start is the first attempt
// that started computing from scratch: its launch to the moment rank 0
// began (a failure can kill the first launch before that moment).
func WorkInRun(steps int, attempts []launch.Attempt, step float64) InRun {
	w := InRun{Start: math.NaN(), StepSeconds: step, Work: math.NaN()}
	for _, a := range attempts {
		if a.Restored == "none" && a.RestoredAt > a.Start {
			w.Start = (a.RestoredAt - a.Start).Seconds()
			break
		}
	}
	if steps > 0 && step > 0 && w.Start >= 0 {
		w.Work = w.Start + float64(steps)*step
	}
	return w
}
