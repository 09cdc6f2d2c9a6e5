package model

import (
	"fmt"
	"math"
)

// The Markov models of SPEC-markov §4 and §5 give a rate: the expected
// time of a top-level period, repeated for ever. A real job is finite. It
// takes a checkpoint after every interval of computation but not after
// its last step, so its last interval is partial and has no checkpoint,
// and it flushes ⌊checkpoints / N⌋ times, not work / (N·t) times. The
// steady-state efficiency charges the part of a period the job never
// reaches: for a job of a few periods whose top-level checkpoint is
// expensive (a blocking flush), some percent of its efficiency, always in
// the same direction for a given length. EvaluateJob is the same models
// summed over the job's actual segments instead.

// Job is a finite job as the Markov models see it.
type Job struct {
	// Work is the job's computation in seconds. A checkpoint follows every
	// Interval of it (the schedule's), except at the end: the job takes
	// ⌈Work/Interval⌉ − 1 checkpoints, and its last interval, Work less
	// those intervals, is followed by none.
	Work float64
	// Lead is time before the computation starts (a launch's start-up),
	// exposed to failures like computation and lost with the first
	// interval: it lengthens the first segment and takes no checkpoint.
	Lead float64
}

// JobResult is the expected behaviour of a finite job.
type JobResult struct {
	// Seconds is the expected wall-clock time from the job's start to the
	// end of its computation.
	Seconds float64
	// Efficiency is (Lead + Work) / Seconds: the steady-state models'
	// ideal time over expected time, for this job.
	Efficiency float64
	// Checkpoints is ⌈Work/Interval⌉ − 1, the checkpoints the job takes,
	// and Flushes ⌊Checkpoints / N⌋ of them are of the top level
	// (N = Schedule.Segments()).
	Checkpoints, Flushes int
}

// JobSegments is the number of segments of a job of work seconds of
// computation at interval t: ⌈work/t⌉, at least 1. A sliver of 1e-9 t
// past a multiple of t is rounding, not one more segment.
func JobSegments(work, t float64) int {
	k := math.Ceil(work / t)
	if k > 1 && work-(k-1)*t <= 1e-9*t {
		k--
	}
	if k < 1 {
		k = 1
	}
	return int(k)
}

// maxJobSegments bounds the segments of a job (its blocks are built one
// period at a time).
const maxJobSegments = 1 << 22

// jobSegment is one segment of a job: compute seconds, then a checkpoint
// of cost (0 for the job's last segment).
type jobSegment struct {
	compute, cost float64
}

// EvaluateJob is the expected time of a finite job under the scheme and
// the schedule, from the Markov models' blocks (SPEC-markov §2–§5) laid
// over the job's actual segments: full top-level periods, then the
// partial period the job ends in, whose last segment has no checkpoint.
// Unlike Evaluate it accepts failure rates that are all 0 (a job that met
// no failure): then it is Lead + Work plus the checkpoints' costs, exactly.
// Blocking schemes have one or two levels here, as the non-blocking one.
//
// Blocking (§4): a rollback never crosses a top-level checkpoint, so the
// expected time is the sum over the periods of a[0] of wrap(U, L), each
// period's U built as §4.2 builds U(2, 2) (the first interval unprotected
// at level 1, as Moody et al.'s, unless Options.L1ProtectedFirst; with
// Options.RetryRecovery) from the period's own segments. The job's start
// counts as a checkpoint of every level (§4.1).
//
// Non-blocking (§5): the job's first period, and the partial one when it
// is the only one, start with no copy in flight (type R); every later
// period starts with the previous period's copy in flight, over its first
// m segments, which are slowed by (1 + α) (type N). A level-2 failure in
// those segments loses the copy and redoes the previous period as type R,
// then this one again; one in the period's other segments redoes it as
// type R (§5.3). So, with E_R(k) and I_k, C_k as in §5.4 for period k's
// own segments, E_N(k) = [I.a0 + I.a2 + I.p2 (D2 + E_R(k−1))] / I.p0 +
// C.a0 + C.a2 + C.p2 (D2 + E_R(k)), and the job takes E_R(1) + Σ_{k≥2}
// E_N(k). A copy still in flight when the computation ends costs nothing.
func (s Scheme) EvaluateJob(sched Schedule, job Job) (JobResult, error) {
	if err := s.validateJob(sched, job); err != nil {
		return JobResult{}, err
	}
	n := sched.Segments()
	t := sched.Interval
	S := JobSegments(job.Work, t)
	res := JobResult{Checkpoints: S - 1, Flushes: (S - 1) / n}
	// The job's periods: Flushes full ones of n segments, then the
	// partial one, of 1..n segments, whose last has no checkpoint.
	var periods [][]jobSegment
	last := job.Work - float64(S-1)*t
	for j := 0; j < S; j++ {
		if j%n == 0 {
			periods = append(periods, nil)
		}
		seg := jobSegment{compute: t, cost: s.Cost[0]}
		if (j+1)%n == 0 {
			seg.cost = s.Cost[s.L()-1]
		}
		if j == S-1 {
			seg = jobSegment{compute: last}
		}
		if j == 0 {
			seg.compute += job.Lead
		}
		k := len(periods) - 1
		periods[k] = append(periods[k], seg)
	}
	if s.NonBlocking {
		nb := NonBlocking{Levels: s.Levels, FlushLatency: s.FlushLatency, Alpha: s.Alpha, RetryRecovery: s.Options.RetryRecovery}
		m := nb.IncompleteSegments(t)
		if m > n {
			return JobResult{}, fmt.Errorf("%w: the background copy (flush-latency %g s) spans %d segments of %g s but a period has only %d", ErrInfeasible, s.FlushLatency, m, (1+s.Alpha)*t+s.Cost[0], n)
		}
		res.Seconds = nb.job(periods, m)
	} else {
		res.Seconds = s.blockingJob(periods)
	}
	if math.IsNaN(res.Seconds) || math.IsInf(res.Seconds, 0) {
		res.Seconds = math.Inf(1)
	}
	res.Efficiency = (job.Lead + job.Work) / res.Seconds
	return res, nil
}

// validateJob is Levels.Validate without its total rate > 0, the
// schedule's validation, and the job's.
func (s Scheme) validateJob(sched Schedule, job Job) error {
	if err := s.Levels.validateShape(); err != nil {
		return err
	}
	if s.L() > 2 {
		return &ParamError{Param: "rates", Value: float64(s.L()), Reason: "a finite job is modelled at one or two levels"}
	}
	if s.NonBlocking {
		if s.L() != 2 {
			return &ParamError{Param: "rates", Value: float64(s.L()), Reason: "the non-blocking model has exactly two levels"}
		}
		if err := nonNegative("flush-latency", s.FlushLatency); err != nil {
			return err
		}
		if err := nonNegative("alpha", s.Alpha); err != nil {
			return err
		}
	} else if s.Options.L1ProtectedFirst && s.L() != 2 {
		return &ParamError{Param: "rates", Value: float64(s.L()), Reason: "the L1-protected variant is defined for two levels"}
	}
	if err := sched.validate(s.L()); err != nil {
		return err
	}
	if err := positive("work", job.Work); err != nil {
		return err
	}
	if err := nonNegative("lead", job.Lead); err != nil {
		return err
	}
	if segs := job.Work / sched.Interval; segs > maxJobSegments {
		return &ParamError{Param: "work", Value: job.Work, Reason: fmt.Sprintf("gives %g intervals; at most %d are supported", segs, maxJobSegments)}
	}
	return nil
}

// blockingJob sums a[0] of wrap(U, L) over the periods (SPEC-markov §4.2
// with each period's own segments).
func (s Scheme) blockingJob(periods [][]jobSegment) float64 {
	L, total := s.L(), s.total()
	rL := s.Restart[L-1]
	sum := 0.0
	var memo struct {
		segs []jobSegment
		a0   float64
	}
	for _, p := range periods {
		if memo.segs != nil && sameSegments(memo.segs, p) {
			sum += memo.a0 // the full periods after the first are alike
			continue
		}
		var u block
		if L == 1 {
			u = seg(p[0].compute+p[0].cost, s.Rates, total) // a period is one interval
		} else {
			u = s.blockingU(p, total)
		}
		a0 := wrap(u, L, rL, s.Rates, total).a[0]
		memo.segs, memo.a0 = p, a0
		sum += a0
	}
	return sum
}

// blockingU is U(2, ·) of SPEC-markov §4.2 over a period's segments: the
// first unprotected at level 1 (a level-1 failure there goes back to the
// period's start with R2), or protected with L1ProtectedFirst; the others
// each wrapped at level 1.
func (s Scheme) blockingU(p []jobSegment, total float64) block {
	w1 := func(x jobSegment) block {
		return wrapRetry(seg(x.compute+x.cost, s.Rates, total), 1, s.Restart[0], s.Rates, total, s.Options.RetryRecovery)
	}
	u := seg(p[0].compute+p[0].cost, s.Rates, total)
	if s.Options.L1ProtectedFirst {
		u = w1(p[0])
	}
	for _, x := range p[1:] {
		u = seq(u, w1(x))
	}
	return u
}

func sameSegments(a, b []jobSegment) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// job is the non-blocking model over a job's periods, m segments of each
// period after the first slowed by the previous period's copy (SPEC-markov
// §5.4 with each period's own segments; see Scheme.EvaluateJob).
func (nb NonBlocking) job(periods [][]jobSegment, m int) float64 {
	total := nb.total()
	r1, r2 := nb.Restart[0], nb.Restart[1]
	slow := 1 + nb.Alpha
	w := func(T float64) block {
		return wrapRetry(seg(T, nb.Rates, total), 1, r1, nb.Rates, total, nb.RetryRecovery)
	}
	d2 := r2 // R2 retried until success: (e^{λ r2} − 1)/λ, r2 without failures
	if total > 0 {
		d2 = math.Expm1(total*r2) / total
	}
	// run is the segments p[from:to] in sequence, slowed or not.
	run := func(p []jobSegment, from, to int, slowed bool) block {
		b := identity(2)
		for _, x := range p[from:to] {
			c := x.compute
			if slowed {
				c *= slow
			}
			b = seq(b, w(c+x.cost))
		}
		return b
	}
	typeR := func(p []jobSegment) float64 {
		pr := run(p, 0, len(p), false)
		return (pr.a[0] + pr.a[2] + pr.p[2]*d2) / pr.p[0]
	}
	sum := 0.0
	var memo struct { // the last period's: the full ones from the third on are alike
		segs      []jobSegment
		prevR, eR float64
		eN        float64
	}
	prevR := 0.0
	for k, p := range periods {
		if k > 0 && memo.segs != nil && sameSegments(memo.segs, p) && memo.prevR == prevR {
			sum += memo.eN
			prevR = memo.eR
			continue
		}
		eR := typeR(p)
		if k == 0 {
			sum += eR
			prevR = eR
			continue
		}
		mi := min(m, len(p))
		inc := run(p, 0, mi, true)
		comp := run(p, mi, len(p), false)
		eN := (inc.a[0]+inc.a[2]+inc.p[2]*(d2+prevR))/inc.p[0] +
			comp.a[0] + comp.a[2] + comp.p[2]*(d2+eR)
		memo.segs, memo.prevR, memo.eR, memo.eN = p, prevR, eR, eN
		sum += eN
		prevR = eR
	}
	return sum
}
